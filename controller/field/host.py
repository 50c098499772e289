"""Field-test host control over SSH: start, status and stop the logger on modem hosts, and fetch
their spools into a field run record (the package docstring describes the protocol)."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from controller.commands import Command, CommandResult
from controller.errors import CtlError, SSHError
from controller.inventory import Inventory
from controller.results.records import RunRecord, command_line
from controller.clocksync import measure_clock_offset
from controller.ssh import CommandLog, SSHPool
from controller.field.options import FieldOptions, check_hosts, check_options, field_root, logger_config, modem_hosts, resolve_device
from controller.field.records import APPEND_ONLY, FETCH_FILES, find_record_of, merge_spools, new_record
from controller.field.ship import build_zipapp, cat_command, install_command, pyz_path, start_command, status_command, stop_command


Say = Callable[[str], None]


# ---- the shipped logger ------------------------------------------------------------------------------


# ---- settings (pure) ------------------------------------------------------------------------------------


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
    log = _RecordLog(rec.dir / "commands.jsonl", encode=command_line) if rec is not None else CommandLog()
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
    log = _RecordLog(rec.dir / "commands.jsonl", encode=command_line)
    fh = FieldHosts(inv, hosts, log)
    try:
        return await fetch_into(rec, fh, say)
    finally:
        await fh.close()
        log.close()


# ---- report (pure) ------------------------------------------------------------------------------------------
