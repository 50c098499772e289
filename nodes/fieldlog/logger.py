"""The field logger's main loop: one tick per interval, every point to the spool first.

A tick (seq k, due at start + k * interval):
  1. ask the radio worker for a poll round;
  2. read the uplink counters, take the ping replies, the latest GPS fix and the workload's progress;
  3. wait (until 0.8 interval after the tick) for the radio round;
  4. append the tick's records to the spool in one write: `field` (always: the per-second heartbeat),
     `iface`, `radio` (only when the modem answered; with what it can be vouched for: Provenance), events
     (modem lost/back; the modem found, moved to another path or enabled again after a reset, from
     nodes/fieldlog/modemtrack.py; handovers now settled);
  5. append the raw poll round to raw/radio.jsonl.
A separate thread forwards the spool to InfluxDB (influx.Pusher); sampling never waits for it.

Restart / reboot: the run's last seq is read back from the spool, orphaned children of the dead logger
are ended by PID, the handover window is rebuilt from raw/radio.jsonl, and the seconds nobody measured
are written as a `gap` event (from_seq, to_seq, missing) -- never filled in.
"""
from __future__ import annotations

import json
import os
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from nodes.fieldlog import points as P
from nodes.fieldlog import procs, rundir
from nodes.fieldlog.handovers import OnlineHandovers
from nodes.fieldlog.schedule import NS, due_ns, finished, missing_between, next_seq
from nodes.fieldlog.spool import AppendFile, tail_lines


TRACKER_FIELDS = ("path", "from_path", "detail")     # string fields of the modem trackers' events

# The values a repeat is judged on: the measurements, not the identity (a cell id is the same for hours).
SIGNAL_VALUES = ("rssi_dbm", "rsrp_dbm", "rsrq_db", "sinr_db", "cinr_db", "snr_db", "rscp_dbm", "ecio_db",
                 "tx_power_dbm", "signal_quality_pct")


def signal_values(sample: Any) -> Tuple[Any, ...]:
    legs = tuple(tuple(getattr(leg, n, None) for n in SIGNAL_VALUES) for leg in getattr(sample, "secondary", ()))
    return tuple(getattr(sample, n, None) for n in SIGNAL_VALUES) + legs


