"""Parsers for what the field logger reads on the host (pure: text in, values out).

* `ping -n -D -O` lines -> reply RTTs, unanswered probes, send errors; per-second RTT and jitter;
* iperf3 text interval lines (client, `-R` download, `--forceflush`) -> bytes and bit/s per interval;
* webtorrent-cli's once-a-second status frame (stdout not a TTY) -> download rate, connected, unchoked
  and active peers (formats: tests/fixtures/recorded/06_webtorrent_bittorrent_tracker.md);
* /proc/net/dev -> one interface's counters.

A line of ping, iperf3 or webtorrent that is neither data nor one of the tool's known other lines
(headers, summaries, separators: `ping_other`, `iperf3_other`, WebtorrentFrames.understood) is not
understood: `Unread` counts it, per source, and keeps the first few (bounded, control characters
stripped), so the record says how much of a tool's output the logger could not read. The tools' own
error messages are among them: the logger does not read them (they stay in the raw log).

Definitions (they are what the report's numbers mean):
* RTT of a second: mean of the ping replies received in it; jitter of a second: mean absolute
  difference between consecutive replies' RTTs (RFC 3550 / RFC 3393 instantaneous packet delay
  variation of a round trip), the first reply compared with the last one of the previous second;
* active peers (the WiBro paper's "active (uploading) peers"): peers we are downloading from right now,
  i.e. peer rows with a download speed > 0; unchoked = webtorrent's `Peers: <unchoked>/<total>`.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nodes.modem.ranges import within

# What a tool prints is untrusted (issue 23): a number is taken only when it is one the quantity can be.
# "1e999", 400 digits or "1.2.3" in a ping, iperf3 or webtorrent line makes the line unreadable (it is
# left in the raw log, re-parseable), never an infinity or a traceback in the spool.
MAX_COUNTER = 2 ** 64 - 1           # /proc/net/dev and the tools' byte counters are u64
MAX_RTT_MS = 3_600_000.0            # an hour: a reply ping still matches is seconds old; beyond, no RTT
MAX_RATE_BPS = 1e13                 # 10 Tbit/s: above any link a modem host has
_DECIMAL = re.compile(r"[0-9]{1,20}(?:\.[0-9]{1,12})?")


def number(text: Optional[str], hi: float) -> Optional[float]:
    """A decimal printed by a tool, within [0, hi]; None for anything else (never inf, never a raise)."""
    if text is None or not _DECIMAL.fullmatch(text):
        return None
    return within(float(text), 0.0, hi)


def count(text: Optional[str]) -> Optional[int]:
    """A counter printed by a tool (decimal digits, u64); None for anything else."""
    if text is None or not re.fullmatch(r"[0-9]{1,20}", text):
        return None
    return within(int(text), 0, MAX_COUNTER, integral=True)

# ---- ping ------------------------------------------------------------------------------------------

# A reply line is read in three steps, each linear: the head, the first icmp_seq=N, the first " time=X ms"
# after it. (One pattern `... .*?icmp_seq=(\d+).*? time...` tried every later icmp_seq, each with a scan
# to the end: quadratic in a line of many. No atomic groups: this runs under a host's python3 >= 3.9.)
_PING_HEAD = re.compile(r"^(?:\[(?P<ts>\d+\.\d+)\] )?\d+ bytes from (?P<src>\S+?):? ")
_PING_SEQ = re.compile(r"icmp_seq=(?P<seq>\d+)")
_PING_TIME = re.compile(r" time[=<](?P<rtt>[\d.]+) ms")
_PING_NOANSWER = re.compile(r"^(?:\[(?P<ts>\d+\.\d+)\] )?no answer yet for icmp_seq=(?P<seq>\d+)")
_PING_ERROR = re.compile(r"^(?:\[(?P<ts>\d+\.\d+)\] )?(?:ping: )?(?P<msg>(?:sendmsg|connect|sendto): .*|"
                         r"From \S+ icmp_seq=\d+ .*)$")


def parse_ping_line(line: str) -> Optional[Tuple[str, Optional[float], Optional[float]]]:
    """("reply", ts, rtt_ms) | ("lost", ts, None) | ("error", ts, None) | None for other lines."""
    s = line.strip()
    m = _PING_HEAD.match(s)
    seq = _PING_SEQ.search(s, m.end()) if m else None
    rtt = _PING_TIME.search(s, seq.end()) if seq else None
    if m and rtt:
        ms = number(rtt.group("rtt"), MAX_RTT_MS)
        return ("reply", _f(m.group("ts")), ms) if ms is not None else None
    m = _PING_NOANSWER.match(s)
    if m:
        return "lost", _f(m.group("ts")), None
    m = _PING_ERROR.match(s)
    if m:
        return "error", _f(m.group("ts")), None
    return None


# What ping prints besides replies, unanswered probes and send errors (iputils ping -n -D -O): the header,
# the statistics at its end, blank lines.
_PING_OTHER = re.compile(r"^(?:PING \S+ \(\S+\) \d+\(\d+\) bytes of data\.|--- \S+ ping statistics ---|"
                         r"\d+ packets transmitted, \d+ (?:packets )?received\b.*|rtt min/avg/max/mdev = .*|)$")


def ping_other(line: str) -> bool:
    """A line ping prints that carries no probe (header, statistics, blank): read, nothing to count."""
    return _PING_OTHER.match(line.strip()) is not None


def _f(x: Optional[str]) -> Optional[float]:
    return None if x is None else number(x, 1e11)        # ping -D: Unix seconds


def rtt_stats(rtts: Sequence[float], previous: Optional[float]) -> Dict[str, float]:
    """Per-second RTT fields from the replies of that second (in arrival order)."""
    if not rtts:
        return {}
    out = {"rtt_ms": sum(rtts) / len(rtts), "rtt_min_ms": float(min(rtts)), "rtt_max_ms": float(max(rtts))}
    seq = ([previous] if previous is not None else []) + list(rtts)
    if len(seq) >= 2:
        diffs = [abs(b - a) for a, b in zip(seq, seq[1:])]
        out["jitter_ms"] = sum(diffs) / len(diffs)
    return out


# ---- iperf3 text ------------------------------------------------------------------------------------

_IPERF_INTERVAL = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<start>[\d.]+)-(?P<end>[\d.]+)\s+sec\s+(?P<xfer>[\d.]+)\s+(?P<xunit>[KMGT]?)Bytes\s+"
    r"(?P<rate>[\d.]+)\s+(?P<runit>[KMGT]?)bits/sec(?P<rest>.*)$")
_BYTES = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}   # iperf3 prints bytes in 2^10
_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}                     # and bit/s in 10^3


def parse_iperf3_interval(line: str, streams: int = 1) -> Optional[Dict[str, float]]:
    """One per-interval line -> {"start", "end", "bytes", "bps"}; None for the end summary
    ("sender"/"receiver"), headers and, with several streams, the per-stream lines (the [SUM] counts)."""
    m = _IPERF_INTERVAL.match(line.strip())
    if not m:
        return None
    rest = m.group("rest")
    if "sender" in rest or "receiver" in rest:
        return None
    if (streams > 1) != (m.group("id") == "SUM"):
        return None
    start, end = number(m.group("start"), 1e9), number(m.group("end"), 1e9)
    xfer, rate = number(m.group("xfer"), MAX_COUNTER), number(m.group("rate"), MAX_RATE_BPS)
    if start is None or end is None or xfer is None or rate is None:
        return None
    nbytes = within(xfer * _BYTES[m.group("xunit")], 0.0, float(MAX_COUNTER))
    bps = within(rate * _BITS[m.group("runit")], 0.0, MAX_RATE_BPS)
    if nbytes is None or bps is None:
        return None
    return {"start": start, "end": end, "bytes": nbytes, "bps": bps}


# What iperf3 -c ... -R -i 1 --forceflush prints besides its interval lines: the connection lines, the
# column header, the separator before the totals, the totals (sender / receiver, [SUM] and per stream),
# `iperf Done.`, the note of a client ended by a signal (the logger's own stop), blank lines.
_IPERF_OTHER = re.compile(r"^(?:Connecting to host \S+, port \d+|Reverse mode, remote host \S+ is sending|"
                          r"\[\s*\d+\] local \S+ port \d+ connected to \S+ port \d+|\[ ID\] Interval .*|"
                          r"(?:- )+-|iperf Done\.|iperf3: interrupt - the client has terminated|)$")


def iperf3_other(line: str) -> bool:
    """A line iperf3 prints that is no interval of the download: the connection, headers, the totals
    (an interval-shaped line with readable numbers that parse_iperf3_interval leaves out), blank."""
    s = line.strip()
    if _IPERF_OTHER.match(s):
        return True
    m = _IPERF_INTERVAL.match(s)
    return m is not None and all(number(m.group(k), 1e18) is not None for k in ("start", "end", "xfer", "rate"))


# ---- lines not understood ------------------------------------------------------------------------------

class Unread:
    """Lines of one source that were not understood: how many, and the first KEEP of them (each cut to
    MAX_CHARS characters, control and format characters removed: a tool's bytes are untrusted and a reader
    sees these in a report). Not thread-safe: the source that owns it holds its lock."""

    KEEP = 5
    MAX_CHARS = 160

    def __init__(self) -> None:
        self.count = 0
        self._taken = 0
        self.first: List[str] = []
        self._first_taken = 0

    def add(self, line: str) -> None:
        self.count += 1
        if len(self.first) < self.KEEP:
            self.first.append(printable(line, self.MAX_CHARS))

    def take(self) -> Tuple[int, List[Tuple[int, str]]]:
        """Lines not understood since the last take, and the kept ones not taken yet as (their number
        among this source's lines not understood, from 1; the line)."""
        n, self._taken = self.count - self._taken, self.count
        new = [(i + 1, self.first[i]) for i in range(self._first_taken, len(self.first))]
        self._first_taken = len(self.first)
        return n, new


def printable(text: str, limit: int) -> str:
    """`text` without control, format, surrogate or private-use characters (ESC, bidi overrides, NUL...;
    a tab is a space), at most `limit` characters (then `...`). Linear."""
    out = []
    for ch in text[:limit * 4]:
        if ch == "\t":
            out.append(" ")
        elif not unicodedata.category(ch).startswith("C"):
            out.append(ch)
        if len(out) > limit:
            break
    s = "".join(out)
    return s if len(s) <= limit else s[:limit - 3] + "..."


# ---- webtorrent-cli status frames --------------------------------------------------------------------

_PB = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}          # prettier-bytes: base 1000
_SIZE = r"[\d.]+ [KMGTPEZY]?B"
_WT_SPEED = re.compile(rf"^Speed: (?P<dl>{_SIZE})/s Downloaded: (?P<done>{_SIZE})/(?P<total>{_SIZE}) "
                       rf"Uploaded: (?P<up>{_SIZE})$")
