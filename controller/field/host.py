"""Field-test mode, controller side: ship and start the logger on modem hosts, read its status, stop
it, fetch its spool into a field run record, and report (the WiBro paper's Table 1 and Fig. 4).

The logger itself (nodes/fieldlog) runs on the modem host and needs no controller: this module only
talks to it over SSH, in short commands (argv tuples; the one `python3 -c` script is a constant with
its data in argv and stdin):

    install   the logger as one zip file `<root>/fieldlog-<sha12>.pyz` (sha256-checked, atomic; the
              link `<root>/fieldlog.pyz` names the latest, for a boot hook -- see nodes/fieldlog/__main__.py)
    start     `python3 <pyz> start --root R --config JSON --token-stdin` -> detached daemon, PID file
    status    `python3 <pyz> status --root R`
    stop      `python3 <pyz> stop --root R --pid P` (refused if P is not the logger's PID)
    cat       `python3 <pyz> cat ...` -> a chunk of a run file, base64 + sha256 (the fetch)

Where the logger keeps its runs on the host (`root`): /var/lib/ctl-field on a physical rack (survives a
reboot); `<runtime_dir>/hosts/<host>/field` on a virtual rack (its hosts share one file system).

Field run record `runs/<id>/` (controller.results.records conventions): manifest.json (scenario "field";
status `logging` while loggers run on their own -- deliberately not `running`, which crash recovery
would take for a controller that died mid-run --, then `stopped` / `completed`), commands.jsonl,
raw/<host>/ (the host's run files, byte for byte: metrics.jsonl, metrics.influx.json, run.json,
state.json, logger.log, raw radio/ping/workload/gps logs), metrics.jsonl (all hosts' spools, host by
host: for one host identical to its spool), summary.json, fig4_timeline.png, download_cdf.png.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import math
import os
import socket
import statistics
import sys
import time
import zipfile
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import urlparse

from controller.commands import Command, CommandResult
from controller.errors import CtlError, ParameterError, RecordError, SSHError, UsageError
from controller.inventory import Inventory, Role, source_of
from controller.results.records import CTL_VERSION, FORMAT_VERSION, RunRecord, make_run_id
from controller.ssh import CommandLog, SSHPool, measure_clock_offset
from controller.telemetry.points import Point
from controller.telemetry.spool import PushState
from controller.settings import PROJECT_ROOT
from nodes.modem.handover import HandoverEvent, detect_handovers
from nodes.modem.radio import RadioSample

PHYSICAL_ROOT = "/var/lib/ctl-field"
WORKLOADS = ("iperf3", "torrent", "idle")
FETCH_FILES = ("run.json", "state.json", "metrics.jsonl", "metrics.influx.json", "logger.log",
               "raw/radio.jsonl", "raw/ping.log", "raw/workload.log", "raw/gps.jsonl")
APPEND_ONLY = tuple(f for f in FETCH_FILES if not f.endswith(".json"))
PERCENTILES = (5, 25, 50, 75, 95)
QUALITY_METRICS = ("cinr_db", "sinr_db", "snr_db")

Say = Callable[[str], None]


# ---- the shipped logger ------------------------------------------------------------------------------

def _package_files() -> list[tuple[str, bytes]]:
    """What runs on the modem host: nodes.modem's readers and nodes.fieldlog (not the test doubles)."""
    out = [("nodes/__init__.py", (PROJECT_ROOT / "nodes" / "__init__.py").read_bytes())]
    for pkg in ("modem", "fieldlog"):
        for p in sorted((PROJECT_ROOT / "nodes" / pkg).glob("*.py")):
            if p.name in ("emulator.py", "modem_double.py"):
                continue
            out.append((f"nodes/{pkg}/{p.name}", p.read_bytes()))
    out.append(("__main__.py", b"from nodes.fieldlog.__main__ import main\nraise SystemExit(main())\n"))
    return out


def build_zipapp() -> tuple[bytes, str]:
    """The logger as one zip file python3 runs directly; deterministic (same sources -> same sha256)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in _package_files():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


# A constant installer: destination and checksum in argv, the zip (base64) on stdin.
INSTALL_SCRIPT = """import base64, hashlib, os, sys
dest, want = sys.argv[1], sys.argv[2]
data = base64.b64decode(sys.stdin.read())
if hashlib.sha256(data).hexdigest() != want:
    print("checksum mismatch"); sys.exit(3)
os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
tmp = dest + ".tmp"
with open(tmp, "wb") as f:
    f.write(data); f.flush(); os.fsync(f.fileno())
os.replace(tmp, dest)
link = os.path.join(os.path.dirname(dest), "fieldlog.pyz")
if os.path.lexists(link + ".tmp"):
    os.unlink(link + ".tmp")
