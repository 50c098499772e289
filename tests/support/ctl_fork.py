"""`python -m controller ARGS` as a process of its own, without paying the interpreter's start-up
and ctl's imports for each one (issue 28: tests/unit/test_bad_input.py started ~110 of them, about
0.7 s of CPU each, a minute of a suite worker).

A server started once (`ForkServer.start`) imports `controller.cli` and what ctl's commands import
at their start (SERVER_IMPORTS), then waits on a Unix socket. For each call it forks; the child
becomes what `python -m controller ARGS` would be: its own process, the caller's pipes as stdin,
stdout and stderr (passed over the socket, as `subprocess.run(capture_output=True, input=...)`
gives them), every other descriptor closed, the caller's environment (plus what the interpreter
adds at its start, e.g. LC_CTYPE on a C locale, as it adds it to a fresh one) and working
directory, `controller/__main__.py` run as `__main__`, its exit status as the process's. What is
not the same, and why that does not matter to a test of the process's behaviour:

- the modules in SERVER_IMPORTS are imported before the environment is the caller's. What they
  read from the environment while being imported is recorded by the server (`import_env_reads`)
  and the caller asserts it is nothing that differs between the server and its calls; what they
  write while being imported into ctl's directories goes to the server's own state, runs and lock
  directories, which must stay empty (`written_by_server`);
- modules the command itself would not import may be imported already (their import has no
  effect on a command that does not use them, see above);
- the process is the server's grandchild (a waiter in between reports the exit status), not the
  caller's child: nothing of ctl looks at its parent;
- string hashing is seeded once, at the server's start, so the order of a set or dict of strings
  is the same in all its children (a fresh interpreter draws its own seed: the order is as
  arbitrary, but may differ between two calls; `random` is reseeded in every child by Python
  itself). A test compares such output as values, never as text.

`run(argv, env, cwd, stdin, timeout)` returns a `subprocess.CompletedProcess` as `subprocess.run`
would; tests/unit/test_bad_input.py checks on a sample that both give the same outcome.
"""
from __future__ import annotations

import json
import locale
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What ctl's commands import before they refuse bad input: the CLI, the inventory and pydantic
# (controller.cli.common), asyncssh, the commands test_bad_input.py runs and what they load
# (campaign planning, the scenario it names). Measured on 2026-11-27 (load 13): a case forked from
# a server importing only the first two took 0.01-0.84 s of CPU (26.6 s for 112 cases), with all of
# these 0.01-0.28 s (4.8 s); a fresh interpreter 0.4-0.9 s.
SERVER_IMPORTS = ("controller.cli", "controller.cli.common", "asyncssh", "controller.cli.run", "controller.cli.campaign",
                  "controller.cli.link", "controller.cli.field", "controller.cli.parse", "controller.campaign",
                  "controller.scenarios.distinct_bottleneck")

SERVER = r'''
import json, math, os, runpy, signal, socket, sys, traceback
sock_path, imports = sys.argv[1], json.loads(sys.argv[2])
sys.argv = sys.argv[:1]
sys.path[0] = os.getcwd()          # as `python -m` sets it: the working directory, absolute
at_start = dict(os.environ)        # what the interpreter's start added is in here too


class Recording(type(os.environ)):
    """os.environ, recording every name read while the modules are imported."""
    def __getitem__(self, key):
        READS.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        READS.add(key)
        return super().__contains__(key)


READS = set()
real = os.environ
os.environ = Recording(real._data, real.encodekey, real.decodekey, real.encodevalue, real.decodevalue)
try:
    import importlib
    from controller.cli import quick_oqs_lookup     # how `ctl run` imports asyncssh: no gcc run for liboqs
    with quick_oqs_lookup():
        for name in imports:
            importlib.import_module(name)
finally:
    os.environ = real

server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sock_path)
server.listen(64)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)           # the waiters are reaped by the kernel
print(json.dumps({"ready": True, "env_at_start": at_start, "import_env_reads": sorted({k if isinstance(k, str) else repr(k) for k in READS})}), flush=True)


def child(req, fds):
    for fd, std in zip(fds, (0, 1, 2)):
        os.dup2(fd, std)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))       # subprocess's close_fds
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    sys.path[0] = os.getcwd()
    sys.argv = ["-m", *req["argv"]]
    code = 0
    try:
        runpy.run_module("controller", run_name="__main__", alter_sys=True)  # entry() ends the process itself
    except SystemExit as exc:                          # what the interpreter does with one
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


def waiter(conn, req, fds):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        conn.close()
        child(req, fds)
    for fd in fds:
        os.close(fd)
    signal.signal(signal.SIGALRM, lambda *_: os.kill(pid, signal.SIGKILL))
    signal.alarm(max(1, math.ceil(req["timeout"])))
    _, status, usage = os.wait4(pid, 0)
    signal.alarm(0)
    conn.sendall(json.dumps({"pid": pid, "returncode": os.waitstatus_to_exitcode(status),
                             "cpu_s": usage.ru_utime + usage.ru_stime}).encode() + b"\n")
    os._exit(0)


while True:
    conn, _ = server.accept()
    buf = b""
    fds = []
    while not buf.endswith(b"\n"):
        msg, got, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
        if not msg:
            break
        buf += msg
        fds += got
    if not buf.endswith(b"\n") or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        conn.close()
        continue
    req = json.loads(buf)
    if os.fork() == 0:
        server.close()
        waiter(conn, req, fds)
    for fd in fds:
        os.close(fd)
    conn.close()
'''


