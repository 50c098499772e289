"""What the logger measures each tick. Every source is polled without blocking the 1 s schedule.

* RadioSource: a worker thread runs one poll round of the modem family per tick (serial AT through
  nodes.modem.serial_poll.AtPoller, or the family's tools as processes) and hands the merged
  RadioSample back before the tick's deadline; a round still running at the next tick (a silent,
  resetting modem) makes that tick's radio sample missing, never zero and never the previous tick's.
  What the tool itself answers is taken as it is: a family that asks the modem (AT, qmicli) gets
  this second's values or nothing; ModemManager (mmcli) answers from its last values, which it
  keeps while the modem does not answer (it says so only in its log, and its "recent" flag only
  after 60 s). Each round carries that provenance (`read_from`, `daemon_recent`:
  ModemFamily.provenance), and the logger writes it into the radio point with `same_values_s`,
  so a value the daemon may be repeating is marked, not passed off as a new measurement.
* PingSource: one long-lived `ping -n -D -O -i 0.2` (restarted if it exits); each tick takes the replies
  that arrived since the last one.
* GpsSource: a gpsd client (TCP, ?WATCH json) keeping the latest TPV report; a report older than
  `max_age_s` is not used.
* WorkloadRunner: the workload process (iperf3 / webtorrent), restarted after it fails; each tick takes
  the progress reported since the last one.
* read_iface: the uplink's /proc/net/dev counters.

All raw tool output goes to the run's raw/ files (kept with the record, re-parseable).
"""
from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from nodes.fieldlog import procs
from nodes.fieldlog.parsers import (Unread, WebtorrentFrames, iface_rates, iperf3_other, parse_iperf3_interval,
                                    parse_netdev, parse_ping_line, ping_other, rtt_stats)

Log = Callable[[str], None]

# What is read from a tool is bounded: a line longer than MAX_LINE is cut off and dropped (noted in the raw
# log), a poll command's output longer than MAX_OUTPUT is not used. The tools' real lines are < 1 KB and
# their outputs a few KB: the bounds only stop a broken or hostile tool from growing the logger's memory
# or its parsers' work without end.
MAX_LINE = 64 * 1024
MAX_OUTPUT = 1 << 20


