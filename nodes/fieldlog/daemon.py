"""Start, stop, inspect and read the field logger on its host (each a short command run over SSH).

`start` double-forks the logger (setsid: a new session with no controlling terminal; its stdio on
/dev/null and the run's log), so it is not tied to the SSH channel that started it: the channel closes
when `start` prints its one JSON line, and the logger goes on without any controller. `start` returns
only after the daemon holds the logger lock and wrote its PID file (or said why not), through a pipe.

`stop` ends the logger by the PID in the PID file, after checking that PID is still the same process
(its start time) -- and, if the controller names the PID it expects, that it is that one.
"""
from __future__ import annotations

import base64
import errno
import fcntl
import hashlib
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, Optional

from nodes.fieldlog import procs, rundir
from nodes.fieldlog.schedule import NS
from nodes.fieldlog.spool import (PUSH_STATE_NAME, count_lines, load_push_state, read_json, tail_lines,
                                  write_json_atomic)

Ready = Callable[[Dict[str, Any]], None]


def try_lock(path: str) -> Optional[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


def lock_held(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def daemonize(body: Callable[[Ready], int], log_path: str, timeout_s: float = 20.0) -> Dict[str, Any]:
    """Run `body(ready)` in a detached grandchild; return what it passed to `ready` (or an error)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # child
        try:
            os.close(r)
            os.setsid()                            # new session: no terminal, not the SSH session's group
            if os.fork() > 0:
                os._exit(0)                        # the session leader goes; the daemon can never regain a tty
            _detach_stdio(log_path)
            os.chdir("/")
            sent = [False]

            def ready(info: Dict[str, Any]) -> None:
                if sent[0]:
                    return
                sent[0] = True
                try:
                    os.write(w, (json.dumps(info) + "\n").encode())
                finally:
                    os.close(w)
            code = 1
            try:
                code = body(ready)
            except BaseException:
                traceback.print_exc()
                ready({"action": "error", "error": traceback.format_exc(limit=3)[-600:]})
            os._exit(code)
        except BaseException:
            os._exit(1)
    os.close(w)
    os.waitpid(pid, 0)
    data = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rl, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
        if not rl:
            break
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
        if b"\n" in data:
            break
    os.close(r)
    try:
        return json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return {"action": "error", "error": "the logger did not report readiness within %gs; see %s"
                % (timeout_s, log_path)}


def _detach_stdio(log_path: str) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    logfd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(logfd, 2)                          # tracebacks land in the log, never in a closed SSH channel
    os.close(devnull)
    os.close(logfd)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def write_token(paths: rundir.Paths, token: str) -> None:
    write_json_atomic(paths.token + ".json", {"token": token}, mode=0o600)


def read_token(paths: rundir.Paths) -> Optional[str]:
    data = read_json(paths.token + ".json", None)
    return data.get("token") if isinstance(data, dict) else None


def start(root: str, new_config: Optional[Dict[str, Any]], token: Optional[str]) -> Dict[str, Any]:
    os.makedirs(root, mode=0o700, exist_ok=True)
    top = rundir.Paths(root)
    os.makedirs(top.runs, exist_ok=True)
    if token is not None:
        write_token(top, token)
    if new_config is not None:
        rundir.validate_config(new_config)      # refused here, before forking, so the caller sees why
    log_path = os.path.join(root, "daemon.log")

    def body(ready: Ready) -> int:
        fd = try_lock(top.lock)
        if fd is None:
            info = read_json(top.pidfile, {}) or {}
            ready({"action": "already-running", "run_id": info.get("run_id"), "pid": info.get("pid")})
            return 0
        rid = rundir.current_run_id(root)
        cfg = st = None
        if rid is not None:
            cfg, st = rundir.load(top.for_run(rid))
        decision = rundir.decide(cfg, st, time.time_ns())
        expired = None
        if decision == "expire" and st is not None and rid is not None:
            st.update(status="completed", stop_reason="duration over while no logger ran")
            rundir.save_state(top.for_run(rid), st)
            expired = rid
        if decision == "resume" and rid is not None and cfg is not None and st is not None:
            paths = top.for_run(rid)
        elif new_config is not None:
            paths = top.for_run(new_config["run_id"])
            cfg = rundir.create(paths, new_config)
            st = rundir.load(paths)[1]
        else:
            ready({"action": "nothing-to-resume", "run_id": rid, "expired": expired})
            return 0
        assert cfg is not None and st is not None
        logfd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(logfd, 2)                        # from now on tracebacks go to the run's own log
        os.close(logfd)
        me = {"pid": os.getpid(), "start_time": procs.proc_start_time(os.getpid()), "run_id": paths.run_id}
        write_json_atomic(top.pidfile, me)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        from nodes.fieldlog.logger import FieldLogger
        pusher_factory = None
        tok = read_token(top)
        if cfg.get("influx") and tok:
            from nodes.fieldlog.influx import Pusher

            def make_pusher(spool: Any) -> Any:
                return Pusher(paths.dir, cfg["influx"], tok, durable_size=lambda: spool.durable_size)
            pusher_factory = make_pusher

        def ready_with_expired(info: Dict[str, Any]) -> None:
            ready(dict(info, expired=expired))
        try:
            FieldLogger(paths, cfg, st, stop=stop, pusher_factory=pusher_factory).run(ready_with_expired)
        finally:
            if (read_json(top.pidfile, {}) or {}).get("pid") == os.getpid():
                os.unlink(top.pidfile)
            os.close(fd)
        return 0

    return daemonize(body, log_path)


def stop(root: str, expect_pid: Optional[int] = None, timeout_s: float = 30.0) -> Dict[str, Any]:
    top = rundir.Paths(root)
    info = read_json(top.pidfile, None) or {}
    pid, st_time = info.get("pid"), info.get("start_time")
    if pid and procs.alive(pid, st_time) and lock_held(top.lock):
        if expect_pid is not None and expect_pid != pid:
            return {"action": "refused", "error": "the logger's PID is %s, not %s" % (pid, expect_pid), "pid": pid}
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and procs.alive(pid, st_time):
            time.sleep(0.1)
        killed = False
        if procs.alive(pid, st_time):
            # It did not finish its last push in time: end it; the run stays resumable (status running).
            os.kill(pid, signal.SIGKILL)
            killed = True
        return {"action": "killed" if killed else "stopped", "run_id": info.get("run_id"), "pid": pid,
                "state": _state_of(root, info.get("run_id"))}
    rid = rundir.current_run_id(root)
    if rid is None:
        return {"action": "not-running", "run_id": None}
    paths = top.for_run(rid)
    cfg, st = rundir.load(paths)
    if st is not None and st.get("status") == "running":
        # No logger, but an unfinished run (killed logger, reboot): close it, ending its orphans by PID.
        for ident in (st.get("children") or {}).values():
            if ident:
                procs.terminate(int(ident["pid"]), ident.get("start_time"))
        st.update(status="stopped", stop_reason="stopped while no logger ran", children={})
        rundir.save_state(paths, st)
        return {"action": "closed", "run_id": rid, "state": st}
    return {"action": "not-running", "run_id": rid, "state": st}


def _state_of(root: str, run_id: Optional[str]) -> Optional[Dict[str, Any]]:
    if not run_id:
        return None
    return rundir.load(rundir.Paths(root, run_id))[1]


def status(root: str, run_id: Optional[str] = None) -> Dict[str, Any]:
    top = rundir.Paths(root)
    info = read_json(top.pidfile, None) or {}
    running = bool(info.get("pid")) and procs.alive(info.get("pid"), info.get("start_time")) and lock_held(top.lock)
    rid = run_id or rundir.current_run_id(root)
    out: Dict[str, Any] = {"root": root, "now_ns": time.time_ns(), "logger_running": running,
                           "pid": info.get("pid") if running else None, "pid_start": info.get("start_time") if running else None,
                           "run_id": rid}
    if rid is None or not os.path.isdir(rundir.Paths(root, rid).dir):
        out["state"] = "no-run"
        return out
    paths = top.for_run(rid)
    cfg, st = rundir.load(paths)
    st = st or {}
    cfg = cfg or {}
    size = os.path.getsize(paths.spool) if os.path.exists(paths.spool) else 0
    push = load_push_state(paths.dir)
    offset = min(int(push.get("offset") or 0), size)
    out.update(started_ns=cfg.get("started_ns"), duration_s=cfg.get("duration_s"), workload=cfg.get("workload"),
               status=st.get("status"), stop_reason=st.get("stop_reason"), starts=len(st.get("starts") or []),
               spool_bytes=size, spool_points=count_lines(paths.spool), pushed_points=int(push.get("points") or 0),
               pushed_offset=offset, pending_points=count_lines(paths.spool, offset), push_error=push.get("last_error"),
               last_push=push.get("last_push"), influx=bool(cfg.get("influx")))
    if st.get("status") == "running" and (paths.run_id == info.get("run_id")) and running:
        out["state"] = "logging"
    elif st.get("status") == "running":
        out["state"] = "unfinished"             # the logger died or the host rebooted: start resumes it
    else:
        out["state"] = st.get("status") or "unknown"
    last = None
    radio_recent = radio_total = 0
    for raw in reversed(tail_lines(paths.spool, 1 << 16)):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if rec.get("m") == "field":
            if last is None:
                last = rec
            radio_total += 1
            radio_recent += 1 if rec["f"].get("modem_ok") else 0
            if radio_total >= 60:
                break
    if last is not None:
        out["last"] = {"seq": last["f"].get("seq"), "t_ns": last["t"], "age_s": (out["now_ns"] - last["t"]) / NS,
                       **{k: last["f"].get(k) for k in ("modem_ok", "rtt_ms", "jitter_ms", "dl_bps", "peers_active")}}
        out["modem_ok_last_min"] = "%d/%d" % (radio_recent, radio_total)
    return out


FETCHABLE = ("run.json", "state.json", "metrics.jsonl", PUSH_STATE_NAME, "logger.log", "raw/radio.jsonl",
             "raw/ping.log", "raw/workload.log", "raw/gps.jsonl")


def cat(root: str, run_id: str, name: str, offset: int = 0, max_bytes: int = 4 << 20) -> Dict[str, Any]:
    """A chunk of one of a run's files, exact (base64) and cut after the last complete line for
    append-only files, with its sha256 so the controller can check what it stores."""
    if name not in FETCHABLE:
        raise ValueError("not a fetchable file: %r" % name)
    paths = rundir.Paths(root, run_id)
    path = os.path.join(paths.dir, name)
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return {"name": name, "exists": False, "offset": offset, "next": offset, "size": 0, "data": "", "sha256": ""}
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(max_bytes)
    if not name.endswith(".json"):
        cut = data.rfind(b"\n")
        data = data[:cut + 1] if cut >= 0 else b""
    return {"name": name, "exists": True, "offset": offset, "next": offset + len(data), "size": size,
            "data": base64.b64encode(data).decode("ascii"), "sha256": hashlib.sha256(data).hexdigest()}