os.symlink(os.path.basename(dest), link + ".tmp")
os.replace(link + ".tmp", link)
print("installed", dest)
"""


# ---- settings (pure) ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FieldOptions:
    workload: str = "idle"
    duration_s: float | None = None
    server: str | None = None          # iperf3 server HOST[:PORT]
    rate: str | None = None            # iperf3 -b (download rate asked of the server), e.g. 2M
    torrent: str | None = None         # torrent id for webtorrent-cli (path on the host, magnet, URL)
    torrent_out: str | None = None
    ping: str | None = None            # reference host for RTT/jitter (default: the InfluxDB host)
    interval_s: float = 1.0


def field_root(inv: Inventory, host: str) -> str:
    if inv.kind == "virtual":
        from controller.lab.rack import host_dir
        return str(host_dir(inv, host) / "field")
    return PHYSICAL_ROOT


def resolve_device(inv: Inventory, host: str) -> str:
    """The modem device path the logger opens. On a virtual rack a relative path of a serial family is
    under the host's runtime dir (where controller.lab.rack links the AT emulator's pty -- a test double)."""
    from nodes.modem.families import FAMILIES
    modem = inv.hosts[host].modem
    assert modem is not None
    if FAMILIES[modem.family].transport != "serial" or os.path.isabs(modem.device):
        return modem.device
    if inv.kind == "virtual" and ".." not in Path(modem.device).parts:
        from controller.lab.rack import host_dir
        return str(host_dir(inv, host) / modem.device)
    raise ParameterError(f"host {host}: modem device {modem.device!r} must be an absolute path (e.g. /dev/ttyUSB2)")


def modem_hosts(inv: Inventory) -> list[str]:
    return inv.by_role(Role.MODEM_HOST)


def check_hosts(inv: Inventory, hosts: Sequence[str]) -> list[str]:
    known = modem_hosts(inv)
    if not known:
        raise UsageError(f"inventory {inv.name} has no modem host (role: modem-host)")
    for h in hosts:
        if h not in inv.hosts:
            raise UsageError(f"no host {h!r} in inventory {inv.name} (modem hosts: {', '.join(known)})")
        if h not in known:
            raise UsageError(f"host {h} has role {inv.hosts[h].role.value}, not modem-host")
    return list(dict.fromkeys(hosts))


def default_ping_target(inv: Inventory) -> str | None:
    if inv.influxdb is not None:
        return urlparse(inv.influxdb.url).hostname
    return None


def check_options(opts: FieldOptions) -> None:
    if opts.workload not in WORKLOADS:
        raise UsageError(f"--workload must be one of {', '.join(WORKLOADS)}")
    if opts.workload == "iperf3" and not opts.server:
        raise UsageError("--workload iperf3 needs --server HOST[:PORT] (an iperf3 server the host can reach)")
    if opts.workload == "torrent" and not opts.torrent:
        raise UsageError("--workload torrent needs --torrent ID (a .torrent path on the host, magnet or URL)")
    if opts.duration_s is not None and opts.duration_s < opts.interval_s:
        raise UsageError("--duration is shorter than one sample")


def logger_config(inv: Inventory, host: str, run_id: str, opts: FieldOptions, root: str) -> dict[str, Any]:
    """The settings the host's logger runs with (written to its run.json; no secrets)."""
    h = inv.hosts[host]
    workload: dict[str, Any] = {"kind": opts.workload}
    if opts.workload == "iperf3":
        assert opts.server is not None
        server, _, port = opts.server.partition(":")
        workload.update(server=server, port=int(port) if port else 5201, rate=opts.rate, chunk_s=600)
    elif opts.workload == "torrent":
        workload.update(torrent=opts.torrent, out=opts.torrent_out or f"{root}/runs/{run_id}/download")
    modem = None
    if h.modem is not None:
        modem = {"family": h.modem.family, "device": resolve_device(inv, host), "baud": h.modem.baud,
                 "interface": h.modem.interface}
    target = opts.ping or default_ping_target(inv)
    influx = None
    if inv.influxdb is not None:
        influx = {"url": inv.influxdb.url, "org": inv.influxdb.org, "bucket": inv.influxdb.bucket}
    return {
        "run_id": run_id, "host": host, "interval_s": opts.interval_s, "duration_s": opts.duration_s,
        "workload": workload, "tags": {"run": run_id, "scenario": "field", "host": host},
        "modem": modem, "gps": {"gpsd": h.gps.gpsd} if h.gps is not None else None,
        "uplink": h.uplink or (h.modem.interface if h.modem else None),
        "ping": {"target": target, "interval_s": 0.2} if target else None,
        "influx": influx, "fsync_every_s": 1.0, "push_max_backoff_s": 5.0,
    }


def pyz_path(root: str, sha: str) -> str:
    return f"{root}/fieldlog-{sha[:12]}.pyz"


def install_command(root: str, data: bytes, sha: str) -> Command:
    return Command(("python3", "-c", INSTALL_SCRIPT, pyz_path(root, sha), sha), timeout=60, mutates=True,
                   stdin=base64.b64encode(data).decode("ascii"), note="install the field logger")


def start_command(pyz: str, root: str, config: Mapping[str, Any] | None, token: str | None) -> Command:
    argv: tuple[str, ...] = ("python3", pyz, "start", "--root", root)
    if config is not None:
        argv += ("--config", json.dumps(config, separators=(",", ":"), sort_keys=True))
    stdin = None
    if token is not None:
        argv += ("--token-stdin",)
        stdin = token + "\n"          # never in argv: any local user can read argv in ps
    return Command(argv, timeout=45, mutates=True, stdin=stdin,
                   note="start the field logger" if config is not None else "resume the field logger")


def status_command(pyz: str, root: str) -> Command:
    return Command(("python3", pyz, "status", "--root", root), timeout=20, note="field logger status")


