"""Parser for `ss` socket listings with TCP / MPTCP details (iproute2 6.1 verified).

Handles `ss -tinM`, `ss -tiM`, `ss -tin`, `ss -Mni`, `ss -Mi`, `ss -M` (and -O one-line, -H no
header, -p process column). Pure: text in, frozen dataclasses out. Facts from the recorded real
output (tests/fixtures/recorded/04_linux_mptcp.md, generated/ss_mptcp_during_transfer.*.txt):

- A socket line is followed by an info line that starts with a TAB (then a space). ss pads lines
  (and the header) with spaces to the terminal width; padding means nothing.
- The Netid column is printed only when more than one socket kind is listed (`-tM`): `ss -M` and
  `ss -ti` have no Netid. The info line says what it is: tcp_info (rtt:, cwnd:, ...) or mptcp_info
  (subflows:, token:, write_seq:, ...).
- Without -n, rates are humanized with 3 significant digits and decimal prefixes ("31.4Mbps",
  "3.66Gbps"); with -n they are raw ("28700827bps"). Both become int bit/s here, and
  `TcpInfo.rates_exact` is False when any rate was humanized (the value is then only good to 3 digits).
- Units printed by ss: rtt/rttvar/minrtt/rcv_rtt/rto/ato and lastsnd/lastrcv/lastack in ms; cwnd and
  ssthresh in SEGMENTS (not bytes, unlike iperf3's snd_cwnd); bytes_* and snd_wnd in bytes.
- tcp-ulp-mptcp: "flags:<letters> token:<remote>(id:N)/<local>(id:N) seq:<hex> sfseq:<hex>
  ssnoff:<hex> maplen:<hex>" -- sfseq and maplen are hex too (the server capture has "sfseq:205da1",
  "maplen:52e8"). Tokens are printed with a 4-digit minimum, mptcp_info's token without padding and
  `ip mptcp monitor`'s as 8 digits: all tokens are normalised here to 8 lowercase hex digits so they
  can be joined across tools (the text as printed is kept).
- mptcp_info omits zero-valued fields, so a missing "subflows:" means 0. `subflows` counts the
  subflows ADDED to the initial one (kernel mptcpi_subflows): 2 joined subflows => "subflows:2",
  3 TCP sockets with tcp-ulp-mptcp. A bare "fallback" word means the connection fell back to TCP.
- Addresses: "10.2.2.1%c2:34453" (socket bound to device c2), "[::ffff:10.1.1.2]:5210" (IPv4-mapped
  IPv6: a dual-stack listener); `normalized_host` gives the IPv4 form, `host` keeps the original.
- -e/-m/-o extras (ino:, sk:, cgroup:, skmem:(...), timer:(...), "<->") come before the TCP options and
  the congestion-control name; they go to `extra`/`words` and do not hide what follows.
- Unknown tokens are never dropped: key:value pairs land in `extra`, bare words in `words`.
"""
from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from controller.errors import ParseError
from controller.parsers import numbers

STATES = frozenset({
    "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "UNCONN", "CLOSE-WAIT",
    "LAST-ACK", "LISTEN", "CLOSING", "UNKNOWN", "CLOSED",
})
# TCP options ss prints before the congestion-control name (misc/ss.c tcp_stats_print)
_TCP_OPTION_WORDS = frozenset({"ts", "sack", "ecn", "ecnseen", "fastopen"})
# per-socket extras of -e/-m/-o/--tos that ss prints BEFORE the tcp_info part; they must not hide the
# TCP options and congestion-control name that follow them
_SOCKET_EXTRA_KEYS = frozenset({"uid", "ino", "sk", "cgroup", "skmem", "timer", "fwmark", "tos", "tclass",
                                "class_id", "v6only", "mem"})
_SOCKET_EXTRA_WORDS = frozenset({"<->", "-->", "<--"})
# ss prints these rates as "<name> <value>" (a space, not a colon)
_SPACED_RATES = {"send": "send", "pacing_rate": "pacing_rate", "delivery_rate": "delivery_rate"}
# keys that only tcp_info has, and keys that only mptcp_info has (to tell an info line's kind)
_TCP_KEYS = frozenset({"rtt", "cwnd", "mss", "rto", "wscale", "rcv_space", "snd_wnd", "minrtt", "pmtu"})
_MPTCP_INFO_KEYS = frozenset({
    "subflows", "add_addr_signal", "add_addr_accepted", "subflows_max", "add_addr_signal_max",
    "add_addr_accepted_max", "write_seq", "snd_una", "rcv_nxt", "subflows_total",
})

