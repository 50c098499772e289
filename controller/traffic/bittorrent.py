"""BitTorrent traffic for the mptcp-bittorrent scenario: a tracker, a seeder and a leecher.

The runner has the interface of controller.traffic.iperf3.TrafficRunner (start_servers,
run_clients, collect_servers, stop_all, `runs`), so the run state machine drives it like
iperf3 traffic. Commands are argv tuples built by pure functions below; processes are
started with `session.spawn` and ended by their PID; every line they print is kept with the
controller time it arrived (the download time is measured from those stamps).

Per run: a work directory per host (`mktemp -d`), a generated payload of `size` bytes on
the seeder, one .torrent made there (announce = the run's tracker), the tracker. Per
download (TCP and MPTCP in turn, `repetitions` times): a fresh seeder on the protocol's
torrent port (under `mptcpize run` for MPTCP), started once the tracker lists it; then the
leecher with the magnet link; its file's SHA-256 is compared with the payload's; then the
seeder is stopped. stop_all removes exactly the directories the run created.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from controller.commands import Command, DryRunSession
from controller.errors import ParseError, SSHError, TrafficError
from controller.parsers import webtorrent
from controller.traffic.iperf3 import FlowSpec
from controller.traffic.progress import TrafficProgress, Unit, counted_progress, format_seconds
from controller.units import format_size

PAYLOAD = "payload.bin"


@dataclass(frozen=True)
class BtSettings:
    """Everything the runner needs, decided by the scenario's (pure) plan."""

    tools_dir: str                  # holds node_modules/.bin/{webtorrent,bittorrent-tracker}
    seeder: str
    leecher: str
    tracker_host: str
    tracker_bind: str               # address the tracker listens on
    tracker_port: int
    size_bytes: int
    repetitions: int
    protocols: tuple[str, ...]      # order within a repetition, e.g. ("tcp", "mptcp")
    seed_ports: dict[str, int]      # protocol -> seeder torrent port
    leech_ports: dict[str, int]     # protocol -> leecher torrent port
    http_ports: dict[str, int]      # "seed-tcp", "leech-mptcp", ... -> the CLI's own HTTP server port
    download_timeout_s: float
    seeder_ready_timeout_s: float = 180.0

    @property
    def announce(self) -> str:
        return f"http://{self.tracker_bind}:{self.tracker_port}/announce"

    def tool(self, name: str) -> str:
        return str(Path(self.tools_dir) / "node_modules" / ".bin" / name)

    def to_json(self) -> dict:
        return dict(self.__dict__, announce=self.announce)


# ---- pure command builders ------------------------------------------------------------------

def mptcp_wrap(argv: Sequence[str], protocol: str) -> tuple[str, ...]:
    return ("mptcpize", "run", *argv) if protocol == "mptcp" else tuple(argv)


def tracker_argv(s: BtSettings) -> tuple[str, ...]:
    # HTTP only: 11.2.3's UDP socket ignores --udp-hostname and binds 0.0.0.0 (fixture 06).
    return (s.tool("bittorrent-tracker"), "--http", "--port", str(s.tracker_port), "--http-hostname", s.tracker_bind,
            "--interval", "600000")


def generate_argv(path: str, size: int) -> tuple[str, ...]:
    return ("dd", "if=/dev/urandom", f"of={path}", "bs=1M", f"count={size}", "iflag=count_bytes,fullblock",
            "status=none")


def create_argv(s: BtSettings, payload: str, torrent: str) -> tuple[str, ...]:
    # Always --announce: without it create-torrent adds its list of public trackers.
    return (s.tool("webtorrent"), "create", payload, "--announce", s.announce, "-o", torrent)


def magnet(info_hash: str, name: str, announce: str) -> str:
    # A single `download --announce` is ignored by webtorrent (fixture 06 section 2.4): the
    # tracker goes into the magnet link.
    return (f"magnet:?xt=urn:btih:{info_hash}&dn={urllib.parse.quote(name, safe='')}"
            f"&tr={urllib.parse.quote(announce, safe='')}")


def seeder_argv(s: BtSettings, protocol: str, torrent: str, data_dir: str) -> tuple[str, ...]:
    return mptcp_wrap((s.tool("webtorrent"), "download", torrent, "-o", data_dir, "--keep-seeding", "--torrent-port",
                       str(s.seed_ports[protocol]), "-p", str(s.http_ports[f"seed-{protocol}"])), protocol)