def stop_command(pyz: str, root: str, pid: int | None) -> Command:
    argv: tuple[str, ...] = ("python3", pyz, "stop", "--root", root, "--timeout", "40")
    if pid is not None:
        argv += ("--pid", str(pid))
    return Command(argv, timeout=60, mutates=True, note="stop the field logger by its PID")


def cat_command(pyz: str, root: str, run_id: str, name: str, offset: int, max_bytes: int = 4 << 20) -> Command:
    return Command(("python3", pyz, "cat", "--root", root, "--run", run_id, "--file", name, "--offset", str(offset),
                    "--max-bytes", str(max_bytes)), timeout=60, note=f"fetch {name}")


def _json_line(r: CommandResult) -> dict[str, Any]:
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise CtlError(f"{r.host}: `{' '.join(r.argv[:3])} ...` gave no JSON (exit {r.exit_status}): "
                   f"{(r.stderr or r.stdout).strip()[:300]}")


class _RecordLog(CommandLog):
    """The record's commands.jsonl, without the payloads (the zip going out, the spool coming in):
    they are large and are in raw/ anyway."""

    def add(self, result: CommandResult) -> None:
        if result.note.startswith("fetch ") and len(result.stdout) > 300:
            result = CommandResult(result.host, result.argv, result.exit_status,
                                   f"({len(result.stdout)} characters: JSON with the chunk, base64)",
                                   result.stderr, result.started, result.duration, result.dry_run, result.note)
        super().add(result)


# ---- remote operations ------------------------------------------------------------------------------------

class FieldHosts:
    """SSH to a set of modem hosts, with the logger installed on demand."""

    def __init__(self, inv: Inventory, hosts: Sequence[str], log: CommandLog):
        self.inv = inv
        self.hosts = list(hosts)
        self.pool = SSHPool(inv, log, hosts)
        self.zip, self.sha = build_zipapp()
        self._installed: set[str] = set()

    def root(self, host: str) -> str:
        return field_root(self.inv, host)

    def pyz(self, host: str) -> str:
        return pyz_path(self.root(host), self.sha)

    async def ensure_logger(self, host: str) -> str:
        s = self.pool[host]
        if host not in self._installed:
            r = await s.run(Command(("test", "-f", self.pyz(host)), timeout=15, check=False,
                                    note="is this field logger version installed?"))
            if not r.ok:
                await s.check(install_command(self.root(host), self.zip, self.sha))
            self._installed.add(host)
        return self.pyz(host)

    async def check_python(self, host: str) -> None:
        """The host's python3 runs the logger (>= 3.9: nodes.modem uses built-in generics at run time)."""
        out = await self.call(host, lambda pyz: Command(("python3", pyz, "version"), timeout=20,
                                                        note="field logger version / host python"))
        ver = tuple(int(x) for x in str(out.get("python", "0")).split(".")[:2])
        if ver < (3, 9):
            raise CtlError(f"{host}: python3 is {out.get('python')}; the field logger needs 3.9 or newer")

    async def call(self, host: str, command_for: Callable[[str], Command]) -> dict[str, Any]:
        pyz = await self.ensure_logger(host)
        r = await self.pool[host].run(command_for(pyz))
        return _json_line(r)

    async def status(self, host: str) -> dict[str, Any]:
        return await self.call(host, lambda pyz: status_command(pyz, self.root(host)))

    async def close(self) -> None:
        await self.pool.close()


async def _each(hosts: Iterable[str], fn: Callable[[str], Any]) -> dict[str, Any]:
    """fn(host) for every host at once; an SSH or ctl error becomes {"error": ...} for that host."""
    hosts = list(hosts)

    async def one(h: str) -> Any:
        try:
            return await fn(h)
        except CtlError as exc:
            msg = exc.one_line()
            msg = msg[len(h) + 2:] if msg.startswith(f"{h}: ") else msg     # the caller names the host
            return {"error": msg, "reachable": not isinstance(exc, SSHError)}
    results = await asyncio.gather(*(one(h) for h in hosts))
    return dict(zip(hosts, results, strict=True))


# ---- records ----------------------------------------------------------------------------------------------

def new_record(runs_root: Path, inv: Inventory, hosts: Sequence[str], opts: FieldOptions) -> RunRecord:
    rid = make_run_id("field", {"host": "+".join(hosts), "workload": opts.workload})
    rec = RunRecord(runs_root, rid)
    # Written directly with status "logging" (not RunRecord.start's "running": crash recovery would take
    # a `running` record for a controller that died mid-run and try to restore the rack from it).
    rec.manifest = {
        "format_version": FORMAT_VERSION, "run_id": rec.id, "scenario": "field", "campaign": None,
        "status": "logging", "dry_run": False, "created": time.time(), "finished": None,
        "controller": {"host": socket.gethostname(), "pid": os.getpid(), "ctl_version": CTL_VERSION,
                       "python": sys.version.split()[0], "argv": sys.argv},
        "parameters": {"hosts": list(hosts), "workload": opts.workload, "duration_s": opts.duration_s,
                       "server": opts.server, "rate": opts.rate, "torrent": opts.torrent,
                       "ping": opts.ping or default_ping_target(inv), "interval_s": opts.interval_s},
        "inventory_file": str(source_of(inv) or ""), "inventory": inv.snapshot(),
        "phases": [{"phase": "start", "t": time.time()}], "hosts": {}, "processes": [], "errors": [],
        "clock_offsets": {}, "field": {"hosts": {}},
        "files": {"commands": "commands.jsonl", "metrics": "metrics.jsonl", "summary": "summary.json",
                  "raw": "raw/"},
    }
    rec.save()
    return rec