_RATE_RE = re.compile(r"^([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)([kMGT]?)bps$")
_RATE_SCALE = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_ADDR_RE = re.compile(r"^(?P<host>\[[^\]]*\]|[^\[\]%]*?)(?:%(?P<dev>[^:]+))?:(?P<port>[^:]+)$")
_WS_RUN = re.compile(r"(\s+)")          # \s is str.isspace()'s set, as str.split() uses
_SPECIAL = re.compile(r'[()"]')
_SUBFLOW_TOKEN_RE = re.compile(
    r"^(?P<rtok>[0-9a-fA-F]+)\(id:(?P<rid>\d+)\)/(?P<ltok>[0-9a-fA-F]+)\(id:(?P<lid>\d+)\)$")


# ---------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class SockAddr:
    raw: str                   # exactly as printed: "10.2.2.1%c2:34453", "[::ffff:10.1.1.2]:5210"
    host: str                  # "10.2.2.1", "::ffff:10.1.1.2", "*"
    port: int | None           # None for "*" or a service name (use ss -n to get numbers)
    port_text: str             # the port as printed
    dev: str | None            # "%c2" -> "c2": the socket is bound to that interface
    normalized_host: str       # IPv4-mapped IPv6 -> IPv4 ("10.1.1.2"); otherwise == host


@dataclass(frozen=True)
class MptcpSubflow:
    """The tcp-ulp-mptcp part of a TCP subflow's info line."""

    flags: str                 # as printed, e.g. "Mmec", "Jjec", "Jecv"
    mp_capable_remote: bool    # M
    mp_capable_local: bool     # m
    join_remote: bool          # J
    join_local: bool           # j
    backup_remote: bool        # B
    backup_local: bool         # b
    fully_established: bool    # e
    connected: bool            # c
    map_valid: bool            # v
    remote_token: str | None   # 8 hex digits; None when ss printed 0 (not known on this side)
    remote_id: int | None
    local_token: str | None    # 8 hex digits: the MPTCP connection's token on this host
    local_id: int | None
    seq: int | None            # current mapping's data sequence number (printed in hex)
    sfseq: int | None          # mapping's subflow sequence number (printed in hex)
    ssnoff: int | None         # subflow sequence offset (printed in hex)
    maplen: int | None         # mapping length (printed in hex)
    token_text: str | None     # "0000(id:0)/dae409f8(id:0)" as printed
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def initial(self) -> bool:
        """The MP_CAPABLE (first) subflow of its connection."""
        return self.mp_capable_remote or self.mp_capable_local

    @property
    def joined(self) -> bool:
        """An additional subflow created with MP_JOIN."""
        return self.join_remote or self.join_local


@dataclass(frozen=True)
class TcpInfo:
    congestion: str | None                 # "bbr", "cubic"
    options: tuple[str, ...]               # ts, sack, ecn, ecnseen, fastopen
    wscale: tuple[int, int] | None         # (snd, rcv)
    rto_ms: float | None
    ato_ms: float | None
    rtt_ms: float | None
    rttvar_ms: float | None
    minrtt_ms: float | None
    rcv_rtt_ms: float | None
    mss: int | None
    pmtu: int | None
    rcvmss: int | None
    advmss: int | None
    cwnd: int | None                       # segments
    ssthresh: int | None                   # segments
    bytes_sent: int | None
    bytes_acked: int | None
    bytes_received: int | None
    bytes_retrans: int | None
    segs_out: int | None
    segs_in: int | None
    data_segs_out: int | None
    data_segs_in: int | None
    retrans: tuple[int, int] | None        # (currently retransmitted, total retransmits)
    lost: int | None
    unacked: int | None
    sacked: int | None
    notsent: int | None                    # bytes
    delivered: int | None
    send_bps: int | None                   # ss's estimate cwnd*mss*8/rtt, not a measurement
    pacing_rate_bps: int | None
    pacing_rate_max_bps: int | None
    delivery_rate_bps: int | None
    rates_exact: bool                      # False if ss humanized any rate (no -n): 3 significant digits
    snd_wnd: int | None                    # bytes
    rcv_space: int | None
    rcv_ssthresh: int | None
    busy_ms: int | None
    lastsnd_ms: int | None
    lastrcv_ms: int | None
    lastack_ms: int | None
    app_limited: bool
    cc_info: dict[str, dict[str, Any]]     # "bbr:(bw:19.1Mbps,mrtt:0.005,...)" -> {"bbr": {"bw": 19100000, ...}}
    ulp: str | None                        # "mptcp" for "tcp-ulp-mptcp", "tls", ...
    mptcp: MptcpSubflow | None
    ulp_info: dict[str, str] = field(default_factory=dict)   # key:value of a non-MPTCP ULP
    words: tuple[str, ...] = ()            # other bare words, in order
    extra: dict[str, str] = field(default_factory=dict)      # other key:value tokens, as printed


