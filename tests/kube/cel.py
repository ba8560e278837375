"""cel: a small evaluator for the subset of CEL that cluster/admission.yaml uses, so that
the tests can run the policy's own expressions against templates and sandboxes.

How faithful it is (cel-spec, langdef.md):
- Syntax: literals (int, string in '' or "", bool, null, lists), identifiers, field
  selection, indexing, calls; the operators ! - * / % + < <= > >= == != in && || ?: with
  CEL's precedence. No maps literals, no uint/double/bytes, no string escapes beyond \\
  and the quote, no comprehension macros but all/exists/exists_one/map/filter.
- Semantics as CEL's where it matters for a policy: selecting a missing field or key is
  an error (a VAP with failurePolicy Fail denies); has(a.b) tests presence without the
  error; && and || are commutative over errors (false && error is false, true || error
  is true, otherwise the error wins); all() and exists() fold the same way; == between
  different types is false (heterogeneous equality); + on mismatched types, < on bools and
  int overflow beyond 64 bits are errors; `in` tests list membership or map keys.
- Not modelled: the type checker a real API server runs when the policy is created
  (against the CRD schemas; dyn() is the identity here), cost limits, and the Kubernetes CEL
  libraries (quantity, regex, url, ...), none of which admission.yaml uses.
"""

import re

__all__ = ["CelError", "evaluate", "compile_expr"]


class CelError(Exception):
    pass


_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>\d+)
    | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:.,()\[\]])
    )""", re.X)


def _tokens(src):
    pos, out = 0, []
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise CelError("syntax error at %r" % src[pos:pos + 20])
        pos = m.end()
        kind = m.lastgroup
        text = m.group(kind)
        if kind == "str":
            text = re.sub(r"\\(.)", r"\1", text[1:-1])
        out.append((kind, text))
    out.append(("end", ""))
    return out


class _Parser:
    """Recursive descent over CEL's grammar; the AST is nested tuples."""

    def __init__(self, src):
        self.t = _tokens(src)
        self.i = 0

    def peek(self, *texts):
        k, v = self.t[self.i]
        return v if (k in ("op", "id") and v in texts) else None

    def take(self, text):
        if self.t[self.i][1] != text or self.t[self.i][0] not in ("op", "id"):
            raise CelError("expected %r, found %r" % (text, self.t[self.i][1]))
        self.i += 1

    def parse(self):
        e = self.expr()
        if self.t[self.i][0] != "end":
            raise CelError("unexpected %r" % self.t[self.i][1])
        return e

    def expr(self):
        c = self.binary(0)
        if self.peek("?"):
            self.take("?")
            a = self.binary(0)
            self.take(":")
            b = self.expr()
            return ("?", c, a, b)
        return c

    LEVELS = [("||",), ("&&",), ("<", "<=", ">", ">=", "==", "!=", "in"), ("+", "-"),
              ("*", "/", "%")]

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            op = self.peek(*self.LEVELS[level])
            if not op:
                return left
            self.i += 1
            left = (op, left, self.binary(level + 1))

    def unary(self):
        if self.peek("!"):
            self.i += 1
            return ("!", self.unary())
        if self.peek("-"):
            self.i += 1
            return ("neg", self.unary())
        return self.member()

    def args(self):
        self.take("(")
        out = []
        if not self.peek(")"):
            out.append(self.expr())
            while self.peek(","):
                self.i += 1
                out.append(self.expr())
        self.take(")")
        return out

    def member(self):
        e = self.primary()
        while True:
            if self.peek("."):
                self.i += 1
                kind, name = self.t[self.i]
                if kind != "id":
                    raise CelError("expected a field name after '.'")
                self.i += 1
                if self.peek("("):
                    e = ("call", name, e, self.args())
                else:
                    e = ("sel", e, name)
            elif self.peek("["):
                self.i += 1
                idx = self.expr()
                self.take("]")
                e = ("idx", e, idx)
            else:
                return e

    def primary(self):
        kind, v = self.t[self.i]
        self.i += 1
        if kind == "num":
            return ("lit", int(v))
        if kind == "str":
            return ("lit", v)
        if kind == "id":
            if v in ("true", "false"):
                return ("lit", v == "true")
            if v == "null":
                return ("lit", None)
            if self.peek("("):
                return ("call", v, None, self.args())
            return ("id", v)
        if v == "(":
            e = self.expr()
            self.take(")")
            return e
        if v == "[":
            items = []
            if not self.peek("]"):
                items.append(self.expr())
                while self.peek(","):
                    self.i += 1
                    items.append(self.expr())
            self.take("]")
            return ("list", items)
        raise CelError("unexpected %r" % v)


def compile_expr(src):
    return _Parser(src).parse()


def _type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    if v is None:
        return "null"
    return type(v).__name__


def _eq(a, b):
    if _type(a) != _type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    return a == b


def _int(v):
    if not -(1 << 63) <= v < (1 << 63):
        raise CelError("integer overflow")
    return v


def _try(f):
    """The value of f(), or the CelError it raised (for the commutative operators)."""
    try:
        return f()
    except CelError as e:
        return e


class _Env:
    def __init__(self, names):
        self.names = names

    def bind(self, name, value):
        names = dict(self.names)
        names[name] = value
        return _Env(names)


def _select(obj, name):
    if not isinstance(obj, dict):
        raise CelError("no such field %r on a %s" % (name, _type(obj)))
    if name not in obj:
        raise CelError("no such key: %s" % name)
    return obj[name]


def _fold_and(values):
    err = None
    for v in values:
        if isinstance(v, CelError):
            err = err or v
        elif not isinstance(v, bool):
            raise CelError("no such overload: && on %s" % _type(v))
        elif not v:
            return False
    if err:
        raise err
    return True