def open_field_record(path: Path) -> RunRecord:
    rec = RunRecord.open(path)
    if rec.manifest.get("scenario") != "field":
        raise RecordError(f"{path.name} is not a field run (scenario {rec.manifest.get('scenario')!r})")
    return rec


def find_record_of(runs_root: Path, run_id: str) -> RunRecord | None:
    p = runs_root / run_id
    if (p / "manifest.json").exists():
        try:
            return open_field_record(p)
        except RecordError:
            return None
    return None


# ---- start / status / stop ------------------------------------------------------------------------------

async def start(inv: Inventory, hosts: Sequence[str], opts: FieldOptions, runs_root: Path, token: str | None,
                say: Say) -> dict[str, Any]:
    """Start (or resume) the logger on each host. Returns {"run_id", "record", "hosts": {h: result}}."""
    hosts = check_hosts(inv, hosts)
    check_options(opts)
    for h in hosts:
        resolve_device(inv, h)            # refused before anything is touched
    # Which hosts continue an unfinished run? (They keep that run; the others start a new one.)
    probe_log = CommandLog()
    probe = FieldHosts(inv, hosts, probe_log)

    async def probe_one(h: str) -> dict[str, Any]:
        await probe.check_python(h)
        return await probe.status(h)
    try:
        statuses = await _each(hosts, probe_one)
    finally:
        await probe.close()
    for h, st in statuses.items():
        if "error" in st:
            raise CtlError(f"{h}: {st['error']}")
    fresh = [h for h in hosts if statuses[h].get("state") not in ("logging", "unfinished")]
    rec: RunRecord | None = new_record(runs_root, inv, fresh, opts) if fresh else None
    records: dict[str, RunRecord] = {}
    for h in hosts:
        if h in fresh:
            assert rec is not None
            records[h] = rec
        else:
            old = find_record_of(runs_root, statuses[h]["run_id"])
            if old is not None:
                records[h] = old
    log = _RecordLog(rec.dir / "commands.jsonl") if rec is not None else CommandLog()
    for entry in probe_log.entries:          # the install and status reads before the record existed
        log.add(entry)
    fh = FieldHosts(inv, hosts, log)
    results: dict[str, Any] = {}
    try:
        async def one(h: str) -> dict[str, Any]:
            st = statuses[h]
            root = fh.root(h)
            if st.get("state") == "logging":
                say(f"{h}: already logging run {st['run_id']} (pid {st['pid']})")
                return {"action": "already-running", "run_id": st["run_id"], "pid": st["pid"]}
            if st.get("state") == "unfinished":
                say(f"{h}: run {st['run_id']} is unfinished (its logger died or the host rebooted): resuming it")
                out = await fh.call(h, lambda pyz: start_command(pyz, root, None, token))
            else:
                assert rec is not None
                cfg = logger_config(inv, h, rec.id, opts, root)
                out = await fh.call(h, lambda pyz: start_command(pyz, root, cfg, token))
            if out.get("action") not in ("started", "resumed", "already-running"):
                raise CtlError(f"{h}: the logger did not start: {out.get('error') or out}")
            r = records.get(h)
            if r is not None:
                hm = r.manifest.setdefault("field", {}).setdefault("hosts", {}).setdefault(h, {})
                hm.update(root=root, pyz=fh.pyz(h), run_id=out.get("run_id"))
                hm.setdefault("starts", []).append({"t": time.time(), **{k: out.get(k) for k in
                                                                          ("action", "pid", "seq", "gap")}})
                hm["logger"] = {"pid": out.get("pid")}
                try:
                    off = await measure_clock_offset(fh.pool[h])
                    r.manifest.setdefault("clock_offsets", {}).setdefault(h, []).append(off.to_json())
                except CtlError:
                    pass
                r.save()
            return out
        results = await _each(hosts, one)
    finally:
        await fh.close()
        log.close()
    for h, out in results.items():
        if "error" in out:
            say(f"{h}: FAILED: {out['error']}")
        else:
            say(f"{h}: {out['action']} run {out.get('run_id')} (pid {out.get('pid')}, seq {out.get('seq')})")
    return {"run_id": rec.id if rec is not None else None, "record": str(rec.dir) if rec is not None else None,
            "hosts": results}


async def status(inv: Inventory, hosts: Sequence[str]) -> dict[str, Any]:
    hosts = check_hosts(inv, hosts) if hosts else modem_hosts(inv)
    fh = FieldHosts(inv, hosts, CommandLog())
    try:
        out = await _each(hosts, fh.status)
    finally:
        await fh.close()
    for st in out.values():
        if "error" in st:
            st.setdefault("state", "unreachable" if not st.get("reachable", True) else "error")
    return out