@dataclass(frozen=True)
class MptcpInfo:
    """An MPTCP socket's mptcp_info line. ss omits zero fields: absent numbers are 0 here."""

    subflows: int              # subflows added to the initial one (not the total)
    add_addr_signal: int
    add_addr_accepted: int
    subflows_max: int
    add_addr_signal_max: int
    add_addr_accepted_max: int
    remote_key: bool           # the peer's key was received
    fallback: bool             # the connection fell back to plain TCP
    token: str | None          # 8 hex digits (as in ip mptcp monitor)
    write_seq: int | None      # printed in hex
    snd_una: int | None
    rcv_nxt: int | None
    words: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Socket:
    netid: str | None          # "tcp", "mptcp", ... ; None when ss printed no Netid column
    state: str
    recv_q: int
    send_q: int
    local: SockAddr
    peer: SockAddr
    process: str | None        # the Process column (ss -p), as printed
    tcp: TcpInfo | None
    mptcp: MptcpInfo | None
    info_text: str | None      # the info line(s), whitespace-trimmed, as printed

    @property
    def is_mptcp_socket(self) -> bool:
        """An MPTCP-level socket (one per MPTCP connection), as opposed to one of its TCP subflows."""
        return self.netid == "mptcp" or self.mptcp is not None

    @property
    def mptcp_subflow(self) -> MptcpSubflow | None:
        return self.tcp.mptcp if self.tcp is not None else None


# ---------------------------------------------------------------------------- tokens and values


def _tokens(text: str) -> list[str]:
    """Split on whitespace, except inside (...) and "..." (bbr:(...), users:(("a b",pid=1,fd=3))).

    Works on whitespace-separated pieces: only a piece holding ( ) or " can change the
    nesting, and only its special characters are looked at, so a 10 Hz sampler's info lines
    cost a C-level split, not a Python loop per character (1.9 s of a 10 s run's CPU before).
    Linear in the text; the same result as a loop per character (tests/unit: property test).
    """
    if "(" not in text and '"' not in text:
        return text.split()
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    quoted = False
    for piece in _WS_RUN.split(text):
        if not piece:
            continue
        if piece[0].isspace():
            if depth or quoted:
                cur.append(piece)
            elif cur:
                out.append("".join(cur))
                cur = []
            continue
        if quoted or depth or "(" in piece or ")" in piece or '"' in piece:
            for m in _SPECIAL.finditer(piece):
                ch = m.group()
                if quoted:
                    quoted = ch != '"'
                elif ch == '"':
                    quoted = True
                elif ch == "(":
                    depth += 1
                elif depth:
                    depth -= 1
        cur.append(piece)
    if cur:
        out.append("".join(cur))
    return out


def parse_rate(text: str) -> tuple[int, bool]:
    """ss rate ("31.4Mbps", "28700827bps", "0bps") -> (bit/s, exact?)."""
    m = _RATE_RE.match(text)
    if not m:
        raise ParseError(f"ss: {text!r} is not a rate")
    number, prefix = m.groups()
    value = numbers.scaled(number, _RATE_SCALE[prefix], f"ss: rate {text[:40]!r}")
    # humanized values carry 3 significant digits; raw ones are the integer the kernel reported
    return value, prefix == "" and "." not in number and "e" not in number.lower()


def _int(key: str, value: str) -> int:
    if len(value) < 19 and value.isascii() and value.isdigit():    # the common case, cheaply
        return int(value)
    try:
        return numbers.integer(value, f"ss: {key}")
    except ValueError:
        raise ParseError(f"ss: {key}:{value[:80]} is not an integer") from None


