"""The sbxsh Python module (lib/python/sbxsh) against a real session, with Debian's python3:
the rebuilt tool's shape (Sandbox(cwd=..., session=...).execute(...)["output"], close()),
the result's keys, stdin, the timeout, truncation, streaming, a cancel from another thread,
the context manager, errors as exceptions, status and release.

Run by tests/libsbxsh/python.t, which makes the session's world (HOME, state) and sets
SBXSH_LIBRARY (the built libsbxsh.so.1), SBXSH_TEST_PROGRAM (the built sbxsh), SBXSH_TEST_CODE
(a git repository) and SBXSH_TEST_SESSION.
"""

import os
import subprocess
import threading
import unittest

import sbxsh
from sbxsh import ConfigError, ReleasedError, Sandbox, SbxshError

PROGRAM = os.environ["SBXSH_TEST_PROGRAM"]
CODE = os.environ["SBXSH_TEST_CODE"]
SESSION = os.environ["SBXSH_TEST_SESSION"]


def sandbox(**kw):
    kw.setdefault("cwd", CODE)
    kw.setdefault("session", SESSION)
    return Sandbox(program=PROGRAM, **kw)


def sbxsh_c(line):
    """`sbxsh -c line` from the code directory: what execute() must equal."""
    p = subprocess.run([PROGRAM, "--session", SESSION, "-c", line], cwd=CODE,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class TestShape(unittest.TestCase):
    def setUp(self):
        self.sb = sandbox()

    def tearDown(self):
        self.sb.close()

    def test_rebuilt_tools_shape(self):
        # the shape of the tool sbxsh stands in for
        out = Sandbox(cwd=CODE, session=SESSION, program=PROGRAM).execute("ls")["output"]
        self.assertEqual(out, "README\nsub\n")

    def test_result_keys(self):
        r = self.sb.execute("echo hi; echo err >&2; exit 3")
        for k in ("output", "stdout", "stderr", "exit_code", "truncated", "stdout_truncated",
                  "stderr_truncated", "timed_out", "cancelled", "signal", "duration"):
            self.assertIn(k, r)
        self.assertEqual(r["exit_code"], 3)
        self.assertEqual(r["stdout"], "hi\n")
        self.assertEqual(r["stderr"], "err\n")
        self.assertEqual(sorted(r["output"].splitlines()), ["err", "hi"])
        self.assertFalse(r["truncated"] or r["timed_out"] or r["cancelled"])

    def test_same_as_sbxsh_c(self):
        for line in ("git status --short; git log --oneline | wc -l", "cd sub && pwd",
                     "git push", "false || echo $?", "nosuchcommand_y", "kill -TERM $BASHPID",
                     "echo x | grep -c x && ls"):
            status, out, err = sbxsh_c(line)
            r = self.sb.execute(line)
            want = status if status >= 0 else 128 - status
            self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), (want, out, err), line)

    def test_stdin(self):
        self.assertEqual(self.sb.execute("wc -c", stdin="abc")["stdout"], "3\n")
        self.assertEqual(self.sb.execute("od -An -c", stdin=b"\x00z")["stdout"].split(),
                         ["\\0", "z"])
        with open(os.path.join(CODE, "README"), "rb") as f:
            self.assertEqual(self.sb.execute("cat", stdin=f)["stdout"], "read me\n")
        self.assertEqual(self.sb.execute("cat; echo end")["stdout"], "end\n")

    def test_timeout(self):
        r = self.sb.execute("echo before; sleep 120", timeout=4)   # room for "before" under load
        self.assertTrue(r["timed_out"])
        self.assertNotEqual(r["exit_code"], 0)
        self.assertEqual(r["stdout"], "before\n")
        with self.assertRaises(ValueError):
            self.sb.execute("true", timeout=0)

    def test_truncation(self):
        r = self.sb.execute("seq 100000; echo tail-end", capture=1000)
        self.assertTrue(r["truncated"])
        self.assertTrue(r["stdout_truncated"])
        self.assertEqual(len(r["stdout"]), 1000)
        self.assertTrue(r["stdout"].startswith("1\n2\n3\n"))
        self.assertTrue(r["stdout"].endswith("100000\ntail-end\n"))
        self.assertEqual(r["stdout_bytes"], 588895 + 9)

    def test_not_utf8(self):
        r = self.sb.execute(r"printf '\377x\n'")
        self.assertEqual(r["stdout"], "\ufffdx\n")

    def test_stream(self):
        run = self.sb.stream("echo a; echo b >&2; printf '\\303'; printf '\\251\\n'")
        got = {"stdout": "", "stderr": ""}
        for stream, text in run:
            got[stream] += text
        self.assertEqual(got, {"stdout": "a\n\u00e9\n", "stderr": "b\n"})
        self.assertEqual(run.result["exit_code"], 0)

    def test_stream_left_early_cancels(self):
        run = self.sb.stream("echo first; sleep 120; echo never")
        for stream, text in run:
            self.assertEqual((stream, text), ("stdout", "first\n"))
            break
        run.close()
        self.assertTrue(run.result["cancelled"])
        self.assertEqual(self.sb.execute("echo again")["stdout"], "again\n")

    def test_cancel_from_another_thread(self):
        box = {}
        t = threading.Thread(target=lambda: box.update(r=self.sb.execute("sleep 120")))
        t.start()
        # cancel() says whether a line was running: ask until it was (the thread may not
        # have started it yet); the join below is what ends the wait
        while not self.sb.cancel():
            t.join(0.05)
            self.assertTrue(t.is_alive(), "the line ended without a cancel")
        t.join()
        self.assertTrue(box["r"]["cancelled"])
        self.assertFalse(box["r"]["timed_out"])


class TestHandle(unittest.TestCase):
    def test_context_manager(self):
        with sandbox() as sb:
            self.assertEqual(sb.session, SESSION)
            self.assertEqual(sb.execute("echo in")["stdout"], "in\n")
        with self.assertRaises(SbxshError):
            sb.execute("echo out")

    def test_config_error(self):
        with self.assertRaises(ConfigError) as cm:
            sandbox(session="bad name")
        self.assertIn("invalid session name", str(cm.exception))
        with self.assertRaises(SbxshError):
            Sandbox(cwd=CODE, program="/nonexistent/sbxsh")

    def test_version(self):
        self.assertEqual(sbxsh.library_version(), "0.1.0")



class TestZRelease(unittest.TestCase):   # last (unittest runs classes by name): it ends the session
    def test_status_and_release(self):
        sb = sandbox()
        sb.execute("true")
        st = sb.status()
        self.assertTrue(st["active"])
        sb.release()
        with self.assertRaises(ReleasedError):
            sb.execute("true")
        with self.assertRaises(ReleasedError):
            sb.status()
        sb.close()
        fresh = sandbox()
        self.assertFalse(fresh.status()["active"])
        fresh.close()


if __name__ == "__main__":
    unittest.main()
