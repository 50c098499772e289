"""webtorrent-cli and bittorrent-tracker output (the mptcp-bittorrent scenario).

Formats from tests/fixtures/recorded/06_webtorrent_bittorrent_tracker.md (webtorrent-cli
6.0.1 / webtorrent 3.0.21, bittorrent-tracker 11.2.3), verified on its captures:

- the client redraws a frame every second unless `--quiet` (with stdout a pipe: no ANSI,
  frames separated by a line of 60 spaces): `Downloading:|Seeding: NAME`, `Speed: ..
  Downloaded: X/Y Uploaded: Z`, `Running time: ..  Time remaining: ..  Peers: U/N`, one row
  per peer (`S|NN%|?  TYPE  ip:port  downloaded  dl/s  ul/s`);
- one-shot lines: `fetching torrent metadata from N peers`, `torrent downloaded successfully
  from A/B peers in Ns!`, `Magnet: magnet:?xt=urn:btih:HASH...`, `Error: ...` (on stdout),
  `UNEXPECTED ERROR: ...`, `webtorrent is exiting...`;
- sizes are prettier-bytes: base 1000, no decimals at >= 10 of a unit, so `12 MB` is only
  +-0.5 MB: never decide completion from them (the scenario checks the file's hash);
- the tracker prints `[ISO-time ]start|update|complete|stop: ADDR` per announce (older
  releases without the time stamp) and its listening URLs at start.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from controller.errors import ParseError
from controller.parsers import numbers

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SIZE = r"[\d.]+ [KMGTPEZY]?B"
_NAME = re.compile(r"^(?P<status>Seeding|Downloading): (?P<name>.*)$")
_SPEED = re.compile(rf"^Speed: (?P<dl>{_SIZE})/s Downloaded: (?P<done>{_SIZE})/(?P<total>{_SIZE}) "
                    rf"Uploaded: (?P<up>{_SIZE})$")
# The running time stops at the first "  Time remaining: " (a tempered token: a lazy `.+?` there was tried at
# every later occurrence, each with a scan to the end for "Peers": quadratic).
_RUNNING = re.compile(r"^Running time: (?P<rt>(?:(?!  Time remaining: ).)+)  Time remaining: (?P<eta>.+?)  "
                      r"Peers: (?P<unchoked>\d+)/(?P<peers>\d+)$")
_PEER = re.compile(rf"^(?P<prog>S|\d+%|\?)\s+(?P<type>WEBSEED|WEBRTC|TCPIN|TCPOUT|UTPIN|UTPOUT|UNKNOWN)\s+"
                   rf"(?P<addr>\S+)\s+(?P<down>{_SIZE})\s+(?P<dls>{_SIZE})/s\s+(?P<uls>{_SIZE})/s")
_DONE = re.compile(r"^torrent downloaded successfully from (?P<active>\d+)/(?P<peers>\d+) peers in (?P<secs>\d+)s!$")
_MAGNET = re.compile(r"(?:^|Magnet: )(?P<uri>magnet:\?xt=urn:btih:(?P<ih>[0-9a-f]{40})\S*)")
_INFOHASH = re.compile(r"^Info hash: (?P<ih>[0-9a-f]{40})$")
_FETCH = re.compile(r"^fetching torrent metadata from (?P<n>\d+) peers$")
_TRACKER_EVENT = re.compile(r"^(?:(?P<ts>\d{4}-\d\d-\d\dT[\d:.]+Z) )?(?P<ev>start|update|complete|stop): (?P<addr>.+)$")
_TRACKER_URL = re.compile(r"^(?:(?P<ts>\d{4}-\d\d-\d\dT[\d:.]+Z) )?(?P<kind>HTTP tracker|UDP tracker|UDP6 tracker|"
                          r"WebSocket tracker|Tracker stats): (?P<url>\S+)$")
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15, "EB": 10**18, "ZB": 10**21,
          "YB": 10**24}


def size_bytes(text: str) -> int:
    """prettier-bytes text (`2.1 MB`, `0 B`, `12 MB`) -> bytes (base 1000, as printed)."""
    num, unit = text.split()
    try:
        return numbers.scaled(num, _UNITS[unit], "webtorrent: size")
    except (KeyError, ValueError):
        raise ParseError(f"not a prettier-bytes size: {text!r}") from None


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text).replace("\r", "")


@dataclass
class PeerRow:
    progress: str
    type: str
    addr: str
    downloaded: int
    download_bps: float
    upload_bps: float


@dataclass
class Frame:
    status: str                      # Seeding | Downloading
    name: str
    speed_bps: float | None = None   # the torrent's download speed, bit/s
    downloaded: int | None = None
    total: int | None = None
    uploaded: int | None = None
    running_time: str | None = None
    remaining: str | None = None
    unchoked: int | None = None
    peers: int | None = None
    peer_rows: list[PeerRow] = field(default_factory=list)


@dataclass
class ClientOutput:
    frames: list[Frame] = field(default_factory=list)
    done: dict | None = None          # {"active": A, "peers": B, "seconds": N}
    info_hash: str | None = None
    magnet: str | None = None
    errors: list[str] = field(default_factory=list)
    unexpected_error: bool = False
    exiting: bool = False
    metadata_fetch: bool = False

    @property
    def peer_types(self) -> list[str]:
        return sorted({r.type for f in self.frames for r in f.peer_rows})

    @property
    def peer_addrs(self) -> list[str]:
        return sorted({r.addr for f in self.frames for r in f.peer_rows})

    def to_json(self) -> dict:
        d = asdict(self)
        d["peer_types"] = self.peer_types
        d["peer_addrs"] = self.peer_addrs
        return d


def parse_client(text: str) -> ClientOutput:
    """A webtorrent-cli `download` / `seed` stdout (not a TTY capture: strip ANSI first if it is)."""
    out = ClientOutput()
    frame: Frame | None = None
    for raw in strip_ansi(text).split("\n"):
        line = raw.rstrip()
        if not line:
            continue
        m = _NAME.match(line)
        if m:
            frame = Frame(m["status"], m["name"])
            out.frames.append(frame)
            continue
        m = _SPEED.match(line)
        if m and frame is not None:
            frame.speed_bps = size_bytes(m["dl"]) * 8.0
            frame.downloaded, frame.total, frame.uploaded = size_bytes(m["done"]), size_bytes(m["total"]), \
                size_bytes(m["up"])
            continue
        m = _RUNNING.match(line)
        if m and frame is not None:
            frame.running_time, frame.remaining = m["rt"], m["eta"]
            frame.unchoked, frame.peers = int(m["unchoked"]), int(m["peers"])
            continue
        m = _PEER.match(line)
        if m and frame is not None:
            frame.peer_rows.append(PeerRow(m["prog"], m["type"], m["addr"], size_bytes(m["down"]),
                                           size_bytes(m["dls"].removesuffix("/s")) * 8.0,
                                           size_bytes(m["uls"].removesuffix("/s")) * 8.0))
            continue
        m = _DONE.match(line)
        if m:
            out.done = {"active": int(m["active"]), "peers": int(m["peers"]), "seconds": int(m["secs"])}
            continue
        m = _INFOHASH.match(line)
        if m:
            out.info_hash = m["ih"]
            continue
        m = _MAGNET.search(line)
        if m:
            out.magnet, out.info_hash = m["uri"], m["ih"]
            continue
        if _FETCH.match(line):
            out.metadata_fetch = True
        elif line.startswith("Error: "):
            out.errors.append(line[len("Error: "):])
        elif line.startswith("UNEXPECTED ERROR:"):
            out.unexpected_error = True
        elif line.strip() == "webtorrent is exiting...":
            out.exiting = True
    return out


@dataclass
class TrackerOutput:
    urls: dict[str, str] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)   # {"time": ISO or None, "event", "addr"}
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    def peers(self, event: str | None = None) -> list[str]:
        return sorted({e["addr"] for e in self.events if event is None or e["event"] == event})


def parse_tracker(text: str) -> TrackerOutput:
    out = TrackerOutput()
    for line in strip_ansi(text).splitlines():
        line = line.strip()
        m = _TRACKER_URL.match(line)
        if m:
            out.urls[m["kind"]] = m["url"]
            continue
        m = _TRACKER_EVENT.match(line)
        if m:
            out.events.append({"time": m["ts"], "event": m["ev"], "addr": m["addr"]})
            continue
        if "WARNING: " in line:
            out.warnings.append(line.split("WARNING: ", 1)[1])
    return out


def parse_info(text: str) -> dict:
    """`webtorrent info FILE` (pretty JSON, no trailing newline): the fields a scenario needs."""
    try:
        data = numbers.loads(text)
    except ValueError as exc:
        raise ParseError(f"webtorrent info: not JSON: {exc}") from None
    if not isinstance(data, dict) or not re.fullmatch(r"[0-9a-f]{40}", str(data.get("infoHash", ""))):
        raise ParseError("webtorrent info: no 40-hex infoHash")
    return {"name": data.get("name"), "info_hash": data["infoHash"], "length": data.get("length"),
            "piece_length": data.get("pieceLength"), "pieces": len(data.get("pieces") or []),
            "announce": list(data.get("announce") or [])}


def to_json(text: str) -> Any:
    """`ctl parse webtorrent FILE`: a tracker log, `webtorrent info` JSON, or client output."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return parse_info(text)
    tracker = parse_tracker(text)
    if tracker.urls or tracker.events:
        return {"kind": "tracker", **tracker.to_json()}
    client = parse_client(text)
    if not (client.frames or client.done or client.info_hash or client.magnet or client.metadata_fetch
            or client.errors or client.unexpected_error or client.exiting):
        raise ParseError("webtorrent: nothing recognisable (expected webtorrent-cli download/seed output, "
                         "`webtorrent info` JSON, or a bittorrent-tracker log)")
    return {"kind": "client", **client.to_json()}


def progress(stamped: list[tuple[float, str]]) -> list[tuple[float, int]]:
    """(arrival time, bytes downloaded) of every frame's Speed line, from time-stamped lines."""
    out = []
    for t, line in stamped:
        m = _SPEED.match(strip_ansi(line).rstrip())
        if m:
            out.append((t, size_bytes(m["done"])))
    return out
