"""Where a field run lives on the modem host, and which run a starting logger continues.

    <root>/                          /var/lib/ctl-field on a real host (survives a reboot)
      fieldlog-<sha12>.pyz           the shipped logger (one file per version; never overwritten)
      lock                           flock held by the running logger (the kernel drops it on any death)
      logger.pid                     {"pid", "start_time", "run_id"} of the running logger
      current.json                   {"run_id"} of the latest run
      daemon.log                     what a starting daemon printed before it knew its run
      influx.token.json              InfluxDB token (mode 0600; never fetched into run records)
      runs/<run_id>/
        run.json                     the run's settings and identity (written once)
        state.json                   status (running | stopped | completed), starts, children, last seq
        metrics.jsonl                the spool (see spool.py)
        metrics.influx.json          acknowledged offset (see influx.py)
        raw/radio.jsonl              every poll round's raw replies and the parsed RadioSample
        raw/ping.log, raw/workload.log, raw/gps.jsonl    tool output, each line prefixed by host time ns
        logger.log                   the logger's own messages and tracebacks

A run stays `running` in state.json until the logger ends it (SIGTERM -> stopped, duration over ->
completed). A logger started while the current run is `running` but no logger holds the lock (it was
killed, the host rebooted) resumes that run.
"""
from __future__ import annotations

import os
import re
import time
from typing import Any, Dict, Optional, Tuple

from nodes.fieldlog.schedule import NS, finished, next_seq
from nodes.fieldlog.spool import read_json, write_json_atomic

FORMAT = 1
RUN_ID_RE = re.compile(r"^[A-Za-z0-9._+-]{1,200}$")


class Paths:
    def __init__(self, root: str, run_id: Optional[str] = None):
        self.root = root
        self.lock = os.path.join(root, "lock")
        self.pidfile = os.path.join(root, "logger.pid")
        self.current = os.path.join(root, "current.json")
        self.token = os.path.join(root, "influx.token")
        self.runs = os.path.join(root, "runs")
        self.run_id = run_id
        if run_id is not None:
            if not RUN_ID_RE.match(run_id):
                raise ValueError("bad run id %r" % run_id)
            self.dir = os.path.join(self.runs, run_id)
            self.run_json = os.path.join(self.dir, "run.json")
            self.state_json = os.path.join(self.dir, "state.json")
            self.spool = os.path.join(self.dir, "metrics.jsonl")
            self.raw = os.path.join(self.dir, "raw")
            self.radio_raw = os.path.join(self.raw, "radio.jsonl")
            self.ping_raw = os.path.join(self.raw, "ping.log")
            self.workload_raw = os.path.join(self.raw, "workload.log")
            self.gps_raw = os.path.join(self.raw, "gps.jsonl")
            self.log = os.path.join(self.dir, "logger.log")

    def for_run(self, run_id: str) -> "Paths":
        return Paths(self.root, run_id)


def current_run_id(root: str) -> Optional[str]:
    cur = read_json(os.path.join(root, "current.json"), None)
    rid = cur.get("run_id") if isinstance(cur, dict) else None
    return rid if isinstance(rid, str) and RUN_ID_RE.match(rid) else None


def load(paths: Paths) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    return read_json(paths.run_json, None), read_json(paths.state_json, None)


def validate_config(cfg: Dict[str, Any]) -> None:
    """The settings a new run needs (refused before anything is created)."""
    for key in ("run_id", "host", "interval_s", "workload", "tags"):
        if key not in cfg:
            raise ValueError("config: missing %r" % key)
    if not RUN_ID_RE.match(str(cfg["run_id"])):
        raise ValueError("config: bad run_id %r" % cfg["run_id"])
    if not (0.1 <= float(cfg["interval_s"]) <= 60):
        raise ValueError("config: interval_s must be within 0.1..60")
    if cfg.get("duration_s") is not None and float(cfg["duration_s"]) <= 0:
        raise ValueError("config: duration_s must be positive")
    kind = (cfg.get("workload") or {}).get("kind")
    if kind not in ("iperf3", "torrent", "idle"):
        raise ValueError("config: workload kind must be iperf3, torrent or idle, not %r" % kind)
    if kind == "iperf3" and not cfg["workload"].get("server"):
        raise ValueError("config: workload iperf3 needs a server")
    if kind == "torrent" and not (cfg["workload"].get("torrent") and cfg["workload"].get("out")):
        raise ValueError("config: workload torrent needs torrent and out")
    modem = cfg.get("modem")
    if modem is not None:
        from nodes.modem.families import FAMILIES
        if modem.get("family") not in FAMILIES:
            raise ValueError("config: unknown modem family %r" % modem.get("family"))


def decide(config: Optional[Dict[str, Any]], state: Optional[Dict[str, Any]], now_ns: int) -> str:
    """What a starting logger does with the current run (pure):
    "resume"  -- it is unfinished (a logger died or the host rebooted) and its duration is not over;
    "expire"  -- it is unfinished but its duration is over (mark it completed, then maybe start anew);
    "none"    -- there is no unfinished run."""
    if config is None or state is None or state.get("status") != "running":
        return "none"
    interval_ns = int(float(config["interval_s"]) * NS)
    k = next_seq(now_ns, int(config["started_ns"]), interval_ns, state.get("last_seq"))
    if finished(k, config.get("duration_s"), float(config["interval_s"])):
        return "expire"
    return "resume"


def create(paths: Paths, config: Dict[str, Any], now_ns: Optional[int] = None) -> Dict[str, Any]:
    """A new run directory with its settings; the run starts now (host wall clock)."""
    validate_config(config)
    if os.path.exists(paths.dir):
        raise FileExistsError("run %s already exists on this host" % paths.run_id)
    os.makedirs(paths.raw, exist_ok=True)
    cfg = dict(config, format=FORMAT, started_ns=int(now_ns if now_ns is not None else time.time_ns()))
    write_json_atomic(paths.run_json, cfg)
    write_json_atomic(paths.state_json, {"status": "running", "starts": [], "children": {}, "last_seq": None})
    write_json_atomic(paths.current, {"run_id": paths.run_id})
    return cfg


def save_state(paths: Paths, state: Dict[str, Any]) -> None:
    state["updated_ns"] = time.time_ns()
    write_json_atomic(paths.state_json, state)