async def stop(inv: Inventory, hosts: Sequence[str], runs_root: Path, say: Say, fetch_after: bool = True
               ) -> dict[str, Any]:
    hosts = check_hosts(inv, hosts) if hosts else modem_hosts(inv)
    log = CommandLog()
    fh = FieldHosts(inv, hosts, log)
    try:
        async def one(h: str) -> dict[str, Any]:
            st = await fh.status(h)
            if st.get("state") not in ("logging", "unfinished"):
                return {"action": "not-running", "run_id": st.get("run_id"), "state": st.get("state")}
            out = await fh.call(h, lambda pyz: stop_command(pyz, fh.root(h), st.get("pid")))
            if out.get("action") in ("error", "refused"):
                raise CtlError(f"{h}: stop refused: {out.get('error')}")
            say(f"{h}: logger {out['action']} (run {out.get('run_id')})")
            return out
        results = await _each(hosts, one)
        runs = {out["run_id"] for out in results.values() if isinstance(out, dict) and out.get("run_id")}
        for rid in sorted(runs):
            rec = find_record_of(runs_root, rid)
            if rec is None:
                continue
            rec.manifest.setdefault("phases", []).append({"phase": "stop", "t": time.time()})
            rec.save()
            if fetch_after:
                await fetch_into(rec, fh, say)
    finally:
        await fh.close()
    return results


# ---- fetch --------------------------------------------------------------------------------------------------

async def fetch_host(rec: RunRecord, fh: FieldHosts, host: str, run_id: str) -> dict[str, int]:
    """Bring raw/<host>/ up to date with the host's run files (append-only files by offset)."""
    s = fh.pool[host]
    pyz = await fh.ensure_logger(host)
    root = fh.root(host)
    got: dict[str, int] = {}
    for name in FETCH_FILES:
        local = rec.dir / "raw" / host / name
        local.parent.mkdir(parents=True, exist_ok=True)
        append = name in APPEND_ONLY
        offset = local.stat().st_size if (append and local.exists()) else 0
        chunks: list[bytes] = []
        while True:
            r = await s.run(cat_command(pyz, root, run_id, name, offset))
            d = _json_line(r)
            if d.get("action") == "error":
                raise CtlError(f"{host}: fetching {name}: {d.get('error')}")
            if not d.get("exists"):
                break
            if append and d["size"] < (local.stat().st_size if local.exists() else 0):
                raise CtlError(f"{host}: {name} on the host ({d['size']} bytes) is shorter than the fetched copy: "
                               "not the same run file")
            data = base64.b64decode(d["data"])
            if hashlib.sha256(data).hexdigest() != d["sha256"]:
                raise CtlError(f"{host}: {name}: checksum mismatch in transfer")
            chunks.append(data)
            offset = d["next"]
            if not append or not data or offset >= d["size"]:
                break
        data = b"".join(chunks)
        if append:
            if data:
                with open(local, "ab") as f:
                    f.write(data)
        elif chunks:
            tmp = local.with_name(local.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, local)
        got[name] = len(data)
    return got


def merge_spools(rec: RunRecord, hosts: Sequence[str]) -> int:
    """runs/<id>/metrics.jsonl = the hosts' spools, host by host (for one host: its spool byte for byte),
    and the run's metrics.influx.json says what InfluxDB has: all of it only if every host's logger
    had every point acknowledged; otherwise nothing, so `ctl metrics push RUN` sends everything again
    (the repeats are identical points, stored once)."""
    out = rec.dir / "metrics.jsonl"
    tmp = rec.dir / "metrics.jsonl.tmp"
    total = 0
    all_acked = True
    last_push: float | None = None
    url = bucket = ""
    with open(tmp, "wb") as f:
        for h in hosts:
            spool = rec.dir / "raw" / h / "metrics.jsonl"
            if not spool.exists():
                continue
            data = spool.read_bytes()
            f.write(data)
            total += data.count(b"\n")
            st = PushState.load(spool.parent)
            if st.offset < len(data):
                all_acked = False
            url, bucket = st.url or url, st.bucket or bucket
            if st.last_push is not None:
                last_push = max(last_push or 0.0, st.last_push)
    os.replace(tmp, out)
    state_file = rec.dir / "metrics.influx.json"
    if all_acked and total:
        PushState(offset=out.stat().st_size, points=total, url=url, bucket=bucket, last_error=None,
                  last_push=last_push).save(rec.dir)
    else:
        state_file.unlink(missing_ok=True)
    return total


async def fetch_into(rec: RunRecord, fh: FieldHosts, say: Say) -> dict[str, Any]:
    hosts = sorted((rec.manifest.get("field") or {}).get("hosts", {}))
    results: dict[str, Any] = {}
    for h in hosts:
        hm = rec.manifest["field"]["hosts"][h]
        if h not in fh.pool.sessions:
            results[h] = {"error": "not in this command's hosts"}
            continue
        try:
            got = await fetch_host(rec, fh, h, hm.get("run_id") or rec.id)
            st = json.loads((rec.dir / "raw" / h / "state.json").read_text()) \
                if (rec.dir / "raw" / h / "state.json").exists() else {}
            hm["host_status"] = st.get("status")
            hm["fetched"] = time.time()
            results[h] = {"fetched_bytes": got, "status": st.get("status")}
            say(f"{h}: fetched run {rec.id} ({sum(got[n] for n in APPEND_ONLY if n in got)} new bytes of spool "
                f"and logs; state refreshed)")
        except CtlError as exc:
            results[h] = {"error": exc.one_line()}
            say(f"{h}: not fetched ({exc.one_line()}); reporting what was fetched before")
    merge_spools(rec, hosts)
    states = [hm.get("host_status") for hm in rec.manifest["field"]["hosts"].values()]
    if states and all(s == "completed" for s in states):
        rec.manifest["status"] = "completed"
    elif states and all(s in ("completed", "stopped") for s in states):
        rec.manifest["status"] = "stopped"
    if rec.manifest["status"] in ("completed", "stopped") and not rec.manifest.get("finished"):
        rec.manifest["finished"] = time.time()
    rec.save()
    return results