def leecher_argv(s: BtSettings, protocol: str, link: str, out_dir: str) -> tuple[str, ...]:
    return mptcp_wrap((s.tool("webtorrent"), "download", link, "-o", out_dir, "--torrent-port",
                       str(s.leech_ports[protocol]), "-p", str(s.http_ports[f"leech-{protocol}"])), protocol)


def downloads(s: BtSettings) -> list[tuple[str, int]]:
    """(protocol, repetition) in run order: the protocols alternate, so drift hits both alike."""
    return [(proto, rep) for rep in range(1, s.repetitions + 1) for proto in s.protocols]


# Rate of a running download from the client's own `Downloaded:` counter: over at least this
# long (its sizes are rounded, `12 MB` is +-0.5 MB, so a rate over one frame would jump).
RATE_SPAN_S = 3.0


def download_status(stamped: Sequence[tuple[float, str]], size_bytes: int) -> tuple[int, float | None]:
    """(bytes downloaded as the client last printed them, bit/s over the last RATE_SPAN_S or more)."""
    prog = webtorrent.progress(list(stamped))
    if not prog:
        return 0, None
    t1, b1 = prog[-1]
    older = [(t, b) for t, b in prog if t <= t1 - RATE_SPAN_S]
    rate = None
    if older:
        t0, b0 = older[-1]
        if t1 > t0 and b1 >= b0:
            rate = (b1 - b0) * 8 / (t1 - t0)
    return min(b1, size_bytes), rate


# ---- what a download produced ---------------------------------------------------------------------

@dataclass
class BtDownload:
    spec: FlowSpec
    name: str
    protocol: str
    repetition: int
    seeder_argv: tuple[str, ...] = ()
    leecher_argv: tuple[str, ...] = ()
    seeder_started: float | None = None
    seeder_ready: float | None = None
    client_started: float | None = None     # leecher spawned (controller clock)
    first_output: float | None = None       # first line the leecher printed
    done_at: float | None = None            # its "torrent downloaded successfully" line
    exited: float | None = None
    ended_at: float | None = None           # this download's turn was over (it was not cut short)
    lines: list[tuple[float, str]] = field(default_factory=list)
    seeder_lines: list[tuple[float, str]] = field(default_factory=list)
    client_status: int | None = None
    sha256: str | None = None
    expected_sha256: str | None = None
    size_bytes: int | None = None
    error: str | None = None
    client_pid: int | None = None
    server_pid: int | None = None
    # the TrafficRunner interface (no iperf3 JSON here)
    client_json: str = ""
    server_json: str = ""

    @property
    def complete(self) -> bool:
        return self.error is None and self.sha256 is not None and self.sha256 == self.expected_sha256

    @property
    def ended(self) -> bool:
        """The download ran to its own end (completed or failed), not cut short by an abort."""
        return self.ended_at is not None

    @property
    def state(self) -> str:
        if self.ended_at is not None:
            return "done" if self.complete else "failed"
        return "running" if self.seeder_started is not None else "waiting"

    @property
    def download_s(self) -> float | None:
        if self.done_at is None or self.first_output is None:
            return None
        return self.done_at - self.first_output

    def text(self) -> str:
        return "\n".join(l for _, l in self.lines)

    def to_json(self) -> dict:
        return {"name": self.name, "spec": self.spec.to_json(), "protocol": self.protocol,
                "repetition": self.repetition, "seeder_argv": list(self.seeder_argv),
                "leecher_argv": list(self.leecher_argv), "seeder_started": self.seeder_started,
                "seeder_ready": self.seeder_ready, "client_started": self.client_started,
                "first_output": self.first_output, "done_at": self.done_at, "exited": self.exited,
                "ended_at": self.ended_at,
                "client_status": self.client_status, "sha256": self.sha256, "expected_sha256": self.expected_sha256,
                "size_bytes": self.size_bytes, "error": self.error, "client_pid": self.client_pid,
                "server_pid": self.server_pid, "download_s": self.download_s,
                "leecher_lines": [[round(t, 6), l] for t, l in self.lines]}

    @classmethod
    def from_json(cls, d: dict) -> "BtDownload":
        """A download as the manifest recorded it (summaries re-computed from a record)."""
        spec = FlowSpec(**d["spec"])
        out = cls(spec, d["name"], d["protocol"], d["repetition"])
        for k in ("seeder_started", "seeder_ready", "client_started", "first_output", "done_at", "exited", "ended_at",
                  "client_status", "sha256", "expected_sha256", "size_bytes", "error", "client_pid", "server_pid"):
            setattr(out, k, d.get(k))
        out.seeder_argv, out.leecher_argv = tuple(d.get("seeder_argv", ())), tuple(d.get("leecher_argv", ()))
        out.lines = [(float(t), l) for t, l in d.get("leecher_lines", [])]
        return out