class Provenance:
    """What a radio point can be vouched for, as fields of the point (types fixed per name):

    * `read_from` (str): "modem" -- the tool asked the modem this second (AT, qmicli); "daemon" -- the values
      are ModemManager's last ones, which it keeps unchanged while the modem does not answer;
    * `daemon_recent` (bool, daemon families): the daemon's own flag -- false once it got no signal quality
      for 60 s;
    * `same_values_s` (int): seconds since the point's signal values (SIGNAL_VALUES, NR leg included) last
      differed from the sample before (0: they changed; left out for the first sample of a logger process,
      which has nothing to compare with). From a daemon, a run of equal values is either an unchanged radio
      or the daemon repeating itself: the record cannot tell which, and says so instead of choosing.
    """

    def __init__(self) -> None:
        self.last: Optional[Tuple[Any, ...]] = None
        self.since_seq: Optional[int] = None

    def fields(self, k: int, sample: Any, prov: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if prov:
            if prov.get("read_from") in ("modem", "daemon"):
                out["read_from"] = str(prov["read_from"])
            if isinstance(prov.get("daemon_recent"), bool):
                out["daemon_recent"] = prov["daemon_recent"]
        values = signal_values(sample)
        if self.last is not None and self.since_seq is not None:
            if values != self.last:
                self.since_seq = k
            out["same_values_s"] = int(k - self.since_seq)
        else:
            self.since_seq = k
        self.last = values
        return out


def tracker_fields(fields: Dict[str, Any]) -> Dict[str, Any]:
    """A tracker event's fields as points carry them: the known ones, as strings (fixed types per field)."""
    return {k: str(fields[k]) for k in TRACKER_FIELDS if fields.get(k) is not None}


class TextLog:
    def __init__(self, path: Optional[str]):
        self.path = path
        self._lock = threading.Lock()

    def __call__(self, msg: str) -> None:
        line = "%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), msg)
        with self._lock:
            if self.path is None:
                return
            with open(self.path, "a") as f:
                f.write(line)


class Sources:
    """The measuring parts of one run (built from run.json; tests pass fakes with the same methods)."""

    def __init__(self, radio: Any = None, iface: Any = None, ping: Any = None, gps: Any = None, workload: Any = None):
        self.radio, self.iface, self.ping, self.gps, self.workload = radio, iface, ping, gps, workload

    def all(self) -> List[Any]:
        return [s for s in (self.radio, self.ping, self.gps, self.workload) if s is not None]


def build_sources(cfg: Dict[str, Any], paths: rundir.Paths, log: Callable[[str], None],
                  on_spawn: Callable[[str, Optional[Dict[str, Optional[int]]]], None]) -> Sources:
    from nodes.fieldlog import sources as S
    interval = float(cfg["interval_s"])
    radio = None
    if cfg.get("modem"):
        m = cfg["modem"]
        radio = S.RadioSource(S.ModemSettings(m["family"], m["device"], int(m.get("baud") or 115200), m.get("interface")),
                              timeout_s=min(0.7, 0.7 * interval), log=log)
    iface = S.IfaceSource(cfg["uplink"]) if cfg.get("uplink") else None
    ping = None
    if cfg.get("ping"):
        ping = S.PingSource(cfg["ping"]["target"], float(cfg["ping"].get("interval_s") or 0.2), paths.ping_raw,
                            on_spawn=on_spawn, log=log)
    gps = S.GpsSource(cfg["gps"]["gpsd"], log=log, raw_path=paths.gps_raw) if cfg.get("gps") else None
    workload = S.WorkloadRunner(cfg["workload"], paths.workload_raw, on_spawn=on_spawn, log=log)
    return Sources(radio, iface, ping, gps, workload)


def last_seq_in_spool(spool: str) -> Tuple[Optional[int], Set[Tuple[str, int]]]:
    """(last `field` seq, handover keys) from the spool's tail: the spool is the truth after a crash."""
    last: Optional[int] = None
    keys: Set[Tuple[str, int]] = set()
    for raw in tail_lines(spool, 1 << 20):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if rec.get("m") == "field" and isinstance(rec.get("f", {}).get("seq"), int):
            seq = rec["f"]["seq"]
            last = seq if last is None else max(last, seq)
        elif rec.get("m") == "handover":
            keys.add((rec["tags"].get("kind", ""), int(rec["t"])))
    return last, keys


def radio_history(radio_raw: str, since_ns: int) -> List[Tuple[int, Any]]:
    from nodes.modem.radio import RadioSample
    out: List[Tuple[int, Any]] = []
    for raw in tail_lines(radio_raw, 1 << 21):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        t = int(rec.get("t", 0))
        if t < since_ns:
            continue
        s = rec.get("sample")
        out.append((t, RadioSample.from_json(s) if s else None))
    return out


class FieldLogger:
    def __init__(self, paths: rundir.Paths, cfg: Dict[str, Any], state: Dict[str, Any], *,
                 stop: Optional[threading.Event] = None, clock_ns: Callable[[], int] = time.time_ns,
                 monotonic: Callable[[], float] = time.monotonic, sources: Optional[Sources] = None,
                 pusher_factory: Optional[Callable[[AppendFile], Any]] = None, log: Optional[Callable[[str], None]] = None,
                 state_every: int = 10, drain_s: float = 10.0):
        self.paths = paths
        self.cfg = cfg
        self.state = state
        self.stop = stop or threading.Event()
        self.clock_ns = clock_ns
        self.monotonic = monotonic
        self.log = log or TextLog(paths.log)
        self.interval_ns = int(float(cfg["interval_s"]) * NS)
        self.start_ns = int(cfg["started_ns"])
        self.base = {k: str(v) for k, v in sorted(cfg["tags"].items())}
        self.workload_kind = cfg["workload"]["kind"]
        self._sources = sources
        self.pusher_factory = pusher_factory
        self.state_every = state_every
        self.drain_s = drain_s
        self.handovers = OnlineHandovers()
        self.provenance = Provenance()
        self.modem_ok_since: Optional[int] = None
        self.modem_lost_at: Optional[Tuple[int, int]] = None      # (t ns, seq) of the first silent tick
        self.modem_seen = False
        self.ticks = 0
        self.tick_errors = 0
        self._state_lock = threading.Lock()

    def _save_state(self) -> None:
        # The tick loop and the children's reader threads both update the state file.
        with self._state_lock:
            rundir.save_state(self.paths, self.state)

    # ---- children bookkeeping (orphans of a killed logger are ended by PID) --------------------------

    def _on_spawn(self, name: str, ident: Optional[Dict[str, Optional[int]]]) -> None:
        with self._state_lock:
            children = dict(self.state.get("children") or {})
            if ident is None:
                children.pop(name, None)
            else:
                children[name] = ident
            self.state["children"] = children
            rundir.save_state(self.paths, self.state)

    def _end_orphans(self) -> None:
        for name, ident in list((self.state.get("children") or {}).items()):
            if ident and procs.alive(ident.get("pid"), ident.get("start_time")):
                self.log("ending %s (pid %s) left by the previous logger" % (name, ident.get("pid")))
                procs.terminate(int(ident["pid"]), ident.get("start_time"))
        self.state["children"] = {}

    # ---- the run -------------------------------------------------------------------------------------

    def run(self, ready: Callable[[Dict[str, Any]], None] = lambda info: None) -> str:
        spool = AppendFile(self.paths.spool, float(self.cfg.get("fsync_every_s", 1.0)), self.monotonic)
        raw = AppendFile(self.paths.radio_raw, float(self.cfg.get("fsync_every_s", 1.0)), self.monotonic)
        if spool.truncated:
            self.log("spool: cut %d bytes of a torn last line (power loss?)" % spool.truncated)
        last_seq, keys = last_seq_in_spool(self.paths.spool)
        if last_seq is None:
            last_seq = self.state.get("last_seq")
        now = self.clock_ns()
        resumed = bool(self.state.get("starts"))
        history = radio_history(self.paths.radio_raw, now - int(self.handovers.window_s * NS))
        whole = not resumed or bool(history and history[0][0] - self.start_ns < 2 * self.interval_ns)
        self.handovers.seed(history, keys, from_run_start=whole)
        self._end_orphans()
        k = next_seq(now, self.start_ns, self.interval_ns, last_seq)
        start_info = {"t_ns": now, "pid": os.getpid(), "pid_start": procs.proc_start_time(os.getpid()),
                      "seq": k, "resumed": resumed, "gap": None}
        self.state.setdefault("starts", []).append(start_info)
        self.state.update(status="running", pid=os.getpid(), pid_start=start_info["pid_start"])
        self._save_state()
        if not resumed:
            spool.append_lines([P.dumps(P.event_record("start", now, self.base, seq=k, detail="field run started"))])
            spool.sync()

        sources = self._sources or build_sources(self.cfg, self.paths, self.log, self._on_spawn)
        for s in sources.all():
            s.start()
        push_stop = threading.Event()
        pusher = self.pusher_factory(spool) if self.pusher_factory else None
        push_thread = None
        if pusher is not None:
            push_thread = threading.Thread(target=pusher.run, args=(push_stop,),
                                           kwargs={"max_backoff_s": float(self.cfg.get("push_max_backoff_s", 10)),
                                                   "wake": spool.durable},
                                           name="push", daemon=True)
            push_thread.start()
        planned_gap = missing_between(last_seq, k) if resumed else None
        ready({"action": "resumed" if resumed else "started", "run_id": self.paths.run_id, "pid": os.getpid(),
               "seq": k, "gap": list(planned_gap) if planned_gap else None})
        first = True
        status = "stopped"
        reason = "SIGTERM"
        try:
            while not self.stop.is_set():
                if finished(k, self.cfg.get("duration_s"), float(self.cfg["interval_s"])):
                    status, reason = "completed", "duration over"
                    break
                delay = (due_ns(self.start_ns, self.interval_ns, k) - self.clock_ns()) / NS
                if delay > 0 and self.stop.wait(delay):
                    break
                now = self.clock_ns()
                k2 = next_seq(now, self.start_ns, self.interval_ns, k - 1)
                if k2 != k and first:
                    k = k2               # starting took longer than the slot's grace: the restart gap grows
                    continue
                if k2 != k:
                    # Woke too late for this slot (host suspended, clock stepped): the seconds are a gap.
                    spool.append_lines([P.dumps(P.event_record(
                        "late", now, self.base, seq=k2, from_seq=k, to_seq=k2 - 1, missing=k2 - k,
                        detail="logger fell behind; seconds not measured"))])
                    k = k2
                    continue
                try:
                    if first:
                        first = False
                        if resumed:
                            self._restart_event(k, now, last_seq, spool, start_info)
                        elif k > 0:
                            # A fresh run whose start took longer than the first slot's grace (a loaded
                            # host): its first seconds were never measured; said, as any late slot is.
                            spool.append_lines([P.dumps(P.event_record(
                                "late", now, self.base, seq=k, from_seq=0, to_seq=k - 1, missing=k,
                                detail="logger started late; seconds not measured"))])
                    self.tick(k, now, sources, spool, raw)
                except Exception:
                    # One bad tick (a bug, a full disk) must not end a field run that may go on for
                    # hours with nobody watching: log it and keep the schedule.
                    self.tick_errors += 1
                    if self.tick_errors <= 20 or self.tick_errors % 600 == 0:
                        self.log("tick %d failed (%d so far):\n%s" % (k, self.tick_errors, traceback.format_exc()))
                k += 1
        except Exception:
            status, reason = "running", "logger crashed"     # unfinished: the next start resumes it
            self.log("tick loop failed:\n" + traceback.format_exc())
        finally:
            end = self.clock_ns()
            for s in sources.all():
                try:
                    s.stop()
                except Exception:
                    self.log("stopping a source failed:\n" + traceback.format_exc())
            if status != "running":
                spool.append_lines([P.dumps(P.event_record("stop" if status == "stopped" else "complete", end,
                                                           self.base, seq=k, detail=reason))])
            spool.close()
            raw.close()
            self.state.update(status=status, stop_reason=reason, ended_ns=end, children={})
            self._save_state()
            if pusher is not None:
                push_stop.set()
                if push_thread is not None:
                    push_thread.join(timeout=15)
                sent_all = pusher.drain(self.drain_s)
                self.log("end of logging (%s): %s" % (reason, "every point acknowledged by InfluxDB" if sent_all
                                                       else "points left for later forwarding"))
        return status

    def _restart_event(self, k: int, t_ns: int, last_seq: Optional[int], spool: AppendFile,
                       start_info: Dict[str, Any]) -> None:
        """At the first tick after a restart: the seconds nobody measured, as one event (never filled in)."""
        gap = missing_between(last_seq, k)
        fields: Dict[str, Any] = {"seq": k, "detail": "logger restarted; seconds %s..%s not measured" % gap
                                  if gap else "logger restarted"}
        if gap:
            fields.update(from_seq=gap[0], to_seq=gap[1], missing=gap[1] - gap[0] + 1)
        spool.append_lines([P.dumps(P.event_record("gap" if gap else "resume", t_ns, self.base, **fields))])
        start_info.update(seq=k, gap=list(gap) if gap else None)
        self._save_state()

    def tick(self, k: int, t_ns: int, src: Sources, spool: AppendFile, raw: AppendFile) -> None:
        t_mono = self.monotonic()
        asked = src.radio.request(k) if src.radio is not None else False
        recs: List[Dict[str, Any]] = []
        if src.iface is not None:
            got = src.iface.take(t_ns)
            if got is not None:
                recs.append(P.iface_record(src.iface.iface, t_ns, self.base, got[0], got[1]))
        ping = src.ping.take() if src.ping is not None else {}
        gps = src.gps.latest() if src.gps is not None else None
        take_bad = getattr(src.gps, "take_bad", None) if src.gps is not None else None
        gps_skipped = int(take_bad()) if take_bad is not None else None
        work = src.workload.take() if src.workload is not None else {}
        unparsed, examples = self._unparsed(k, t_ns, src)
        sample, radio_raw = None, {"busy": True}
        if src.radio is not None:
            if asked:
                res = src.radio.result(k, t_mono + 0.8 * self.interval_ns / NS)
                if res is not None:
                    sample, radio_raw = res
                else:
                    radio_raw = {"late": True}
            modem_ok = sample is not None
        else:
            modem_ok = None
        recs.insert(0, P.field_record(k, t_ns, self.base, self.workload_kind, modem_ok=modem_ok, ping=ping,
                                      gps=gps, work=work, gps_reports_skipped=gps_skipped, unparsed=unparsed))
        recs += examples
        rr = P.radio_record(sample, t_ns, k, self.base)
        if rr is not None:
            rr["f"].update(self.provenance.fields(k, sample, radio_raw.get("provenance")))
            recs.append(rr)
        if src.radio is not None:
            take = getattr(src.radio, "take_events", None)       # found / moved / enabled again: before "back"
            for kind, fields in (take() if take is not None else []):
                recs.append(P.event_record(kind, t_ns, self.base, seq=k, **tracker_fields(fields)))
            recs += self._modem_events(k, t_ns, sample is not None)
            for t_ev, ev in self.handovers.feed(t_ns, sample):
                recs.append(P.handover_record(ev, t_ev, self.base))
        spool.append_lines([P.dumps(r) for r in recs])
        if src.radio is not None:
            raw.append_lines([json.dumps({"seq": k, "t": t_ns, "sample": None if sample is None else sample.to_json(),
                                          **radio_raw}, separators=(",", ":"))])
        raw.sync_if_due()
        self.ticks += 1
        self.state["last_seq"] = k
        self.state["last_t_ns"] = t_ns
        if self.ticks % self.state_every == 0:
            self._save_state()

    def _unparsed(self, k: int, t_ns: int, src: Sources) -> Tuple[Dict[str, int], List[Dict[str, Any]]]:
        """Per source (ping, the workload's tool), the lines not understood since the last tick, and an
        `unparsed-line` event for each of the first few (parsers.Unread)."""
        counts: Dict[str, int] = {}
        events: List[Dict[str, Any]] = []
        for name, source in (("ping", src.ping), ("workload", src.workload)):
            take = getattr(source, "take_unread", None)
            tool = "ping" if name == "ping" else getattr(source, "tool", None)
            if take is None or tool in (None, "idle"):
                continue
            counts[name], new = take()
            events += [P.event_record("unparsed-line", t_ns, self.base, seq=k, source=tool, n=i, detail=line)
                       for i, line in new]
        return counts, events

    def _modem_events(self, k: int, t_ns: int, ok: bool) -> List[Dict[str, Any]]:
        out = []
        if ok:
            if self.modem_lost_at is not None:
                t0, k0 = self.modem_lost_at
                out.append(P.event_record("modem-back", t_ns, self.base, seq=k, from_seq=k0, to_seq=k - 1,
                                          missing=k - k0, outage_s=(t_ns - t0) / NS,
                                          detail="modem answering again"))
                self.modem_lost_at = None
            self.modem_seen = True
        elif self.modem_seen and self.modem_lost_at is None:
            self.modem_lost_at = (t_ns, k)
            out.append(P.event_record("modem-lost", t_ns, self.base, seq=k, detail="no radio sample (modem silent)"))
        return out