async def fetch(inv: Inventory, rec: RunRecord, say: Say) -> dict[str, Any]:
    hosts = [h for h in sorted((rec.manifest.get("field") or {}).get("hosts", {})) if h in inv.hosts]
    log = _RecordLog(rec.dir / "commands.jsonl")
    fh = FieldHosts(inv, hosts, log)
    try:
        return await fetch_into(rec, fh, say)
    finally:
        await fh.close()
        log.close()


# ---- report (pure) ------------------------------------------------------------------------------------------

@dataclass
class HostSeries:
    host: str
    ticks: dict[int, tuple[int, dict[str, Any]]] = dc_field(default_factory=dict)    # seq -> (t ns, fields)
    radio: dict[int, tuple[int, dict[str, Any], dict[str, str]]] = dc_field(default_factory=dict)  # seq -> ...
    iface: dict[int, dict[str, Any]] = dc_field(default_factory=dict)                # t ns -> fields
    host_handovers: list[Point] = dc_field(default_factory=list)
    events: list[Point] = dc_field(default_factory=list)
    workload: str | None = None

    def radio_series(self) -> list[tuple[float, RadioSample | None]]:
        """(t s, sample) per logged second; None where the modem did not answer (a gap, not zeros)."""
        out: list[tuple[float, RadioSample | None]] = []
        for seq in sorted(self.ticks):
            t, _f = self.ticks[seq]
            r = self.radio.get(seq)
            out.append((t / 1e9, None if r is None else sample_from_point(r[1], r[2])))
        return out


def sample_from_point(f: Mapping[str, Any], tags: Mapping[str, str]) -> RadioSample:
    """A `radio` point back to a RadioSample (the fields handover detection compares)."""
    keys = ("rssi_dbm", "rsrp_dbm", "rsrq_db", "sinr_db", "cinr_db", "snr_db", "cell_id", "cell_id_int", "pci",
            "band", "arfcn", "tac")
    leg: tuple[RadioSample, ...] = ()
    if f.get("nr_pci") is not None or f.get("nr_technology"):
        leg = (RadioSample(technology=f.get("nr_technology") or "nr5g", pci=f.get("nr_pci"),
                           rsrp_dbm=f.get("nr_rsrp_dbm"), sinr_db=f.get("nr_sinr_db")),)
    return RadioSample(technology=tags.get("technology") or None, secondary=leg,
                       **{k: f.get(k) for k in keys})


def series_by_host(points: Iterable[Point]) -> dict[str, HostSeries]:
    out: dict[str, HostSeries] = {}
    for p in points:
        h = p.tags.get("host", "")
        s = out.setdefault(h, HostSeries(h))
        if p.measurement == "field":
            s.ticks[int(p.fields["seq"])] = (p.time_ns, dict(p.fields))
            s.workload = p.tags.get("workload") or s.workload
        elif p.measurement == "radio":
            s.radio[int(p.fields["seq"])] = (p.time_ns, dict(p.fields), dict(p.tags))
        elif p.measurement == "iface":
            s.iface[p.time_ns] = dict(p.fields)
        elif p.measurement == "handover":
            s.host_handovers.append(p)
        elif p.measurement == "field_event":
            s.events.append(p)
    return out


def mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def stdev(xs: Sequence[float]) -> float | None:
    return statistics.stdev(xs) if len(xs) >= 2 else None