def _float(key: str, value: str) -> float:
    try:
        return numbers.finite(value, f"ss: {key}")
    except ValueError:
        raise ParseError(f"ss: {key}:{value[:80]} is not a number") from None


def _hex(key: str, value: str) -> int:
    try:
        return numbers.integer(value, f"ss: {key}", 16)
    except ValueError:
        raise ParseError(f"ss: {key}:{value[:80]} is not hexadecimal") from None


def _token(value: str) -> str | None:
    """Normalise an MPTCP token to 8 lowercase hex digits; 0 means "not known here"."""
    n = numbers.integer(value, "ss: token", 16)
    return None if n == 0 else f"{n:08x}"


def _ms(key: str, value: str) -> int:
    """"2820ms" -> 2820 (busy:, rwnd_limited:, sndbuf_limited: print a unit)."""
    m = re.match(r"^(\d+)ms", value)
    if not m:
        raise ParseError(f"ss: {key}:{value} is not a duration in ms")
    return numbers.integer(m.group(1), f"ss: {key}")


def _paren_dict(value: str) -> dict[str, Any]:
    """"(bw:19.1Mbps,mrtt:0.005,pacing_gain:1)" -> {"bw": 19100000, "mrtt": 0.005, "pacing_gain": 1.0}."""
    inner = value[1:-1] if value.startswith("(") and value.endswith(")") else value
    out: dict[str, Any] = {}
    for part in inner.split(","):
        if not part:
            continue
        key, sep, raw = part.partition(":")
        if not sep:
            out[key] = True
            continue
        if _RATE_RE.match(raw):
            out[key] = parse_rate(raw)[0]
        else:
            try:
                out[key] = numbers.finite(raw, f"ss: {key}")
            except ValueError:
                out[key] = raw
    return out


@functools.lru_cache(maxsize=4096)
def parse_addr(raw: str) -> SockAddr:
    """One address:port as printed (cached: a sampler sees the same few sockets 10 times a second;
    SockAddr is frozen)."""
    m = _ADDR_RE.match(raw)
    if not m:
        raise ParseError(f"ss: {raw!r} is not an address:port")
    host = m.group("host")
    if host.startswith("["):
        host = host[1:-1]
    port_text = m.group("port")
    port = int(port_text) if port_text.isdigit() else None
    return SockAddr(raw=raw, host=host, port=port, port_text=port_text, dev=m.group("dev"),
                    normalized_host=normalize_host(host))


def normalize_host(host: str) -> str:
    """"::ffff:10.1.1.2" -> "10.1.1.2"; anything else unchanged."""
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return host


# ---------------------------------------------------------------------------- info lines


def _subflow(tokens: list[str]) -> MptcpSubflow:
    values: dict[str, str] = {}
    extra: dict[str, str] = {}
    for tok in tokens:
        key, sep, value = tok.partition(":")
        if not sep:
            extra[tok] = ""
        elif key in {"flags", "token", "seq", "sfseq", "ssnoff", "maplen"} and key not in values:
            values[key] = value
        else:
            extra[key] = value
    flags = values.get("flags", "")
    unknown = set(flags) - set("MmJjBbecv")
    if unknown:
        extra["unknown_flags"] = "".join(sorted(unknown))
    remote_token = remote_id = local_token = local_id = None
    if "token" in values:
        m = _SUBFLOW_TOKEN_RE.match(values["token"])
        if not m:
            raise ParseError(f"ss: tcp-ulp-mptcp token:{values['token']} not understood")
        remote_token, local_token = _token(m.group("rtok")), _token(m.group("ltok"))
        remote_id, local_id = int(m.group("rid")), int(m.group("lid"))
    return MptcpSubflow(
        flags=flags,
        mp_capable_remote="M" in flags, mp_capable_local="m" in flags,
        join_remote="J" in flags, join_local="j" in flags,
        backup_remote="B" in flags, backup_local="b" in flags,
        fully_established="e" in flags, connected="c" in flags, map_valid="v" in flags,
        remote_token=remote_token, remote_id=remote_id, local_token=local_token, local_id=local_id,
        seq=_hex("seq", values["seq"]) if "seq" in values else None,
        sfseq=_hex("sfseq", values["sfseq"]) if "sfseq" in values else None,
        ssnoff=_hex("ssnoff", values["ssnoff"]) if "ssnoff" in values else None,
        maplen=_hex("maplen", values["maplen"]) if "maplen" in values else None,
        token_text=values.get("token"),
        extra=extra,
    )