_WT_RUNNING = re.compile(r"^Running time: (?P<rt>(?:(?!  Time remaining: ).)+)  Time remaining: (?P<eta>.+?)  "
                         r"Peers: (?P<unchoked>\d+)/(?P<peers>\d+)$")     # tempered: see parsers/webtorrent.py
_WT_PEER = re.compile(rf"^(?P<prog>S|\d+%|\?)\s+(?P<type>WEBSEED|WEBRTC|TCPIN|TCPOUT|UTPIN|UTPOUT|UNKNOWN)\s+"
                      rf"(?P<addr>\S+)\s+(?P<down>{_SIZE})\s+(?P<dls>{_SIZE})/s\s+(?P<uls>{_SIZE})/s")
_WT_MORE = re.compile(r"^\.\.\. and (?P<n>\d+) more")
_WT_DONE = re.compile(r"^torrent downloaded successfully from (?P<active>\d+)/(?P<peers>\d+) peers in (?P<secs>\d+)s!$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# The frame's other lines (webtorrent-cli 5.x bin/cmd.js; tests/fixtures/recorded/06_webtorrent_bittorrent_tracker.md)
# and the lines around the frames: read, nothing to count.
_WT_OTHER = re.compile(r"^(?:Info hash: [0-9a-f]{40}|Magnet: magnet:\S+|Torrent port: \d+|Server running at: \S+|"
                       r"Downloading to: .+|Queued peers: \d+  Blocked peers: \d+  Hotswaps: \d+|"
                       r"fetching torrent metadata from \d+ peers|verifying existing torrent data\.\.\.|"
                       r"webtorrent is exiting\.\.\.)$")


def pretty_bytes(text: str) -> float:
    """'1.9 MB' -> 1.9e6 (webtorrent prints sizes with prettier-bytes, base 1000); ValueError for a size no
    prettier-bytes prints (1e999, 400 digits, beyond a u64): the frame line is not read."""
    num, unit = text.split()
    v = number(num, MAX_COUNTER)
    v = None if v is None or unit[:-1] not in _PB else within(v * _PB[unit[:-1]], 0.0, float(MAX_COUNTER))
    if v is None:
        raise ValueError("not a size: %.40r" % text)
    return v


def _count(text: str) -> int:
    n = count(text)
    if n is None:
        raise ValueError("not a count: %.40r" % text)
    return n


class WebtorrentFrames:
    """Feed stdout lines; `feed` returns a finished frame's values when its 60-space end line arrives.

    A frame: {"dl_bps", "downloaded_bytes", "total_bytes", "uploaded_bytes", "peers_connected",
    "peers_unchoked", "peers_active", "peers_listed", "peers_more"}. `peers_more` > 0 means the peer list
    was cut ("... and N more"), so `peers_active` is a lower bound for that second."""

    def __init__(self) -> None:
        self._cur: Dict[str, Any] = {}
        self.done: Optional[Dict[str, int]] = None
        self.understood = True          # whether the last line fed was one webtorrent-cli prints

    def feed(self, line: str) -> Optional[Dict[str, Any]]:
        raw = _ANSI.sub("", line.rstrip("\n"))
        s = raw.strip()
        self.understood = True
        if not s:
            # The frame's last line is 60 spaces; the empty line between header and peers is not.
            if len(raw) >= 40 and self._cur.get("dl_bps") is not None:
                frame, self._cur = self._cur, {}
                frame.setdefault("peers_active", 0)
                frame.setdefault("peers_listed", 0)
                frame.setdefault("peers_more", 0)
                return frame
            return None
        if s.startswith(("Downloading: ", "Seeding: ")):
            self._cur = {}
            return None
        try:
            self.understood = self._line(s) or _WT_OTHER.match(s) is not None
        except ValueError:           # a number no webtorrent prints: the line is not read (it is in the raw log)
            self.understood = False
        return None

    def _line(self, s: str) -> bool:
        """Read one data line of a frame; False: not one (ValueError: one with a number no webtorrent prints)."""
        m = _WT_SPEED.match(s)
        if m:
            self._cur.update(dl_bps=pretty_bytes(m.group("dl")) * 8, downloaded_bytes=int(pretty_bytes(m.group("done"))),
                             total_bytes=int(pretty_bytes(m.group("total"))), uploaded_bytes=int(pretty_bytes(m.group("up"))))
            return True
        m = _WT_RUNNING.match(s)
        if m:
            self._cur.update(peers_unchoked=_count(m.group("unchoked")), peers_connected=_count(m.group("peers")))
            return True
        m = _WT_PEER.match(s)
        if m:
            dls = pretty_bytes(m.group("dls"))
            self._cur["peers_listed"] = self._cur.get("peers_listed", 0) + 1
            if dls > 0:
                self._cur["peers_active"] = self._cur.get("peers_active", 0) + 1
            else:
                self._cur.setdefault("peers_active", 0)
            return True
        m = _WT_MORE.match(s)
        if m:
            self._cur["peers_more"] = _count(m.group("n"))
            return True
        m = _WT_DONE.match(s)
        if m:
            self.done = {"active": _count(m.group("active")), "peers": _count(m.group("peers")),
                         "seconds": _count(m.group("secs"))}
            return True
        return False


def parse_webtorrent(text: str) -> List[Dict[str, Any]]:
    p = WebtorrentFrames()
    return [f for f in (p.feed(line) for line in text.splitlines()) if f is not None]


# ---- /proc/net/dev ------------------------------------------------------------------------------------

NETDEV_FIELDS = ("rx_bytes", "rx_packets", "rx_dropped", "tx_bytes", "tx_packets", "tx_dropped")


def parse_netdev(text: str, iface: str) -> Optional[Dict[str, int]]:
    """Counters of one interface from /proc/net/dev text (None: no such interface right now)."""
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        if name.strip() != iface:
            continue
        v = rest.split()
        if len(v) < 16:
            return None
        # columns: rx bytes packets errs drop fifo frame compressed multicast, tx bytes packets errs drop ...
        vals = [count(v[i]) for i in (0, 1, 3, 8, 9, 11)]
        if any(x is None for x in vals):
            return None                      # not the kernel's counters
        return dict(zip(NETDEV_FIELDS, vals))  # type: ignore[arg-type]
    return None


def iface_rates(prev: Optional[Tuple[int, Dict[str, int]]], now: Tuple[int, Dict[str, int]]) -> Dict[str, float]:
    """rx_bps / tx_bps between two readings (t ns, counters); nothing across a counter reset."""
    if prev is None or now[0] <= prev[0]:
        return {}
    dt = (now[0] - prev[0]) / 1e9
    drx = now[1]["rx_bytes"] - prev[1]["rx_bytes"]
    dtx = now[1]["tx_bytes"] - prev[1]["tx_bytes"]
    if drx < 0 or dtx < 0:     # interface re-created (modem reset re-enumerates wwan0): no rate
        return {}
    return {"rx_bps": drx * 8 / dt, "tx_bps": dtx * 8 / dt}