class _Lines:
    """Consumes a process's stdout in the background, stamping each line on arrival."""

    def __init__(self, proc: Any, into: list[tuple[float, str]]):
        self.proc = proc
        self.into = into
        self.changed = asyncio.Event()
        self.ended = False
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            async for line in self.proc.lines():
                self.into.append((time.time(), line))
                self.changed.set()
        except SSHError:
            pass
        finally:
            self.ended = True
            self.changed.set()

    async def wait_for(self, pred, timeout: float) -> bool:
        """Until pred(lines) is true (True), the stream ends or the timeout passes (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if pred(self.into):
                return True
            if self.ended:
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                return False


class BitTorrentRunner:
    """TrafficRunner-compatible runner of one tracker, seeders and leechers (see module doc)."""

    def __init__(self, pool: Any, flows: Sequence[FlowSpec], settings: BtSettings, record: Any = None):
        self.pool = pool
        self.s = settings
        by_proto = {f.protocol: f for f in flows}
        self.runs = [BtDownload(by_proto[p], f"{p}-{rep}", p, rep) for p, rep in downloads(settings)]
        self.dirs: list[tuple[str, str]] = []            # (host, path) this run created
        self.tracker_lines: list[tuple[float, str]] = []
        self._tracker: Any = None
        self._tracker_reader: _Lines | None = None
        self._live: list[Any] = []                      # processes not yet ended
        self.torrent: dict = {}
        self.magnet = ""
        self.payload_sha256 = ""
        self.seed_dir = self.leech_dir = ""
        # Raw outputs go into the run record as they are produced (a dry run has none).
        self.record = record
        # What the step is blocked on now (the live view says it), and one progress line per
        # download started or ended (the run's progress lines on stderr; the runner sets it).
        self.waiting_for = ""
        self.on_event: Callable[[str], None] = lambda msg: None
        self.t0: float | None = None

    unit_name = "BitTorrent downloads"

    def describe(self) -> str:
        n = len(self.runs)
        return (f"{n} BitTorrent downloads of {format_size(self.s.size_bytes)} ("
                + " and ".join(p.upper() for p in self.s.protocols) + " alternating), each up to "
                + f"{format_seconds(self.s.download_timeout_s)}")

    def progress(self, now: float) -> TrafficProgress:
        units = []
        cur_frac, cur_left = 0.0, None
        waiting = self.waiting_for
        for d in self.runs:
            detail = ""
            if d.state == "running":
                got, rate = download_status(d.lines, self.s.size_bytes)
                cur_frac = got / self.s.size_bytes if self.s.size_bytes else 0.0
                done_at = next((t for t, l in d.lines if l.startswith("torrent downloaded successfully")), None)
                if done_at is not None:
                    # Complete; the client takes a while to close its connections and exit.
                    cur_frac, cur_left = 1.0, 0.0
                    first = next((t for t, l in d.lines if l.strip()), done_at)   # as download_s counts it
                    detail = f"downloaded in {done_at - first:.1f} s"
                    waiting = waiting or f"the {d.name} leecher to exit (its download is complete)"
                elif d.client_started is not None:
                    detail = f"{got / 2**20:.1f} MiB of {self.s.size_bytes / 2**20:.1f} MiB"
                    if rate:
                        cur_left = (self.s.size_bytes - got) * 8 / rate
                        detail += f", ETA {format_seconds(cur_left)}"
                    detail += f" ({format_seconds(now - d.client_started)} so far)"
            elif d.state in ("done", "failed") and d.download_s is not None:
                detail = f"{d.download_s:.1f} s" if d.complete else (d.error or "")
            elif d.state == "failed":
                detail = d.error or ""
            units.append(Unit(d.name, d.state, d.spec.name, detail))
        finished = [d.ended_at - d.seeder_started for d in self.runs
                    if d.complete and d.ended_at is not None and d.seeder_started is not None]
        return counted_progress("BitTorrent downloads", units, now - self.t0 if self.t0 else 0.0,
                                current_fraction=cur_frac, current_remaining_s=cur_left,
                                finished_durations=finished, waiting_for=waiting,
                                limit=f"each up to {format_seconds(self.s.download_timeout_s)}")

    def _dry(self, host: str) -> bool:
        return isinstance(self.pool[host], DryRunSession)

    async def _run(self, host: str, argv: Sequence[str], note: str, timeout: float = 60,
                   assume: str = "", check: bool = True) -> str:
        r = await self.pool[host].run(Command(tuple(argv), timeout=timeout, note=note, assume=assume, check=False))
        if check and r.exit_status != 0 and not self._dry(host):
            raise TrafficError(f"{host}: `{argv[0]} {' '.join(argv[1:3])}` failed ({note}): "
                               f"{(r.stderr or r.stdout).strip()[:300]}")
        return r.stdout

    def _raw(self, host: str, name: str, text: str) -> None:
        if self.record is not None:
            self.record.write_raw(host, name, text)

    # ---- TrafficRunner interface -------------------------------------------------------------

    async def start_servers(self) -> None:
        s = self.s
        self.waiting_for = "the hosts to confirm the BitTorrent tools are installed"
        for host, tool in ((s.seeder, "webtorrent"), (s.leecher, "webtorrent"), (s.tracker_host, "bittorrent-tracker")):
            r = await self.pool[host].run(Command(("test", "-x", s.tool(tool)), timeout=10, check=False,
                                                  note=f"is {tool} installed?"))
            if r.exit_status != 0 and not self._dry(host):
                raise TrafficError(f"{host}: {s.tool(tool)} is missing (install nodes/bittorrent there with `npm ci` "
                                   "and point --bt-tools at it; on the virtual rack scripts/setup.sh does it)")
        # A dry run shows mktemp's own template where the name it makes at run time goes.
        self.seed_dir = (await self._run(s.seeder, ("mktemp", "-d", "/tmp/ctl-bt-seed.XXXXXX"),
                                         "seeder work dir (XXXXXX: made by mktemp at run time)",
                                         assume="/tmp/ctl-bt-seed.XXXXXX")).strip()
        self.dirs.append((s.seeder, self.seed_dir))
        self.leech_dir = (await self._run(s.leecher, ("mktemp", "-d", "/tmp/ctl-bt-leech.XXXXXX"),
                                          "leecher work dir (XXXXXX: made by mktemp at run time)",
                                          assume="/tmp/ctl-bt-leech.XXXXXX")).strip()
        self.dirs.append((s.leecher, self.leech_dir))
        payload = f"{self.seed_dir}/{PAYLOAD}"
        self.waiting_for = f"{s.seeder} to generate the {format_size(s.size_bytes)} payload and hash it"
        await self._run(s.seeder, generate_argv(payload, s.size_bytes), f"generate a {s.size_bytes}-byte payload",
                        timeout=300)
        out = await self._run(s.seeder, ("sha256sum", payload), "payload hash", timeout=120,
                              assume="0" * 64 + f"  {payload}")
        self.payload_sha256 = out.split()[0] if out.split() else ""
        # The tracker first: the torrent names it, and seeders announce to it at start.
        self.waiting_for = f"the tracker on {s.tracker_host} to listen"
        self._tracker = await self.pool[s.tracker_host].spawn(tracker_argv(s), note="bittorrent tracker")
        self._live.append(self._tracker)
        self._tracker_reader = _Lines(self._tracker, self.tracker_lines)
        if not self._dry(s.tracker_host):
            ok = await self._tracker_reader.wait_for(lambda ls: any("HTTP tracker:" in l for _, l in ls), 60)
            if not ok:
                raise TrafficError(f"{s.tracker_host}: the tracker did not start listening on {s.announce}")
        torrent = f"{self.seed_dir}/payload.torrent"
        self.waiting_for = f"{s.seeder} to make the .torrent"
        await self._run(s.seeder, create_argv(s, payload, torrent), "make the .torrent", timeout=300)
        info = await self._run(s.seeder, (s.tool("webtorrent"), "info", torrent), "read the .torrent", timeout=120,
                               assume=json.dumps({"name": PAYLOAD, "infoHash": "0" * 40, "length": s.size_bytes,
                                                  "pieceLength": 262144, "pieces": [], "announce": [s.announce]}))
        self.torrent = webtorrent.parse_info(info)
        if self._dry(s.seeder):   # no payload was hashed: the magnet link says where its hash comes from
            self.torrent["info_hash"] = "<info hash of the .torrent, read at run time>"
        self.magnet = magnet(self.torrent["info_hash"], self.torrent["name"] or PAYLOAD, s.announce)
        self._raw(s.seeder, "webtorrent-info.json", info)
        self.waiting_for = ""

    async def run_clients(self, timeout_s: float) -> None:
        self.t0 = time.time()
        for k, d in enumerate(self.runs, 1):
            self.on_event(f"BitTorrent download {k}/{len(self.runs)} ({d.name}): starting its seeder")
            try:
                await self._one(d)
            except asyncio.TimeoutError:
                d.error = d.error or f"did not finish within {self.s.download_timeout_s:g} s"
            d.ended_at = time.time()
            if self._dry(self.s.leecher):      # nothing ran: say so, never a failure or a count
                self.on_event(f"BitTorrent download {k}/{len(self.runs)} ({d.name}): dry run, nothing downloaded")
                continue
            done = sum(1 for x in self.runs if x.complete)
            how = (f"complete in {d.download_s:.1f} s ({self.s.size_bytes * 8 / d.download_s / 1e6:.2f} Mbit/s)"
                   if d.complete and d.download_s else f"FAILED: {d.error or 'incomplete'}")
            self.on_event(f"BitTorrent download {k}/{len(self.runs)} ({d.name}) {how}; {done} complete so far")
            if not self._dry(self.s.leecher):
                self.waiting_for = "the last connections to close before the next download"
                await asyncio.sleep(1.0)   # let the last connections close before the next pair starts
            self.waiting_for = ""

    async def _one(self, d: BtDownload) -> None:
        s = self.s
        torrent = f"{self.seed_dir}/payload.torrent"
        d.seeder_argv = seeder_argv(s, d.protocol, torrent, self.seed_dir)
        out_dir = f"{self.leech_dir}/{d.name}"
        d.leecher_argv = leecher_argv(s, d.protocol, self.magnet, out_dir)
        d.expected_sha256 = self.payload_sha256
        port = s.seed_ports[d.protocol]
        seeder = await self.pool[s.seeder].spawn(d.seeder_argv, note=f"seeder for {d.name}")
        self._live.append(seeder)
        d.seeder_started, d.server_pid = time.time(), seeder.pid
        seeder_reader = _Lines(seeder, d.seeder_lines)
        try:
            if not self._dry(s.seeder):
                # Ready when the tracker has the seeder (its port) announced after it started.
                t0 = d.seeder_started

                def announced(ls: list[tuple[float, str]]) -> bool:
                    for t, l in ls:
                        ev = webtorrent.parse_tracker(l).events
                        if t >= t0 and ev and ev[0]["event"] in ("start", "complete") and \
                                ev[0]["addr"].endswith(f":{port}"):
                            return True
                    return False
                assert self._tracker_reader is not None
                self.waiting_for = (f"the {d.name} seeder (port {port}) to announce itself to the tracker "
                                    f"(up to {format_seconds(s.seeder_ready_timeout_s)})")
                ok = await self._tracker_reader.wait_for(announced, s.seeder_ready_timeout_s)
                if not ok:
                    d.error = (f"seeder on port {port} not announced to the tracker within "
                               f"{s.seeder_ready_timeout_s:g} s" + (" (it exited)" if seeder_reader.ended else ""))
                    return
                d.seeder_ready = time.time()
            self.waiting_for = ""
            await self._run(s.leecher, ("mkdir", "--", out_dir), "leecher output dir")
            leecher = await self.pool[s.leecher].spawn(d.leecher_argv, note=f"leecher {d.name}")
            self._live.append(leecher)
            d.client_started, d.client_pid = time.time(), leecher.pid
            reader = _Lines(leecher, d.lines)
            done, _ = await asyncio.wait([reader.task], timeout=s.download_timeout_s)
            if not done:
                d.error = f"did not finish within {s.download_timeout_s:g} s"
                await leecher.terminate(grace=3)
                await asyncio.wait([reader.task], timeout=5)
            res = await leecher.wait(10, stdout=d.text())
            self._live.remove(leecher)
            d.exited, d.client_status = time.time(), res.exit_status
            stamped = [(t, l) for t, l in d.lines if l.strip()]
            d.first_output = stamped[0][0] if stamped else None
            d.done_at = next((t for t, l in d.lines if l.startswith("torrent downloaded successfully")), None)
            if res.exit_status not in (0, None) and d.error is None:
                try:
                    out = webtorrent.parse_client(d.text())
                    why = f": {out.errors[0]}" if out.errors else ""
                except ParseError as exc:        # an output ctl cannot read (a number out of range)
                    why = f" (its output unreadable: {exc})"
                d.error = f"leecher exit {res.exit_status}" + why
            if d.done_at is None and d.error is None and not self._dry(s.leecher):
                d.error = "the leecher never reported completion"
            self._raw(s.leecher, f"webtorrent-leecher-{d.name}.txt",
                      "".join(f"{t:.6f} {l}\n" for t, l in d.lines))
            self.waiting_for = f"{s.leecher} to hash {d.name}'s file (SHA-256)"
            path = f"{out_dir}/{self.torrent.get('name') or PAYLOAD}"
            got = await self._run(s.leecher, ("sha256sum", path), f"hash of {d.name}'s file", timeout=120,
                                  assume="0" * 64 + f"  {path}", check=False)
            d.sha256 = got.split()[0] if got.split() else None
            sz = await self._run(s.leecher, ("stat", "-c", "%s", path), "size of the file", check=False,
                                 assume=str(s.size_bytes))
            d.size_bytes = int(sz.strip()) if sz.strip().isdigit() else None
            if d.sha256 != d.expected_sha256 and d.error is None and not self._dry(s.leecher):
                d.error = "downloaded file differs from the payload (SHA-256)"
            # Each copy is as large as the payload: remove it now (exactly the directory this run made).
            await self._run(s.leecher, ("rm", "-r", "--", out_dir), f"remove {d.name}'s copy", check=False)
        finally:
            self.waiting_for = f"the {d.name} seeder to stop"
            await seeder.terminate(grace=5)   # graceful: it sends the tracker its `stop`
            await seeder.wait(10, stdout="\n".join(l for _, l in d.seeder_lines))
            if seeder in self._live:
                self._live.remove(seeder)
            await asyncio.wait([seeder_reader.task], timeout=5)
            self._raw(s.seeder, f"webtorrent-seeder-{d.name}.txt",
                      "".join(f"{t:.6f} {l}\n" for t, l in d.seeder_lines))

    async def collect_servers(self, timeout_s: float = 15.0) -> None:
        if self._tracker is not None and self._tracker in self._live:
            await self._tracker.terminate(grace=3)
            await self._tracker.wait(5, stdout="\n".join(l for _, l in self.tracker_lines))
            self._live.remove(self._tracker)
            if self._tracker_reader is not None:
                await asyncio.wait([self._tracker_reader.task], timeout=5)
        self._raw(self.s.tracker_host, "bittorrent-tracker.txt", "".join(f"{t:.6f} {l}\n" for t, l in self.tracker_lines))

    async def stop_all(self, skip_hosts: set[str] = frozenset()) -> None:
        """End every process this runner started (by PID) and remove the work directories it made."""
        procs = [p for p in self._live if p.host not in skip_hosts]
        await asyncio.gather(*(p.terminate(grace=3) for p in procs), return_exceptions=True)
        await asyncio.gather(*(p.wait(5) for p in procs), return_exceptions=True)
        self._live = [p for p in self._live if p not in procs]
        for host, path in list(self.dirs):
            if host in skip_hosts or not re.fullmatch(r"/tmp/ctl-bt-(seed|leech)\.[A-Za-z0-9]+", path):
                continue   # never remove anything but a directory this run's mktemp made
            try:
                await self.pool[host].run(Command(("rm", "-r", "--", path), timeout=60, check=False, mutates=True,
                                                  note="remove the run's BitTorrent work directory"))
                self.dirs.remove((host, path))
            except SSHError:
                pass
