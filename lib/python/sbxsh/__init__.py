"""sbxsh for Python: run command lines in a session's sandbox, routed as sbxsh routes them.

    from sbxsh import Sandbox

    with Sandbox(cwd="/workspaces/my-repo", session="task-42") as sb:
        r = sb.execute("pytest -q", timeout=600)
        print(r["exit_code"], r["output"])
        for stream, text in sb.stream("make -j2"):
            print(stream, text, end="")

Pure Python over ctypes: every call goes to libsbxsh (sbxsh.h, libsbxsh(3)), which runs each
line exactly as `sbxsh -c LINE` from the sandbox's cwd: each part routed to the host or the
sandbox, the code synced both ways, bash's exit status. Each line is a shell of its own (a
`cd` or a variable does not carry to the next line; files do). docs/library.md is the guide.

The library is found in this order: the `library` argument, the SBXSH_LIBRARY environment
variable (a path), the directory `make install` wrote below, then the linker's search path.
"""

import codecs
import ctypes
import ctypes.util
import json
import os
import queue
import threading

__all__ = ["Sandbox", "Run", "SbxshError", "ConfigError", "ReleasedError", "library_version"]

# Set by `make install` to the directory it put libsbxsh.so.1 in.
_LIBDIR = None
_SOVERSION = 1

_OUTPUT, _STDOUT, _STDERR = 0, 1, 2
_NAMES = {_STDOUT: "stdout", _STDERR: "stderr"}

# sbxsh_code (sbxsh.h)
E_INVALID, E_CONFIG, E_RELEASED, E_SYSTEM, E_SBXSH = 1, 2, 3, 4, 5


class SbxshError(Exception):
    """A libsbxsh error: .code is its sbxsh_code, str() its message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class ConfigError(SbxshError):
    """sbxsh refused the configuration (code directories, session name, backend, ...)."""


class ReleasedError(SbxshError):
    """The sandbox's session was released: make a new Sandbox."""


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 1024)]


_OUTPUT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                              ctypes.c_size_t)

_lib = None
_lib_lock = threading.Lock()