_TCP_INT = {
    "mss": "mss", "pmtu": "pmtu", "rcvmss": "rcvmss", "advmss": "advmss", "cwnd": "cwnd",
    "ssthresh": "ssthresh", "bytes_sent": "bytes_sent", "bytes_acked": "bytes_acked",
    "bytes_received": "bytes_received", "bytes_retrans": "bytes_retrans", "segs_out": "segs_out",
    "segs_in": "segs_in", "data_segs_out": "data_segs_out", "data_segs_in": "data_segs_in",
    "lost": "lost", "unacked": "unacked", "sacked": "sacked", "notsent": "notsent",
    "delivered": "delivered", "snd_wnd": "snd_wnd", "rcv_space": "rcv_space",
    "rcv_ssthresh": "rcv_ssthresh", "lastsnd": "lastsnd_ms", "lastrcv": "lastrcv_ms",
    "lastack": "lastack_ms",
}
_TCP_FLOAT = {"rto": "rto_ms", "ato": "ato_ms", "minrtt": "minrtt_ms", "rcv_rtt": "rcv_rtt_ms"}


def _tcp_info(tokens: list[str]) -> TcpInfo:
    v: dict[str, Any] = {}
    options: list[str] = []
    words: list[str] = []
    extra: dict[str, str] = {}
    cc_info: dict[str, dict[str, Any]] = {}
    congestion: str | None = None
    exact = True
    app_limited = False
    ulp: str | None = None
    ulp_tokens: list[str] = []
    seen_key = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if ulp is not None:
            # everything after "tcp-ulp-<name>" describes the ULP (ss prints it last)
            ulp_tokens.append(tok)
            continue
        if tok.startswith("tcp-ulp-"):
            ulp = tok[len("tcp-ulp-"):]
            continue
        if tok in _SPACED_RATES:
            if i >= len(tokens):
                raise ParseError(f"ss: {tok!r} without a value")
            value = tokens[i]
            i += 1
            rate_text, _, max_text = value.partition("/")
            bps, ok = parse_rate(rate_text)
            exact = exact and ok
            v[f"{tok}_bps"] = bps
            if max_text:
                bps_max, ok = parse_rate(max_text)
                exact = exact and ok
                v[f"{tok}_max_bps"] = bps_max
            seen_key = True
            continue
        key, sep, value = tok.partition(":")
        if not sep:
            if tok in _SOCKET_EXTRA_WORDS:
                words.append(tok)
            elif tok in _TCP_OPTION_WORDS and not seen_key:
                options.append(tok)
            elif congestion is None and not seen_key:
                congestion = tok
            elif tok == "app_limited":
                app_limited = True
            else:
                words.append(tok)
            continue
        if key in _SOCKET_EXTRA_KEYS:
            extra[key] = value
            continue
        seen_key = True
        if value.startswith("("):
            # congestion-control details (bbr:(...), dctcp:(...)) and other (...) groups
            parsed = _paren_dict(value)
            if key == congestion or key in {"bbr", "dctcp", "cubic", "vegas"}:
                cc_info[key] = parsed
            else:
                extra[key] = value
        elif key in _TCP_INT:
            v[_TCP_INT[key]] = _int(key, value)
        elif key in _TCP_FLOAT:
            v[_TCP_FLOAT[key]] = _float(key, value)
        elif key == "rtt":
            avg, _, var = value.partition("/")
            v["rtt_ms"] = _float(key, avg)
            v["rttvar_ms"] = _float(key, var) if var else None
        elif key == "wscale":
            snd, _, rcv = value.partition(",")
            v["wscale"] = (_int(key, snd), _int(key, rcv))
        elif key == "retrans":
            cur, _, total = value.partition("/")
            v["retrans"] = (_int(key, cur), _int(key, total))
        elif key == "busy":
            v["busy_ms"] = _ms(key, value)
        else:
            extra[key] = value
    mptcp = None
    ulp_info: dict[str, str] = {}
    if ulp == "mptcp":
        mptcp = _subflow(ulp_tokens)
    elif ulp is not None:
        for tok in ulp_tokens:
            key, _, value = tok.partition(":")
            ulp_info[key] = value
    return TcpInfo(
        congestion=congestion, options=tuple(options), wscale=v.get("wscale"),
        rto_ms=v.get("rto_ms"), ato_ms=v.get("ato_ms"), rtt_ms=v.get("rtt_ms"),
        rttvar_ms=v.get("rttvar_ms"), minrtt_ms=v.get("minrtt_ms"), rcv_rtt_ms=v.get("rcv_rtt_ms"),
        mss=v.get("mss"), pmtu=v.get("pmtu"), rcvmss=v.get("rcvmss"), advmss=v.get("advmss"),
        cwnd=v.get("cwnd"), ssthresh=v.get("ssthresh"), bytes_sent=v.get("bytes_sent"),
        bytes_acked=v.get("bytes_acked"), bytes_received=v.get("bytes_received"),
        bytes_retrans=v.get("bytes_retrans"), segs_out=v.get("segs_out"), segs_in=v.get("segs_in"),
        data_segs_out=v.get("data_segs_out"), data_segs_in=v.get("data_segs_in"),
        retrans=v.get("retrans"), lost=v.get("lost"), unacked=v.get("unacked"), sacked=v.get("sacked"),
        notsent=v.get("notsent"), delivered=v.get("delivered"), send_bps=v.get("send_bps"),
        pacing_rate_bps=v.get("pacing_rate_bps"), pacing_rate_max_bps=v.get("pacing_rate_max_bps"),
        delivery_rate_bps=v.get("delivery_rate_bps"), rates_exact=exact, snd_wnd=v.get("snd_wnd"),
        rcv_space=v.get("rcv_space"), rcv_ssthresh=v.get("rcv_ssthresh"), busy_ms=v.get("busy_ms"),
        lastsnd_ms=v.get("lastsnd_ms"), lastrcv_ms=v.get("lastrcv_ms"), lastack_ms=v.get("lastack_ms"),
        app_limited=app_limited, cc_info=cc_info, ulp=ulp, mptcp=mptcp, ulp_info=ulp_info,
        words=tuple(words), extra=extra,
    )