def percentile(xs: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default 'linear' method)."""
    if not xs:
        return None
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def quality_metric(s: HostSeries) -> str | None:
    for m in QUALITY_METRICS:
        if any(r[1].get(m) is not None for r in s.radio.values()):
            return m
    return None


def table1_row(s: HostSeries, handovers: Sequence[HandoverEvent]) -> dict[str, Any]:
    fields = [f for _t, f in s.ticks.values()]
    rx = [f["rx_bps"] / 1e3 for f in s.iface.values() if f.get("rx_bps") is not None]
    dl = [f["dl_bps"] / 1e3 for f in fields if f.get("dl_bps") is not None]
    rtt = [f["rtt_ms"] for f in fields if f.get("rtt_ms") is not None]
    jit = [f["jitter_ms"] for f in fields if f.get("jitter_ms") is not None]
    metric = quality_metric(s)
    q = [r[1][metric] for r in s.radio.values() if metric and r[1].get(metric) is not None]
    seqs = sorted(s.ticks)
    span = (seqs[-1] - seqs[0] + 1) if seqs else 0
    kinds: dict[str, int] = {}
    for e in handovers:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    return {
        "host": s.host, "workload": s.workload, "seconds_logged": len(seqs), "seconds_spanned": span,
        "seconds_not_logged": span - len(seqs), "radio_samples": len(s.radio),
        "radio_missing_s": sum(1 for seq in seqs if seq not in s.radio),
        "bandwidth_kbps": _r(mean(rx)), "download_kbps": _r(mean(dl)), "rtt_ms": _r(mean(rtt)),
        "jitter_ms": _r(mean(jit)), "quality_metric": metric, "quality_mean_db": _r(mean(q)),
        "quality_sd_db": _r(stdev(q)), "handovers": len(handovers), "handovers_by_kind": kinds,
    }


def download_percentiles(s: HostSeries) -> dict[str, Any]:
    dl = [f["dl_bps"] / 1e3 for _t, f in s.ticks.values() if f.get("dl_bps") is not None]
    out: dict[str, Any] = {"host": s.host, "n": len(dl), "mean_kbps": _r(mean(dl))}
    for q in PERCENTILES:
        out[f"p{q}_kbps"] = _r(percentile(dl, q))
    return out


DEFINITIONS = {
    "bandwidth_kbps": "mean over the logged seconds of the uplink interface's receive rate (rx bytes of "
                      "/proc/net/dev between consecutive seconds, x8): what the modem link carried",
    "download_kbps": "mean of the workload's per-second download rate (iperf3 -R interval bitrate, or "
                     "webtorrent-cli's Speed), over the seconds it reported one",
    "rtt_ms": "mean over the logged seconds of the per-second mean ping RTT to the reference host "
              "(ping every 0.2 s); seconds without a reply do not count",
    "jitter_ms": "mean over the logged seconds of the per-second mean absolute difference between "
                 "consecutive RTTs (RFC 3550 style instantaneous delay variation of a round trip)",
    "quality_mean_db / quality_sd_db": "mean and sample standard deviation (n-1) of the radio quality "
                                       "metric over the samples the modem gave: CINR for WiMAX/WiBro, "
                                       "else SINR, else SNR (quality_metric says which)",
    "radio_missing_s": "logged seconds without a radio sample (modem silent or resetting): missing, not zero",
    "seconds_not_logged": "seconds inside the run when no logger ran (restart, reboot): recorded as gap events",
    "download percentiles": "per-second download rates, linear interpolation between closest ranks",
    "handovers": "nodes.modem.handover.detect_handovers over the whole run's radio series (cell / base "
                 "station change, technology change, NR leg move, SINR/CINR collapse with recovery)",
}


def report_data(points: Sequence[Point]) -> dict[str, Any]:
    by_host = series_by_host(points)
    table, pct, handovers = [], [], {}
    for h in sorted(by_host):
        s = by_host[h]
        evs = detect_handovers(s.radio_series())
        handovers[h] = [e.to_json() for e in evs]
        table.append(table1_row(s, evs))
        pct.append(download_percentiles(s))
    events = {h: [{"t_ns": p.time_ns, "event": p.tags.get("event"), **p.fields} for p in by_host[h].events]
              for h in sorted(by_host)}
    host_detected = {h: [{"t_ns": p.time_ns, "kind": p.tags.get("kind"), **p.fields}
                         for p in by_host[h].host_handovers] for h in sorted(by_host)}
    return {"table1": table, "download_percentiles": pct, "handovers": handovers,
            "host_detected_handovers": host_detected, "events": events, "definitions": DEFINITIONS}


def render_report(summary: Mapping[str, Any]) -> str:
    lines = ["Table 1 (per host)",
             f"{'host':<10} {'seconds':>7} {'bandwidth':>10} {'download':>9} {'RTT':>8} {'jitter':>8} "
             f"{'quality dB (sd)':>22} {'handovers':>9} {'radio gaps':>10}",
             f"{'':<10} {'':>7} {'kbit/s':>10} {'kbit/s':>9} {'ms':>8} {'ms':>8} {'':>22} {'':>9} {'s':>10}"]

    def f(x: Any, nd: int = 1) -> str:
        return "-" if x is None else f"{x:.{nd}f}"
    for r in summary["table1"]:
        metric = (r["quality_metric"] or "-").replace("_db", "").upper()
        q = f"{metric} {f(r['quality_mean_db'])} ({f(r['quality_sd_db'], 2)})"
        lines.append(f"{r['host']:<10} {r['seconds_logged']:>7} {f(r['bandwidth_kbps']):>10} "
                     f"{f(r['download_kbps']):>9} {f(r['rtt_ms'], 2):>8} {f(r['jitter_ms'], 2):>8} {q:>22} "
                     f"{r['handovers']:>9} {r['radio_missing_s']:>10}")
    lines += ["", "Download rate percentiles (kbit/s)",
              f"{'host':<10} {'n':>6} " + " ".join(f"{'p' + str(q):>9}" for q in PERCENTILES) + f" {'mean':>9}"]
    for p in summary["download_percentiles"]:
        lines.append(f"{p['host']:<10} {p['n']:>6} " + " ".join(f"{f(p[f'p{q}_kbps']):>9}" for q in PERCENTILES)
                     + f" {f(p['mean_kbps']):>9}")
    for h, evs in summary["handovers"].items():
        lines += ["", f"Handovers on {h}: {len(evs)}"]
        for e in evs[:20]:
            lines.append(f"  {time.strftime('%H:%M:%S', time.gmtime(e['time']))}  {e['kind']:<18} "
                         f"{e['before_cell_id'] or '-'} -> {e['after_cell_id'] or '-'}  "
                         f"{e['metric'] or ''} {f(e['before_metric_db'])} -> {f(e['after_metric_db'])} dB")
        if len(evs) > 20:
            lines.append(f"  ... and {len(evs) - 20} more (summary.json)")
    return "\n".join(lines)


def figures(summary: Mapping[str, Any], points: Sequence[Point], out_dir: Path) -> list[str]:
    """Fig. 4: per host one timeline -- CINR/SINR, download rate, active peers -- with red handover
    markers; and the download rate CDF per host."""
    from controller import plots
    plt = plots.pyplot()

    by_host = series_by_host(points)
    hosts = sorted(by_host)
    if not hosts:
        return []
    t0 = min(t for s in by_host.values() for t, _ in s.ticks.values()) / 1e9 if any(
        s.ticks for s in by_host.values()) else 0.0
    fig, axes = plt.subplots(3 * len(hosts), 1, figsize=(11, 3.0 * 3 * len(hosts) / 1.6), sharex=True,
                             squeeze=False)
    for i, h in enumerate(hosts):
        s = by_host[h]
        metric = quality_metric(s) or "sinr_db"
        seqs = sorted(s.ticks)
        ts = [(s.ticks[k][0] / 1e9) - t0 for k in seqs]
        q = [s.radio[k][1].get(metric) if k in s.radio else float("nan") for k in seqs]
        nan = float("nan")       # a missing value is a break in the line, never a zero
        dl = [s.ticks[k][1]["dl_bps"] / 1e3 if s.ticks[k][1].get("dl_bps") is not None else nan for k in seqs]
        peers = [s.ticks[k][1]["peers_active"] if s.ticks[k][1].get("peers_active") is not None else nan
                 for k in seqs]
        ax_q, ax_d, ax_p = axes[3 * i][0], axes[3 * i + 1][0], axes[3 * i + 2][0]
        ax_q.plot(ts, q, lw=1, color="tab:blue")
        ax_q.set_ylabel(f"{metric.replace('_db', '').upper()} (dB)")
        ax_q.set_title(f"{h}: radio quality, download rate, active peers (red: handovers; orange: no ping reply; grey: not logged)")
        ax_d.plot(ts, dl, lw=1, color="tab:green")
        ax_d.set_ylabel("download (kbit/s)")
        ax_p.step(ts, peers, where="post", lw=1, color="tab:purple")
        ax_p.set_ylabel("active peers")
        if all(p != p for p in peers):
            ax_p.text(0.5, 0.5, f"no peer counts (workload {s.workload})", transform=ax_p.transAxes,
                      ha="center", va="center", color="grey")
        for e in summary["handovers"].get(h, []):
            for ax in (ax_q, ax_d, ax_p):
                ax.axvline(e["time"] - t0, color="red", lw=1, alpha=0.8)
        for a, b in _runs([ts[i] for i, k in enumerate(seqs) if s.ticks[k][1].get("ping_replies") == 0]):
            for ax in (ax_q, ax_d, ax_p):      # the reference host did not answer: uplink gone
                ax.axvspan(a, b + 1, color="orange", alpha=0.12, lw=0)
        for ev in s.events:      # seconds no logger measured (restart, reboot): shaded, not interpolated
            if ev.tags.get("event") in ("gap", "late") and ev.fields.get("from_seq") is not None:
                first = s.ticks.get(int(ev.fields["from_seq"]) - 1)
                n = float(ev.fields.get("missing", 0))
                x0 = (first[0] / 1e9 - t0 + 1) if first else ev.time_ns / 1e9 - t0 - n
                for ax in (ax_q, ax_d, ax_p):
                    ax.axvspan(x0, x0 + n, color="grey", alpha=0.2, lw=0)
        for ax in (ax_q, ax_d, ax_p):
            ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel("time since the run's first sample (s)")
    fig.tight_layout()
    p1 = plots.save(fig, out_dir / "fig4_timeline.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    for h in hosts:
        dl = sorted(f["dl_bps"] / 1e3 for _t, f in by_host[h].ticks.values() if f.get("dl_bps") is not None)
        if dl:
            ax.step(dl, [(i + 1) / len(dl) for i in range(len(dl))], where="post", label=h)
    ax.set_xlabel("download rate (kbit/s)")
    ax.set_ylabel("fraction of seconds")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    fig.tight_layout()
    p2 = plots.save(fig, out_dir / "download_cdf.png")
    return [p1.name, p2.name]


def _runs(xs: Sequence[float], step: float = 1.5) -> list[tuple[float, float]]:
    """Consecutive x values (spaced less than `step` apart) as (first, last) spans."""
    out: list[tuple[float, float]] = []
    for x in xs:
        if out and x - out[-1][1] < step:
            out[-1] = (out[-1][0], x)
        else:
            out.append((x, x))
    return out


def load_points(path: Path) -> list[Point]:
    from controller.telemetry.spool import iter_points
    return list(iter_points(path)) if path.exists() else []


def write_report(rec: RunRecord) -> dict[str, Any]:
    points = load_points(rec.dir / "metrics.jsonl")
    summary = {"scenario": "field", "run_id": rec.id, "parameters": rec.manifest.get("parameters"),
               "status": rec.manifest.get("status"), **report_data(points)}
    rec.write_json("summary.json", summary)
    try:
        rec.manifest["figures"] = figures(summary, points, rec.dir)
    except Exception as exc:  # a plot must never lose the numbers
        rec.manifest.setdefault("errors", []).append({"t": time.time(), "error": f"figure failed: {exc!r}"})
    rec.manifest.setdefault("phases", []).append({"phase": "report", "t": time.time()})
    rec.save()
    return summary