class ForkServer:
    def __init__(self, base: Path, env: dict[str, str], imports: tuple[str, ...] = SERVER_IMPORTS,
                 cwd: Path = ROOT):
        """`base`: an empty directory of the server's own; `env`: the environment it imports with
        (its CTL_STATE_DIR, CTL_RUNS_DIR and CTL_LOCK_DIR are pointed into `base`, which must stay
        empty: `written_by_server`); `cwd`: where it imports from (`python -m` puts it first on
        sys.path: a directory as the calls' working directories are, in the checkout or not)."""
        self.own = base
        self.cwd = cwd
        self.env = dict(env, CTL_STATE_DIR=str(base / "state"), CTL_RUNS_DIR=str(base / "runs"),
                        CTL_LOCK_DIR=str(base / "locks"))
        self.imports = imports
        # a socket path short enough for sun_path wherever `base` is
        self.sock = Path(tempfile.mkdtemp(prefix="ctl-fork-")) / "s"
        self.proc: subprocess.Popen | None = None
        self.env_at_start: dict[str, str] = {}
        self.import_env_reads: list[str] = []
        self.cpu_s = 0.0                # the CPU time of the processes forked so far (bench/, not tests)

    def start(self) -> "ForkServer":
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(self.sock), json.dumps(self.imports)],
                                     cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server ended before it was ready (exit {self.proc.wait()})")
        hello = json.loads(line)
        self.env_at_start, self.import_env_reads = hello["env_at_start"], hello["import_env_reads"]
        return self

    def added_at_start(self) -> dict[str, str]:
        """What the interpreter put into its environment at its start (e.g. LC_CTYPE)."""
        return {k: v for k, v in self.env_at_start.items() if k not in self.env}

    def written_by_server(self) -> list[str]:
        """What appeared in the server's own directories (its imports must write nothing)."""
        return sorted(str(p.relative_to(self.own)) for p in self.own.rglob("*"))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        if self.proc is not None:
            self.proc.stdout.close()
        self.sock.unlink(missing_ok=True)
        self.sock.parent.rmdir()

    def differs(self, env: dict[str, str]) -> list[str]:
        """The names a call's environment may not change against the server's: what the server's
        imports read, and what the interpreter reads at its start (PYTHON*, LANG, LC_*)."""
        start = {k for k in set(env) | set(self.env) if k.startswith(("PYTHON", "LC_")) or k == "LANG"}
        return sorted(k for k in set(self.import_env_reads) | start if env.get(k) != self.env.get(k))

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"",
            timeout: float = 120, text: bool = False) -> subprocess.CompletedProcess:
        """`subprocess.run([sys.executable, "-m", "controller", *argv], cwd=cwd, env=env, input=stdin,
        capture_output=True, timeout=timeout, text=text)`, forked from the server. Refused (ValueError)
        when `env` changes what the server's imports or the interpreter's start read (`differs`)."""
        assert len(stdin) < 65536, "more than a pipe holds: write it from a thread"
        differ = self.differs(env)
        if differ:
            raise ValueError(f"{differ}: not as the fork server imported with: start a server with these values")
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(str(self.sock))
            req = {"argv": argv, "env": {**self.added_at_start(), **env}, "cwd": str(cwd), "timeout": timeout}
            socket.send_fds(conn, [json.dumps(req).encode() + b"\n"], [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        os.write(in_w, stdin)
        os.close(in_w)
        out, err = _read_both(out_r, err_r, time.monotonic() + timeout + 30)
        conn.settimeout(timeout + 30)
        with conn, conn.makefile("rb") as f:
            line = f.readline()
        if not line:
            raise RuntimeError(f"the fork server gave no exit status for {argv}")
        reply = json.loads(line)
        rc = reply["returncode"]
        self.cpu_s += reply["cpu_s"]
        if rc == -signal.SIGKILL and timeout:
            raise subprocess.TimeoutExpired(argv, timeout, out, err)
        if text:            # as subprocess decodes: the locale's encoding, universal newlines
            out, err = (d.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")
                        for d in (out, err))
        return subprocess.CompletedProcess(["-m", "controller", *argv], rc, out, err)


def _read_both(out_r: int, err_r: int, deadline: float) -> tuple[bytes, bytes]:
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    sel = selectors.DefaultSelector()
    for fd in chunks:
        sel.register(fd, selectors.EVENT_READ)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the forked ctl's output did not end")
            for key, _ in sel.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fd)
    finally:
        sel.close()
        os.close(out_r)
        os.close(err_r)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])