def _declare(lib):
    p, i, s, u64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64
    e = ctypes.POINTER(_Err)
    sigs = {
        "sbxsh_version": (s, []),
        "sbxsh_free": (None, [p]),
        "sbxsh_options_new": (p, []),
        "sbxsh_options_free": (None, [p]),
        "sbxsh_options_add_code_dir": (i, [p, s, e]),
        "sbxsh_options_set_cwd": (i, [p, s, e]),
        "sbxsh_options_set_session": (i, [p, s, e]),
        "sbxsh_options_set_backend": (i, [p, s, e]),
        "sbxsh_options_forward_env": (i, [p, s, e]),
        "sbxsh_options_setenv": (i, [p, s, s, e]),
        "sbxsh_options_set_program": (i, [p, s, e]),
        "sbxsh_open": (i, [p, ctypes.POINTER(p), e]),
        "sbxsh_session": (s, [p]),
        "sbxsh_close": (None, [p]),
        "sbxsh_run_options_new": (p, []),
        "sbxsh_run_options_free": (None, [p]),
        "sbxsh_run_options_set_stdin_buffer": (i, [p, p, ctypes.c_size_t, e]),
        "sbxsh_run_options_set_stdin_fd": (i, [p, i, e]),
        "sbxsh_run_options_set_timeout_ms": (i, [p, u64, e]),
        "sbxsh_run_options_set_capture": (i, [p, ctypes.c_size_t, e]),
        "sbxsh_run_options_set_output": (i, [p, _OUTPUT_FN, p, e]),
        "sbxsh_run_options_set_cancel_fd": (i, [p, i, e]),
        "sbxsh_run": (i, [p, s, p, ctypes.POINTER(p), e]),
        "sbxsh_cancel": (i, [p]),
        "sbxsh_result_exit_code": (i, [p]),
        "sbxsh_result_signal": (i, [p]),
        "sbxsh_result_timed_out": (i, [p]),
        "sbxsh_result_cancelled": (i, [p]),
        "sbxsh_result_data": (p, [p, i, ctypes.POINTER(ctypes.c_size_t)]),
        "sbxsh_result_head_len": (ctypes.c_size_t, [p, i]),
        "sbxsh_result_total": (u64, [p, i]),
        "sbxsh_result_truncated": (i, [p, i]),
        "sbxsh_result_duration_ns": (u64, [p]),
        "sbxsh_result_free": (None, [p]),
        "sbxsh_status": (i, [p, ctypes.POINTER(p), e]),
        "sbxsh_release": (i, [p, e]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


def _load(path=None):
    """libsbxsh, loaded once (a path given later must be the same library)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        soname = "libsbxsh.so.%d" % _SOVERSION
        tried = []
        candidates = [path, os.environ.get("SBXSH_LIBRARY"),
                      os.path.join(_LIBDIR, soname) if _LIBDIR else None,
                      ctypes.util.find_library("sbxsh") and soname]
        for c in candidates:
            if not c:
                continue
            try:
                _lib = _declare(ctypes.CDLL(c))
                return _lib
            except OSError as e:
                tried.append("%s: %s" % (c, e))
        raise SbxshError(E_SBXSH, "libsbxsh not found (%s); install sbxsh (make install) or set "
                         "SBXSH_LIBRARY" % ("; ".join(tried) or "nowhere to look"))


def library_version(library=None):
    """The loaded libsbxsh's version ("0.1.0")."""
    return _load(library).sbxsh_version().decode()


def _raise(err):
    msg = err.message.decode("utf-8", "replace")
    cls = {E_CONFIG: ConfigError, E_RELEASED: ReleasedError}.get(err.code, SbxshError)
    raise cls(err.code, msg)


def _b(s):
    return s if isinstance(s, bytes) else os.fsencode(s)


def _text(b):
    return b.decode("utf-8", "replace")


class _Closing:
    """A context manager whose exit, and whose collection, close() it (a close that fails
    while the interpreter shuts down is let go)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Sandbox(_Closing):
    """A session's sandbox as a Python program uses it.

    cwd: where lines run (default: the current directory); session: the session's name
    (default: derived from the code directories, as sbxsh does); code_dirs: the code
    directories (default: as sbxsh finds them); backend: "local" or "kube"; env: a dict of
    variables set (a value None: removed) in sbxsh's environment; forward_env: names or
    patterns of host variables the sandbox gets; program: the sbxsh to run (default: the
    one installed with the library); capture: bytes kept of each stream (head and tail);
    library: the path of libsbxsh.so.
    """

    def __init__(self, cwd=None, session=None, code_dirs=None, backend=None, env=None,
                 forward_env=None, program=None, capture=1 << 20, library=None):
        self._lib = lib = _load(library)
        self._h = None
        self._capture = capture
        err = _Err()
        o = lib.sbxsh_options_new()
        if not o:
            raise MemoryError()
        try:
            cwd = os.path.abspath(cwd) if cwd is not None else os.getcwd()
            steps = [(lib.sbxsh_options_set_cwd, _b(cwd))]
            for d in code_dirs or []:
                steps.append((lib.sbxsh_options_add_code_dir, _b(os.path.abspath(d))))
            if session is not None:
                steps.append((lib.sbxsh_options_set_session, _b(session)))
            if backend is not None:
                steps.append((lib.sbxsh_options_set_backend, _b(backend)))
            for pat in forward_env or []:
                steps.append((lib.sbxsh_options_forward_env, _b(pat)))
            if program is not None:
                steps.append((lib.sbxsh_options_set_program, _b(os.path.abspath(program))))
            for fn, arg in steps:
                if fn(o, arg, ctypes.byref(err)) < 0:
                    _raise(err)
            for k, v in (env or {}).items():
                if lib.sbxsh_options_setenv(o, _b(k), None if v is None else _b(v),
                                            ctypes.byref(err)) < 0:
                    _raise(err)
            h = ctypes.c_void_p()
            if lib.sbxsh_open(o, ctypes.byref(h), ctypes.byref(err)) < 0:
                _raise(err)
            self._h = h
        finally:
            lib.sbxsh_options_free(o)
        self.session = lib.sbxsh_session(self._h).decode()
        self.cwd = cwd

    # -- the handle

    def _handle(self):
        if self._h is None:
            raise SbxshError(E_INVALID, "the Sandbox is closed")
        return self._h

    def close(self):
        """Frees the handle (a line running on it in another thread ends first). The session
        stays for other clients until its idle timeout: release() ends it."""
        if self._h is not None:
            h, self._h = self._h, None
            self._lib.sbxsh_close(h)

    def cancel(self):
        """Cancels the line running on this Sandbox in another thread; True if there was one."""
        return bool(self._lib.sbxsh_cancel(self._handle()))

    def status(self):
        """The session's status (`sbx status --json`) as a dict; "active" says whether a
        holder runs it."""
        err = _Err()
        p = ctypes.c_void_p()
        if self._lib.sbxsh_status(self._handle(), ctypes.byref(p), ctypes.byref(err)) < 0:
            _raise(err)
        try:
            return json.loads(ctypes.string_at(p.value).decode("utf-8", "replace"))
        finally:
            self._lib.sbxsh_free(p)

    def release(self):
        """Releases the session: its sandbox's last changes pulled back, the sandbox ended.
        Every later call but close() raises ReleasedError."""
        err = _Err()
        if self._lib.sbxsh_release(self._handle(), ctypes.byref(err)) < 0:
            _raise(err)

    # -- running

    def _run_options(self, timeout, stdin, capture, keep):
        lib, err = self._lib, _Err()
        r = lib.sbxsh_run_options_new()
        if not r:
            raise MemoryError()
        try:
            if timeout is not None:
                if timeout <= 0:
                    raise ValueError("timeout must be positive (None: no limit)")
                lib.sbxsh_run_options_set_timeout_ms(r, max(1, int(timeout * 1000)), None)
            if stdin is not None:
                if isinstance(stdin, str):
                    stdin = stdin.encode()
                if isinstance(stdin, (bytes, bytearray, memoryview)):
                    data = bytes(stdin)
                    rc = lib.sbxsh_run_options_set_stdin_buffer(r, data, len(data),
                                                                ctypes.byref(err))
                else:
                    fd = stdin if isinstance(stdin, int) else stdin.fileno()
                    rc = lib.sbxsh_run_options_set_stdin_fd(r, fd, ctypes.byref(err))
                if rc < 0:
                    _raise(err)
            cap = self._capture if capture is None else capture
            lib.sbxsh_run_options_set_capture(r, cap if keep else 0, None)
        except BaseException:
            lib.sbxsh_run_options_free(r)
            raise
        return r

    def _run(self, cmd, r):
        lib, err = self._lib, _Err()
        res = ctypes.c_void_p()
        # ctypes lets go of the GIL for the call: other threads run, cancel() among them
        if lib.sbxsh_run(self._handle(), _b(cmd), r, ctypes.byref(res), ctypes.byref(err)) < 0:
            _raise(err)
        try:
            return self._result(res)
        finally:
            lib.sbxsh_result_free(res)

    def _result(self, res):
        lib = self._lib
        out = {}
        for stream, name in ((_OUTPUT, "output"), (_STDOUT, "stdout"), (_STDERR, "stderr")):
            n = ctypes.c_size_t()
            p = lib.sbxsh_result_data(res, stream, ctypes.byref(n))
            out[name] = _text(ctypes.string_at(p, n.value)) if n.value else ""
            out[name + "_truncated" if stream else "truncated"] = \
                bool(lib.sbxsh_result_truncated(res, stream))
            out[name + "_bytes" if stream else "output_bytes"] = lib.sbxsh_result_total(res, stream)
        out["exit_code"] = lib.sbxsh_result_exit_code(res)
        out["signal"] = lib.sbxsh_result_signal(res)
        out["timed_out"] = bool(lib.sbxsh_result_timed_out(res))
        out["cancelled"] = bool(lib.sbxsh_result_cancelled(res))
        out["duration"] = lib.sbxsh_result_duration_ns(res) / 1e9
        # "truncated": any stream lost its middle
        out["truncated"] = out["truncated"] or out["stdout_truncated"] or out["stderr_truncated"]
        return out

    def execute(self, cmd, timeout=None, stdin=None, capture=None):
        """Runs cmd as `sbxsh -c cmd` and returns a dict: "output" (stdout and stderr as they
        came), "stdout", "stderr" (text, UTF-8 with replacement characters), "exit_code"
        (bash's $?), "truncated" (a stream kept only its head and tail: the first and last
        capture/2 bytes), "stdout_truncated", "stderr_truncated", "output_bytes",
        "stdout_bytes", "stderr_bytes" (the totals), "timed_out", "cancelled", "signal"
        (sbxsh died of it, as bash's parent would see) and "duration" (seconds).

        timeout: seconds (None: none); stdin: str, bytes, a file object or an fd (None: empty).
        """
        r = self._run_options(timeout, stdin, capture, True)
        try:
            return self._run(cmd, r)
        finally:
            self._lib.sbxsh_run_options_free(r)

    def stream(self, cmd, timeout=None, stdin=None, capture=None):
        """Runs cmd and iterates over its output as it comes: ("stdout" or "stderr", text)
        pairs. The Run's .result is execute()'s dict once the iteration has ended; leaving
        the iteration early (break, close()) cancels the line."""
        return Run(self, cmd, timeout, stdin, capture)


class Run(_Closing):
    """An iteration over a line's output (Sandbox.stream): ("stdout"|"stderr", text) pairs,
    then .result. The line runs in a thread of its own; a slow reader here slows the
    command (at most 64 pieces wait)."""

    _END = object()

    def __init__(self, sandbox, cmd, timeout, stdin, capture):
        self._sb = sandbox
        self._q = queue.Queue(maxsize=64)
        self._decoders = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in _NAMES}
        self._closing = False
        self._cancel_w = None
        self.result = None
        self._error = None
        self._r = sandbox._run_options(timeout, stdin, capture, True)
        self._cb = _OUTPUT_FN(self._on_output)
        sandbox._lib.sbxsh_run_options_set_output(self._r, self._cb, None, None)
        # close() writes to this pipe: the run is cancelled even if it has not started yet
        self._cancel_r, self._cancel_w = os.pipe()
        sandbox._lib.sbxsh_run_options_set_cancel_fd(self._r, self._cancel_r, None)
        self._thread = threading.Thread(target=self._work, args=(cmd,), daemon=True)
        self._thread.start()

    def _on_output(self, ctx, stream, data, length):
        try:
            if self._closing:
                return 1
            self._q.put((stream, ctypes.string_at(data, length)))
            return 0
        except BaseException:
            return 1   # cancels the line: never raise through C

    def _work(self, cmd):
        try:
            self.result = self._sb._run(cmd, self._r)
        except BaseException as e:
            self._error = e
        finally:
            self._sb._lib.sbxsh_run_options_free(self._r)
            self._r = None
            os.close(self._cancel_r)
            self._q.put(self._END)

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            item = self._q.get()
            if item is self._END:
                self._thread.join()
                self.close()
                self._q.put(self._END)   # iterating again ends again
                if self._error is not None:
                    err, self._error = self._error, None
                    raise err
                for s, dec in self._decoders.items():
                    tail = dec.decode(b"", final=True)
                    if tail:
                        return _NAMES[s], tail
                raise StopIteration
            stream, data = item
            text = self._decoders[stream].decode(data)
            if text:
                return _NAMES[stream], text

    def close(self):
        """Cancels the line if it still runs and waits for its end."""
        if self._cancel_w is not None:
            if self._thread.is_alive():
                self._closing = True
                try:
                    os.write(self._cancel_w, b"c")
                except OSError:
                    pass   # the run ended meanwhile and closed its end
                # the callback may wait for room in the queue: make it until the run ends
                while self._thread.is_alive():
                    try:
                        self._q.get(timeout=1)
                    except queue.Empty:
                        pass
                self._thread.join()
            os.close(self._cancel_w)
            self._cancel_w = None