def run_bounded(argv: List[str], timeout_s: float, env: Mapping[str, str],
                limit: int = MAX_OUTPUT) -> Tuple[Optional[int], bytes]:
    """(exit status, stdout) of argv; status None when it ran past `timeout_s` or printed more than
    `limit` bytes (then it is killed: its output is not used)."""
    p = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(env))
    assert p.stdout is not None
    chunks: List[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout_s
    try:
        fd = p.stdout.fileno()
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None, b""                     # ran past its timeout
            data = os.read(fd, 65536)
            if not data:
                break
            size += len(data)
            if size > limit:
                return None, b""                     # more than any real output: not used
            chunks.append(data)
        left = max(0.0, deadline - time.monotonic())
        return p.wait(left), b"".join(chunks)
    except subprocess.TimeoutExpired:
        return None, b""
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()


def _noop(msg: str) -> None:
    return None


# ---- radio -------------------------------------------------------------------------------------------

class ModemSettings:
    """What nodes.modem.families needs of a modem (duck type of controller.inventory.Modem)."""

    def __init__(self, family: str, device: str, baud: int = 115200, interface: Optional[str] = None):
        self.family = family
        self.device = device
        self.baud = baud
        self.interface = interface


class RadioSource:
    """Poll rounds of one modem family in a worker thread, one per tick."""

    def __init__(self, modem: ModemSettings, *, timeout_s: float = 0.7, log: Log = _noop,
                 poll_round: Optional[Callable[[], Tuple[Dict[str, Optional[str]], List[str]]]] = None):
        from nodes.modem.families import FAMILIES
        self.family = FAMILIES[modem.family]
        self.modem = modem
        self.timeout_s = timeout_s
        self.log = log
        self._poller: Any = None
        self._exec_needs_setup = True
        self._events: List[Tuple[str, Dict[str, Any]]] = []
        self._cv = threading.Condition()
        self._poll_round = poll_round or self._default_round()
        self._want: Optional[int] = None
        self._result: Optional[Tuple[int, Any, Dict[str, Any]]] = None
        self._busy = False
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="radio", daemon=True)

    # one poll round -> ({command name: raw text | None}, urcs)
    def _default_round(self) -> Callable[[], Tuple[Dict[str, Optional[str]], List[str]]]:
        from nodes.fieldlog import modemtrack
        if self.family.transport == "serial":
            from nodes.modem.serial_poll import AtPoller
            self._poller = AtPoller(self.modem.device, self.modem.baud,
                                    setup=[c.template[0] for c in self.family.setup],
                                    commands={c.name: c.template[0] for c in self.family.poll}, timeout_s=self.timeout_s)
            return modemtrack.SerialTracker(self._poller, event=self._event, log=self.log).round
        env = dict(os.environ, LC_ALL="C", LANG="C")

        def run(argv: Tuple[str, ...], timeout_s: float) -> Tuple[Optional[int], str]:
            try:
                status, data = run_bounded(list(argv), timeout_s, env)
            except OSError as exc:
                self.log("%s: %s" % (argv[0], exc))
                return None, ""
            return status, data.decode("utf-8", "replace")
        def run_all(jobs: List[Tuple[Tuple[str, ...], float]]) -> List[Tuple[Optional[int], str]]:
            """Each job in its own thread: the round takes as long as its slowest command, not their sum."""
            results: List[Tuple[Optional[int], str]] = [(None, "")] * len(jobs)

            def one(i: int) -> None:
                results[i] = run(*jobs[i])
            threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(jobs))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return results
        if self.family.name == "mmcli":
            return modemtrack.MmcliTracker(self.family, self.modem, run, event=self._event, log=self.log,
                                           poll_timeout_s=self.timeout_s, run_all=run_all).round
        if self.family.name == "qmicli":
            return modemtrack.QmiTracker(self.family, self.modem, run, event=self._event, log=self.log,
                                         poll_timeout_s=self.timeout_s).round

        def exec_round() -> Tuple[Dict[str, Optional[str]], List[str]]:
            if self._exec_needs_setup:
                for argv in self.family.setup_commands(self.modem).values():
                    run(tuple(argv), self.timeout_s)
                self._exec_needs_setup = False
            out: Dict[str, Optional[str]] = {}
            for name, argv in self.family.poll_commands(self.modem).items():
                status, text = run(tuple(argv), self.timeout_s)
                out[name] = text if status == 0 else None
            if not any(out.values()):
                self._exec_needs_setup = True     # modem gone: set it up again when it is back
            return out, []
        return exec_round

    def _event(self, kind: str, fields: Dict[str, Any]) -> None:
        """An event of the modem's tracker (found, moved, enabled again): the logger writes it at its next tick."""
        self.log("modem %s: %s" % (kind, fields.get("detail", "")))
        with self._cv:
            self._events.append((kind, dict(fields)))

    def take_events(self) -> List[Tuple[str, Dict[str, Any]]]:
        with self._cv:
            out, self._events = self._events, []
        return out

    def start(self) -> None:
        self._thread.start()

    def request(self, seq: int) -> bool:
        """Start the round for tick `seq`; False when the previous round is still running."""
        with self._cv:
            if self._busy:
                return False
            self._want = seq
            self._busy = True
            self._cv.notify_all()
            return True

    def result(self, seq: int, deadline: float) -> Optional[Tuple[Any, Dict[str, Any]]]:
        """(RadioSample | None, raw) of tick `seq` if its round finished by `deadline` (monotonic)."""
        with self._cv:
            while not (self._result is not None and self._result[0] == seq):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop:
                    return None
                self._cv.wait(remaining)
            _, sample, raw = self._result
            return sample, raw

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._want is None and not self._stop:
                    self._cv.wait()
                if self._stop:
                    return
                seq: int = self._want if self._want is not None else -1
                self._want = None
            sample: Any = None
            raw: Dict[str, Any] = {}
            try:
                outputs, urcs = self._poll_round()
                raw = {"replies": outputs, "urcs": urcs}
                sample = self.family.merge(outputs)
                if sample is not None:
                    raw["provenance"] = self.family.provenance(outputs)
            except Exception as exc:  # a broken round is a missing sample, not a dead logger
                raw = {"error": "%s: %s" % (type(exc).__name__, exc)}
                self.log("radio poll failed: %s" % raw["error"])
            with self._cv:
                self._result = (seq, sample, raw)
                self._busy = False
                self._cv.notify_all()

    def stop(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        self._thread.join(timeout=3)
        if self._poller is not None:
            self._poller.close()


# ---- interface counters ---------------------------------------------------------------------------------

def read_iface(iface: str, netdev: str = "/proc/net/dev") -> Optional[Dict[str, int]]:
    try:
        with open(netdev, "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return parse_netdev(text, iface)


class IfaceSource:
    def __init__(self, iface: str, netdev: str = "/proc/net/dev"):
        self.iface = iface
        self.netdev = netdev
        self.prev: Optional[Tuple[int, Dict[str, int]]] = None

    def take(self, t_ns: int) -> Optional[Tuple[Dict[str, int], Dict[str, float]]]:
        c = read_iface(self.iface, self.netdev)
        if c is None:
            self.prev = None         # interface gone (modem re-enumerating): no rate across it
            return None
        rates = iface_rates(self.prev, (t_ns, c))
        self.prev = (t_ns, c)
        return c, rates


# ---- child process with a line reader -----------------------------------------------------------------------

class ChildLoop:
    """Runs argv, restarts it when it exits (unless told it is done), feeds its stdout lines to
    `on_line`, appends them to a raw log, and reports its identity so orphans can be ended by PID."""

    def __init__(self, name: str, argv: List[str], on_line: Callable[[str], None], raw_path: Optional[str],
                 *, on_spawn: Callable[[str, Optional[Dict[str, Optional[int]]]], None] = lambda n, i: None,
                 on_exit: Callable[[int], bool] = lambda status: True, backoff_s: Tuple[float, float] = (1.0, 10.0),
                 log: Log = _noop, on_unread: Callable[[str], None] = lambda line: None):
        self.name = name
        self.on_unread = on_unread    # a line the parser could not take (over MAX_LINE, or it raised)
        self.argv = argv
        self.on_line = on_line
        self.raw_path = raw_path
        self.on_spawn = on_spawn
        self.on_exit = on_exit        # returns False when the work is done (no restart)
        self.backoff_s = backoff_s
        self.log = log
        self.proc: Optional[subprocess.Popen] = None
        self.running = False
        self.exits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _raw(self, line: str) -> None:
        if self.raw_path is None:
            return
        with open(self.raw_path, "a") as f:
            f.write("%d %s\n" % (time.time_ns(), line))

    def _run(self) -> None:
        backoff = self.backoff_s[0]
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.proc = procs.spawn(self.argv)
            except OSError as exc:
                self._raw("(%s could not start: %s)" % (self.name, exc))
                self.log("%s could not start: %s" % (self.name, exc))
                if self._stop.wait(self.backoff_s[1]):
                    break
                continue
            self.running = True
            self.on_spawn(self.name, procs.identity(self.proc))
            self._raw("(started pid %d: %s)" % (self.proc.pid, " ".join(self.argv)))
            assert self.proc.stdout is not None
            stdout = self.proc.stdout
            cut = False                      # inside a line that was over MAX_LINE: dropped up to its end
            for raw in iter(lambda: stdout.readline(MAX_LINE), b""):
                if cut or (len(raw) >= MAX_LINE and not raw.endswith(b"\n")):
                    if not cut:
                        self._raw("(a line over %d bytes: dropped)" % MAX_LINE)
                        self.log("%s: a line over %d bytes dropped" % (self.name, MAX_LINE))
                        self.on_unread("(a line over %d bytes, dropped) %s" % (
                            MAX_LINE, raw[:200].decode("utf-8", "replace")))
                    cut = not raw.endswith(b"\n")
                    continue
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self._raw(line)
                try:
                    self.on_line(line)
                except Exception as exc:  # a parser surprise must not stop the reader
                    self.log("%s: line not understood (%s): %r" % (self.name, exc, line[:200]))
                    self.on_unread(line)
            status = self.proc.wait()
            self.running = False
            self.exits += 1
            self.on_spawn(self.name, None)
            self._raw("(exited with status %s)" % status)
            if self._stop.is_set():
                break
            if not self.on_exit(status):
                return
            # A process that ran for a while failed once; one that dies at once is backed off.
            backoff = self.backoff_s[0] if time.monotonic() - started > 10 else min(backoff * 2, self.backoff_s[1])
            if self._stop.wait(backoff):
                break

    def stop(self) -> None:
        self._stop.set()
        p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(2)
        self._thread.join(timeout=5)


# ---- ping ---------------------------------------------------------------------------------------------------

def ping_argv(target: str, interval_s: float = 0.2) -> List[str]:
    # -D: host receive time on each line; -O: report unanswered probes; -n: no DNS (the uplink may be gone)
    return ["ping", "-n", "-D", "-O", "-i", "%g" % interval_s, "-W", "1", target]


class _CountsUnread:
    """A source that counts the lines of its tool it did not understand (parsers.Unread, under the
    source's own lock: the tool's reader thread adds, the logger's tick takes)."""

    _lock: threading.Lock
    unread: Unread

    def _unread(self, line: str) -> None:
        with self._lock:
            self.unread.add(line)

    def take_unread(self) -> Tuple[int, List[Tuple[int, str]]]:
        """Lines not understood since the last call, and the first few of them not taken yet (parsers.Unread)."""
        with self._lock:
            return self.unread.take()


class PingSource(_CountsUnread):
    def __init__(self, target: str, interval_s: float = 0.2, raw_path: Optional[str] = None, **kw: Any):
        self._lock = threading.Lock()
        self._rtts: List[float] = []
        self._lost = 0
        self._errors = 0
        self._prev: Optional[float] = None
        self.unread = Unread()
        self.loop = ChildLoop("ping", ping_argv(target, interval_s), self._line, raw_path, on_unread=self._unread, **kw)

    def _line(self, line: str) -> None:
        r = parse_ping_line(line)
        if r is None:
            if not ping_other(line):
                self._unread(line)
            return
        with self._lock:
            if r[0] == "reply" and r[2] is not None:
                self._rtts.append(r[2])
            elif r[0] == "lost":
                self._lost += 1
            else:
                self._errors += 1

    def take(self) -> Dict[str, Any]:
        with self._lock:
            rtts, lost, errors = self._rtts, self._lost, self._errors
            self._rtts, self._lost, self._errors = [], 0, 0
        out: Dict[str, Any] = rtt_stats(rtts, self._prev)
        if rtts:
            self._prev = rtts[-1]
        out.update(ping_replies=len(rtts), ping_lost=lost, ping_errors=errors)
        return out

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()


# ---- GPS --------------------------------------------------------------------------------------------------

class GpsSource:
    """gpsd client: `?WATCH={"enable":true,"json":true}` and keep the last TPV report."""

    def __init__(self, address: str, max_age_s: float = 1.5, log: Log = _noop, raw_path: Optional[str] = None):
        host, _, port = address.rpartition(":")
        self.host, self.port = (host or "127.0.0.1"), int(port or 2947)
        self.max_age_s = max_age_s
        self.log = log
        self.raw_path = raw_path
        self._latest: Optional[Tuple[float, Any]] = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gps", daemon=True)
        self.bad_reports = 0            # TPV reports with a value no gpsd sends (skipped, the thread goes on)
        self._bad_taken = 0             # of which already handed to a tick (take_bad)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        from nodes.modem.gps import tpv
        while not self._stop.is_set():
            try:
                with socket.create_connection((self.host, self.port), timeout=5) as s:
                    s.sendall(b'?WATCH={"enable":true,"json":true};\n')
                    s.settimeout(2.0)
                    buf = b""
                    cut = False              # inside a report over MAX_LINE: dropped up to its end
                    while not self._stop.is_set():
                        try:
                            data = s.recv(65536)
                        except socket.timeout:
                            continue
                        if not data:
                            break
                        *lines, buf = (buf + data).split(b"\n")      # one split per read, not per line
                        if cut and lines:
                            lines, cut = lines[1:], False
                        if len(buf) > MAX_LINE:
                            buf, cut = b"", True
                            self.log("gpsd %s:%d: a report over %d bytes dropped" % (self.host, self.port, MAX_LINE))
                        for line in lines:
                            try:
                                d = json.loads(line)
                            except (ValueError, RecursionError):
                                continue
                            if isinstance(d, dict) and d.get("class") == "TPV":
                                try:
                                    fix = tpv(d)
                                except Exception as exc:    # ParseError (mode "x", lat 1e999): skip this report
                                    self._bad_report(line, exc)
                                    continue
                                with self._lock:
                                    self._latest = (time.monotonic(), fix)
                                if self.raw_path is not None:
                                    with open(self.raw_path, "ab") as f:
                                        f.write(line + b"\n")
            except OSError as exc:
                self.log("gpsd %s:%d: %s" % (self.host, self.port, exc))
            self._stop.wait(2.0)

    def _bad_report(self, line: bytes, exc: Exception) -> None:
        """Count a malformed report and log it (the first ten, then every thousandth: a broken gpsd sending
        one per second must not fill the log)."""
        with self._lock:
            self.bad_reports += 1
            n = self.bad_reports
        if n <= 10 or n % 1000 == 0:
            self.log("gpsd %s:%d: report skipped (%d so far): %s: %r" % (
                self.host, self.port, n, exc, line[:120]))

    def take_bad(self) -> int:
        """Reports skipped since the last call: the tick writes them into its `field` point
        (gps_reports_skipped), so the record counts them second by second, across logger restarts."""
        with self._lock:
            n, self._bad_taken = self.bad_reports - self._bad_taken, self.bad_reports
        return n

    def latest(self) -> Any:
        with self._lock:
            if self._latest is None or time.monotonic() - self._latest[0] > self.max_age_s:
                return None
            return self._latest[1]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=3)


# ---- workloads ------------------------------------------------------------------------------------------------

def iperf3_argv(w: Mapping[str, Any]) -> List[str]:
    argv = ["iperf3", "-c", str(w["server"]), "-p", str(w.get("port") or 5201), "-R",
            "-t", str(int(w.get("chunk_s") or 600)), "-i", "1", "-f", "k", "--forceflush",
            # A cut uplink must end the test within seconds (then it is restarted), not after 2 min.
            "--rcv-timeout", str(int(w.get("rcv_timeout_ms") or 5000)),
            "--connect-timeout", str(int(w.get("connect_timeout_ms") or 3000))]
    if w.get("rate"):
        argv += ["-b", str(w["rate"])]
    return argv


def torrent_argv(w: Mapping[str, Any]) -> List[str]:
    # Without --quiet and with stdout a pipe: one plain status frame per second (no ANSI).
    argv = ["webtorrent", "download", str(w["torrent"]), "-o", str(w["out"]), "-p", str(w.get("http_port") or 8102)]
    if w.get("torrent_port"):
        argv += ["--torrent-port", str(w["torrent_port"])]
    return argv


class WorkloadRunner(_CountsUnread):
    """The workload process and its per-tick progress."""

    def __init__(self, spec: Mapping[str, Any], raw_path: Optional[str], **kw: Any):
        self.kind = spec["kind"]
        self._lock = threading.Lock()
        self._fresh: Optional[Dict[str, Any]] = None
        self.dl_bytes = 0
        self.finished = False
        self._frames = WebtorrentFrames()
        self.unread = Unread()
        self.loop: Optional[ChildLoop] = None
        if self.kind == "iperf3":
            self.loop = ChildLoop("workload", iperf3_argv(spec), self._iperf3_line, raw_path, on_unread=self._unread,
                                  **kw)
        elif self.kind == "torrent":
            self.loop = ChildLoop("workload", torrent_argv(spec), self._torrent_line, raw_path,
                                  on_exit=self._torrent_exit, on_unread=self._unread,
                                  **{k: v for k, v in kw.items() if k != "on_exit"})
        elif self.kind != "idle":
            raise ValueError("unknown workload %r" % self.kind)

    @property
    def tool(self) -> str:
        """The program whose output this source reads (the record's name for it)."""
        return {"torrent": "webtorrent"}.get(self.kind, self.kind)

    def _iperf3_line(self, line: str) -> None:
        iv = parse_iperf3_interval(line)
        if iv is None:
            if not iperf3_other(line):
                self._unread(line)
            return
        with self._lock:
            self.dl_bytes += int(iv["bytes"])
            self._fresh = {"dl_bps": iv["bps"], "dl_bytes": self.dl_bytes}

    def _torrent_line(self, line: str) -> None:
        frame = self._frames.feed(line)
        if not self._frames.understood:
            self._unread(line)
        if frame is None:
            return
        with self._lock:
            self._fresh = {"dl_bps": frame["dl_bps"], "dl_bytes": frame["downloaded_bytes"],
                           "peers_connected": frame["peers_connected"], "peers_unchoked": frame["peers_unchoked"],
                           "peers_active": frame["peers_active"]}

    def _torrent_exit(self, status: int) -> bool:
        if status == 0 and self._frames.done is not None:
            self.finished = True
            return False            # downloaded: nothing to restart
        return True

    def take(self) -> Dict[str, Any]:
        if self.loop is None:
            return {}
        with self._lock:
            fresh, self._fresh = self._fresh, None
        out = dict(fresh or {})
        out["running"] = self.loop.running
        return out

    def start(self) -> None:
        if self.loop is not None:
            self.loop.start()

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.stop()