def _fold_or(values):
    err = None
    for v in values:
        if isinstance(v, CelError):
            err = err or v
        elif not isinstance(v, bool):
            raise CelError("no such overload: || on %s" % _type(v))
        elif v:
            return True
    if err:
        raise err
    return False


def _ev(n, env):
    op = n[0]
    if op == "lit":
        return n[1]
    if op == "id":
        if n[1] not in env.names:
            raise CelError("undeclared reference to %r" % n[1])
        v = env.names[n[1]]
        return v() if callable(v) else v
    if op == "list":
        return [_ev(x, env) for x in n[1]]
    if op == "sel":
        return _select(_ev(n[1], env), n[2])
    if op == "idx":
        obj, key = _ev(n[1], env), _ev(n[2], env)
        if isinstance(obj, list) and _type(key) == "int":
            if not 0 <= key < len(obj):
                raise CelError("index out of range: %d" % key)
            return obj[key]
        if isinstance(obj, dict):
            if key not in obj:
                raise CelError("no such key: %s" % key)
            return obj[key]
        raise CelError("no such overload: index on %s" % _type(obj))
    if op == "&&":
        return _fold_and([_try(lambda: _ev(n[1], env)), _try(lambda: _ev(n[2], env))])
    if op == "||":
        return _fold_or([_try(lambda: _ev(n[1], env)), _try(lambda: _ev(n[2], env))])
    if op == "!":
        v = _ev(n[1], env)
        if not isinstance(v, bool):
            raise CelError("no such overload: ! on %s" % _type(v))
        return not v
    if op == "neg":
        v = _ev(n[1], env)
        if _type(v) != "int":
            raise CelError("no such overload: - on %s" % _type(v))
        return _int(-v)
    if op == "?":
        c = _ev(n[1], env)
        if not isinstance(c, bool):
            raise CelError("no such overload: ?: on %s" % _type(c))
        return _ev(n[2] if c else n[3], env)
    if op == "call":
        return _call(n, env)
    a, b = _ev(n[1], env), _ev(n[2], env)
    if op == "==":
        return _eq(a, b)
    if op == "!=":
        return not _eq(a, b)
    if op == "in":
        if isinstance(b, list):
            return any(_eq(a, x) for x in b)
        if isinstance(b, dict):
            return any(_eq(a, k) for k in b)
        raise CelError("no such overload: in on %s" % _type(b))
    ta, tb = _type(a), _type(b)
    if op == "+":
        if ta != tb or ta not in ("int", "string", "list"):
            raise CelError("no such overload: %s + %s" % (ta, tb))
        return _int(a + b) if ta == "int" else a + b
    if op in ("-", "*", "/", "%"):
        if ta != "int" or tb != "int":
            raise CelError("no such overload: %s %s %s" % (ta, op, tb))
        if op in ("/", "%") and b == 0:
            raise CelError("division by zero")
        if op == "-":
            return _int(a - b)
        if op == "*":
            return _int(a * b)
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # truncating, as CEL
        return q if op == "/" else a - q * b
    if op in ("<", "<=", ">", ">="):
        if ta != tb or ta not in ("int", "string"):
            raise CelError("no such overload: %s %s %s" % (ta, op, tb))
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    raise CelError("unknown operator %r" % op)


def _call(n, env):
    _, name, target, args = n
    if target is None and name == "has":
        # has(e.f): the presence of f on e's value, without selecting it.
        if len(args) != 1 or args[0][0] != "sel":
            raise CelError("has() needs a field selection")
        obj = _ev(args[0][1], env)
        if not isinstance(obj, dict):
            raise CelError("has() on a %s" % _type(obj))
        return args[0][2] in obj
    if target is not None and name in ("all", "exists", "exists_one", "map", "filter"):
        if len(args) != 2 or args[0][0] != "id":
            raise CelError("%s() needs a variable and an expression" % name)
        rng = _ev(target, env)
        items = list(rng) if isinstance(rng, (list, dict)) else None
        if items is None:
            raise CelError("%s() on a %s" % (name, _type(rng)))
        var, body = args[0][1], args[1]
        results = [_try(lambda x=x: _ev(body, env.bind(var, x))) for x in items]
        if name == "all":
            return _fold_and(results)
        if name == "exists":
            return _fold_or(results)
        for r in results:
            if isinstance(r, CelError):
                raise r
        if name == "exists_one":
            return sum(1 for r in results if r is True) == 1
        if name == "map":
            return results
        return [x for x, r in zip(items, results) if r is True]
    vals = [_ev(a, env) for a in args]
    recv = _ev(target, env) if target is not None else None
    if name == "dyn" and target is None and len(vals) == 1:
        return vals[0]      # a type conversion for the checker only
    if name == "size":
        x = recv if target is not None else (vals[0] if len(vals) == 1 else None)
        if _type(x) not in ("string", "list", "map"):
            raise CelError("no such overload: size(%s)" % _type(x))
        return len(x)
    if name in ("startsWith", "endsWith", "contains") and target is not None:
        if _type(recv) != "string" or len(vals) != 1 or _type(vals[0]) != "string":
            raise CelError("no such overload: %s" % name)
        return {"startsWith": recv.startswith, "endsWith": recv.endswith,
                "contains": lambda s: s in recv}[name](vals[0])
    raise CelError("unknown function %r" % name)


def evaluate(src, names):
    """Evaluates CEL source with the top-level names given; raises CelError."""
    return _ev(compile_expr(src) if isinstance(src, str) else src, _Env(names))