_MPTCP_INT = ("subflows", "add_addr_signal", "add_addr_accepted", "subflows_max", "add_addr_signal_max",
              "add_addr_accepted_max")


def _mptcp_info(tokens: list[str]) -> MptcpInfo:
    ints = {k: 0 for k in _MPTCP_INT}
    hexes: dict[str, int] = {}
    token: str | None = None
    words: list[str] = []
    extra: dict[str, str] = {}
    for tok in tokens:
        key, sep, value = tok.partition(":")
        if not sep:
            words.append(tok)
        elif key in ints:
            ints[key] = _int(key, value)
        elif key == "token":
            token = _token(value) if re.fullmatch(r"[0-9a-fA-F]+", value) else None
            if token is None and value.strip("0"):
                raise ParseError(f"ss: mptcp token:{value} is not hexadecimal")
        elif key in {"write_seq", "snd_una", "rcv_nxt"}:
            hexes[key] = _hex(key, value)
        else:
            extra[key] = value
    return MptcpInfo(
        **ints,
        remote_key="remote_key" in words,
        fallback="fallback" in words,
        token=token,
        write_seq=hexes.get("write_seq"), snd_una=hexes.get("snd_una"), rcv_nxt=hexes.get("rcv_nxt"),
        words=tuple(w for w in words if w not in {"remote_key", "fallback"}),
        extra=extra,
    )


def _info_kind(tokens: list[str], netid: str | None) -> str:
    if netid == "mptcp":
        return "mptcp"
    if netid is not None:
        return "tcp"
    keys = {t.partition(":")[0] for t in tokens}
    if keys & _TCP_KEYS or any(t.startswith("tcp-ulp-") for t in tokens):
        return "tcp"
    if keys & _MPTCP_INFO_KEYS or {"remote_key", "fallback"} & set(tokens):
        return "mptcp"
    return "tcp"


# ---------------------------------------------------------------------------- listing


@dataclass
class _Pending:
    netid: str | None
    state: str
    recv_q: int
    send_q: int
    local: SockAddr
    peer: SockAddr
    process: str | None
    info: list[str]


def _finish(p: _Pending, default_netid: str | None) -> Socket:
    netid = p.netid if p.netid is not None else default_netid
    info_text = " ".join(p.info).strip() or None
    tcp = mptcp = None
    if info_text is not None:
        tokens = _tokens(info_text)
        if _info_kind(tokens, netid) == "mptcp":
            mptcp = _mptcp_info(tokens)
        else:
            tcp = _tcp_info(tokens)
    return Socket(netid=p.netid, state=p.state, recv_q=p.recv_q, send_q=p.send_q, local=p.local,
                  peer=p.peer, process=p.process, tcp=tcp, mptcp=mptcp, info_text=info_text)


def parse(text: str, *, netid: str | None = None, allow_empty: bool = False,
          unrecognised: list[dict[str, Any]] | None = None) -> list[Socket]:
    """Parse an ss listing. `netid` ("tcp"/"mptcp") says what a listing without a Netid column holds,
    when the caller knows the command (`ss -M` -> "mptcp"); otherwise each info line tells.
    Empty input is an error (ss always prints its header) unless `allow_empty` (for `ss -H`).
    A line that is neither a socket line nor its info is a ParseError naming it, or, given
    `unrecognised`, set aside there ({"line", "text", "why"}) and read as a blank line."""
    sockets: list[Socket] = []
    pending: _Pending | None = None
    has_netid: bool | None = None
    saw_header = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line[0].isspace():
            if pending is None:
                _refuse(unrecognised, lineno, line, f"ss: line {lineno}: info line without a socket line")
                continue
            pending.info.append(line.strip())
            continue
        words = line.split()
        if words[0] in ("Netid", "State") and not saw_header and pending is None and not sockets:
            saw_header = True
            has_netid = words[0] == "Netid"
            continue
        try:
            new = _socket_line(line, words, lineno, has_netid)
        except ParseError as exc:
            if unrecognised is None:
                raise
            unrecognised.append({"line": lineno, "text": line, "why": exc.one_line()})
            continue
        if pending is not None:
            sockets.append(_finish(pending, netid))
        pending = new
    if pending is not None:
        sockets.append(_finish(pending, netid))
    if not sockets and not saw_header and not (allow_empty and not text.strip()):
        raise ParseError("ss: no header and no sockets: not ss output")
    return sockets


def _refuse(unrecognised: list[dict[str, Any]] | None, lineno: int, line: str, why: str) -> None:
    if unrecognised is None:
        raise ParseError(why)
    unrecognised.append({"line": lineno, "text": line, "why": why})


def _socket_line(line: str, words: list[str], lineno: int, has_netid: bool | None) -> _Pending:
    """A socket line (its info to come on the lines after it); ParseError naming the line otherwise."""
    line_has_netid = has_netid if has_netid is not None else words[0] not in STATES
    offset = 1 if line_has_netid else 0
    if len(words) < offset + 5:
        raise ParseError(f"ss: line {lineno}: not a socket line: {line.strip()[:80]!r}")
    state = words[offset]
    if state not in STATES:
        raise ParseError(f"ss: line {lineno}: unknown socket state {state[:80]!r}")
    try:
        recv_q, send_q = int(words[offset + 1]), int(words[offset + 2])
    except ValueError:
        raise ParseError(f"ss: line {lineno}: Recv-Q/Send-Q are not numbers") from None
    rest = _tokens(line.split(None, offset + 5)[offset + 5]) if len(words) > offset + 5 else []
    process = None
    info: list[str] = []
    for tok in rest:
        # -p puts users:((...)) in the Process column; with -O the info follows on the same line
        if tok.startswith("users:(") and process is None and not info:
            process = tok
        else:
            info.append(tok)
    try:
        local, peer = parse_addr(words[offset + 3]), parse_addr(words[offset + 4])
    except ParseError as exc:
        raise ParseError(f"ss: line {lineno}: {exc.one_line().removeprefix('ss: ')}") from None
    return _Pending(netid=words[0] if line_has_netid else None, state=state, recv_q=recv_q, send_q=send_q,
                    local=local, peer=peer, process=process, info=[" ".join(info)] if info else [])


def socket_to_json(sock: Socket) -> dict[str, Any]:
    out = asdict(sock)
    out["is_mptcp_socket"] = sock.is_mptcp_socket
    if sock.tcp is not None and sock.tcp.mptcp is not None:
        out["tcp"]["mptcp"]["initial"] = sock.tcp.mptcp.initial
        out["tcp"]["mptcp"]["joined"] = sock.tcp.mptcp.joined
    return out


def to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return [socket_to_json(s) for s in parse(text, unrecognised=unrecognised)]
