"""Parser for `iperf3 --json` output (client or server side; iperf 3.9 .. 3.12 verified, newer tolerated).

Pure: text in, frozen dataclasses out. Facts taken from the recorded real output
(tests/fixtures/recorded/03_iperf3_json.md and generated/iperf3_*.json) that shape this parser:

- iperf3 reports failure *inside* the JSON (`{"error": "..."}`, often with `"end": {}`), and 3.12 even
  exits 0 when it does so. A failed run therefore parses to a result with `error` set; it is not a
  ParseError. Only text that is not iperf3 JSON at all raises ParseError.
- iperf 3.12 with `-P N` writes some `start` keys (sock_bufsize, sndbuf_actual, rcvbuf_actual) once per
  stream, i.e. the same key several times in one object. Python's json keeps only the last; we record
  every occurrence in `duplicate_keys` (via object_pairs_hook) so nothing is silently lost.
- Units as iperf3 writes them: bytes; bits_per_second in bit/s (float); rtt/rttvar/min_rtt/... in
  MICROseconds (fields carry an `_us` suffix here); snd_cwnd/snd_wnd in bytes; jitter_ms in ms;
  lost_percent 0..100.
- The client's JSON carries both views (its own and the server's, exchanged at test end); the server's
  JSON carries only its own. So on a server, `sum_sent` of a normal test and `sum_received` of a
  reverse (-R) test are all zeros, not measurements: the throughput helpers refuse them.
- Unknown keys (newer iperf3 adds e.g. timemillisecs, reorder, gso) are kept in `extra` dicts.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from controller.errors import ParseError, TrafficError
from controller.parsers import numbers

# ---------------------------------------------------------------------------- JSON with duplicates


class _Obj(dict):
    """A JSON object that remembers keys which occurred more than once (all their values, in order)."""

    duplicates: dict[str, list[Any]]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj()
    seen: dict[str, list[Any]] = {}
    for key, value in pairs:
        seen.setdefault(key, []).append(value)
        obj[key] = value  # last one wins for the typed view, exactly as json.loads would do
    obj.duplicates = {k: v for k, v in seen.items() if len(v) > 1}
    return obj


_DECODER = numbers.json_decoder(object_pairs_hook=_pairs_hook)   # numbers finite and bounded


@dataclass(frozen=True)
class DuplicateKey:
    """A key that occurred more than once in one JSON object (iperf 3.12 -P N quirk)."""

    path: str                 # where the object sits, e.g. "start" or "intervals[0].sum"
    key: str
    values: tuple[Any, ...]   # every value, in document order; the typed fields hold the last one


def _collect_duplicates(node: Any, path: str, out: list[DuplicateKey]) -> None:
    if isinstance(node, dict):
        for key, values in getattr(node, "duplicates", {}).items():
            out.append(DuplicateKey(path=path or "$", key=key, values=tuple(values)))
        for key, value in node.items():
            _collect_duplicates(value, f"{path}.{key}" if path else key, out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _collect_duplicates(value, f"{path}[{i}]", out)


# ---------------------------------------------------------------------------- typed field access


def _where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _opt_int(obj: dict, key: str, path: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    # bool is an int subclass in Python; a bool where a count is expected is a format change, not data
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"iperf3: {_where(path, key)} is {value!r}, expected an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ParseError(f"iperf3: {_where(path, key)} is {value!r}, expected an integer")
        value = int(value)
    return numbers.bounded(value, f"iperf3: {_where(path, key)}")


def _opt_float(obj: dict, key: str, path: str) -> float | None:
    value = obj.get(key)
    if value is None:  # cJSON writes NaN/inf as null
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"iperf3: {_where(path, key)} is {value!r}, expected a number")
    return numbers.finite(value, f"iperf3: {_where(path, key)}")


def _opt_bool(obj: dict, key: str, path: str) -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    # test_start.reverse/bidir are 0/1 integers, interval flags are true/false
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ParseError(f"iperf3: {_where(path, key)} is {value!r}, expected a boolean")


def _opt_str(obj: dict, key: str, path: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParseError(f"iperf3: {_where(path, key)} is {value!r}, expected a string")
    return value


def _req(value: Any, key: str, path: str) -> Any:
    if value is None:
        raise ParseError(f"iperf3: {_where(path, key)} is missing")
    return value


def _opt_obj(obj: dict, key: str, path: str) -> dict | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ParseError(f"iperf3: {_where(path, key)} is {type(value).__name__}, expected an object")
    return value


def _list(obj: dict, key: str, path: str) -> list:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError(f"iperf3: {_where(path, key)} is {type(value).__name__}, expected a list")
    return value


def _extra(obj: dict, known: frozenset[str]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in obj.items() if k not in known}


def _plain(value: Any) -> Any:
    """Strip our dict subclass so `extra` holds ordinary JSON values."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class HostPort:
    host: str
    port: int


@dataclass(frozen=True)
class Connection:
    """One entry of start.connected: a data stream's socket and its two ends."""

    socket: int | None
    local_host: str
    local_port: int
    remote_host: str
    remote_port: int


@dataclass(frozen=True)
class TestStart:
    protocol: str                  # "TCP" or "UDP" (also "SCTP")
    num_streams: int
    blksize: int | None
    omit: float | None             # seconds omitted at the start (-O)
    duration: float                # seconds requested with -t; 0 for -n/-k byte/block-limited tests
    bytes: int | None              # -n; 0 when unused
    blocks: int | None             # -k; 0 when unused
    reverse: bool
    bidir: bool                    # --bidir (key absent before 3.7, hence False)
    tos: int | None
    target_bitrate: int | None     # bit/s; absent in 3.9
    extra: dict[str, Any] = field(default_factory=dict)


_INTERVAL_KEYS = frozenset({
    "socket", "start", "end", "seconds", "bytes", "bits_per_second", "retransmits", "snd_cwnd",
    "snd_wnd", "rtt", "rttvar", "pmtu", "omitted", "sender", "packets", "jitter_ms", "lost_packets",
    "lost_percent",
})


@dataclass(frozen=True)
class IntervalSample:
    """One stream's (or the sum's) record for one reporting interval."""

    socket: int | None             # None for the "sum" record
    start: float                   # seconds since test start
    end: float
    seconds: float
    bytes: int
    bits_per_second: float
    retransmits: int | None        # TCP sender side only
    snd_cwnd: int | None           # bytes (TCP sender side only)
    snd_wnd: int | None            # bytes (3.12+)
    rtt_us: int | None             # microseconds
    rttvar_us: int | None          # microseconds
    pmtu: int | None
    omitted: bool | None
    sender: bool | None            # True when this host was sending in this record
    packets: int | None            # UDP
    jitter_ms: float | None        # UDP receiver side
    lost_packets: int | None       # UDP receiver side
    lost_percent: float | None     # UDP receiver side, 0..100
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Interval:
    streams: tuple[IntervalSample, ...]
    sum: IntervalSample | None
    sum_bidir_reverse: IntervalSample | None = None
    extra: dict[str, Any] = field(default_factory=dict)


_SUMMARY_KEYS = frozenset({
    "socket", "start", "end", "seconds", "bytes", "bits_per_second", "retransmits", "max_snd_cwnd",
    "max_snd_wnd", "max_rtt", "min_rtt", "mean_rtt", "jitter_ms", "lost_packets", "packets",
    "lost_percent", "out_of_order", "sender",
})


@dataclass(frozen=True)
class Summary:
    """An end-of-test record: end.sum_sent / sum_received / sum, or one stream's sender/receiver/udp."""

    socket: int | None
    start: float
    end: float
    seconds: float
    bytes: int
    bits_per_second: float
    retransmits: int | None
    max_snd_cwnd: int | None       # bytes; 0 when this host did not send (e.g. client of -R)
    max_snd_wnd: int | None        # bytes
    max_rtt_us: int | None
    min_rtt_us: int | None
    mean_rtt_us: int | None
    jitter_ms: float | None
    lost_packets: int | None
    packets: int | None
    lost_percent: float | None
    out_of_order: int | None
    sender: bool | None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EndStream:
    """end.streams[i]: TCP has sender+receiver, UDP has udp."""

    sender: Summary | None
    receiver: Summary | None
    udp: Summary | None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CpuUtilization:
    host_total: float | None
    host_user: float | None
    host_system: float | None
    remote_total: float | None
    remote_user: float | None
    remote_system: float | None


@dataclass(frozen=True)
class End:
    streams: tuple[EndStream, ...]
    sum_sent: Summary | None
    sum_received: Summary | None
    sum: Summary | None                        # UDP only
    sum_sent_bidir_reverse: Summary | None
    sum_received_bidir_reverse: Summary | None
    cpu_utilization_percent: CpuUtilization | None
    sender_tcp_congestion: str | None
    receiver_tcp_congestion: str | None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Iperf3Result:
    version: str | None                # "iperf 3.12"
    system_info: str | None
    role: str | None                   # "client" (has connecting_to), "server" (accepted_connection), None
    time: str | None                   # start.timestamp.time, as printed
    timesecs: int | None               # start.timestamp.timesecs (Unix seconds)
    timemillisecs: int | None          # start.timestamp.timemillisecs (newer iperf3 only)
    connected: tuple[Connection, ...]
    connecting_to: HostPort | None
    accepted_connection: HostPort | None
    cookie: str | None
    tcp_mss_default: int | None
    target_bitrate: int | None         # start.target_bitrate (3.12+; test_start has it too)
    sock_bufsize: int | None
    sndbuf_actual: int | None
    rcvbuf_actual: int | None
    test_start: TestStart | None
    intervals: tuple[Interval, ...]
    end: End | None                    # None when iperf3 wrote "end": {} (failed run)
    error: str | None                  # iperf3's own error message, if it reported one
    server_output: "Iperf3Result | None" = None   # --get-server-output with -J
    duplicate_keys: tuple[DuplicateKey, ...] = ()
    start_extra: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def protocol(self) -> str | None:
        return self.test_start.protocol if self.test_start else None

    @property
    def num_streams(self) -> int | None:
        return self.test_start.num_streams if self.test_start else None

    @property
    def duration(self) -> float | None:
        return self.test_start.duration if self.test_start else None

    @property
    def reverse(self) -> bool | None:
        return self.test_start.reverse if self.test_start else None

    @property
    def failure(self) -> str | None:
        """Why this run cannot be used, or None. Checks iperf3's error AND the shape of the data,
        because iperf 3.12 can exit 0 with an error inside the JSON (fixed in 3.14)."""
        if self.error is not None:
            return self.error
        if self.end is None:
            return "iperf3 wrote no end-of-test summary"
        if not self.intervals:
            return "iperf3 wrote no intervals"
        if self.end.sum_sent is None and self.end.sum_received is None and self.end.sum is None:
            return "iperf3 end-of-test summary has no sum_sent/sum_received"
        return None

    @property
    def ok(self) -> bool:
        return self.failure is None


# ---------------------------------------------------------------------------- builders


def _interval_sample(obj: Any, path: str) -> IntervalSample:
    if not isinstance(obj, dict):
        raise ParseError(f"iperf3: {path} is not an object")
    return IntervalSample(
        socket=_opt_int(obj, "socket", path),
        start=_req(_opt_float(obj, "start", path), "start", path),
        end=_req(_opt_float(obj, "end", path), "end", path),
        seconds=_req(_opt_float(obj, "seconds", path), "seconds", path),
        bytes=_req(_opt_int(obj, "bytes", path), "bytes", path),
        bits_per_second=_req(_opt_float(obj, "bits_per_second", path), "bits_per_second", path),
        retransmits=_opt_int(obj, "retransmits", path),
        snd_cwnd=_opt_int(obj, "snd_cwnd", path),
        snd_wnd=_opt_int(obj, "snd_wnd", path),
        rtt_us=_opt_int(obj, "rtt", path),
        rttvar_us=_opt_int(obj, "rttvar", path),
        pmtu=_opt_int(obj, "pmtu", path),
        omitted=_opt_bool(obj, "omitted", path),
        sender=_opt_bool(obj, "sender", path),
        packets=_opt_int(obj, "packets", path),
        jitter_ms=_opt_float(obj, "jitter_ms", path),
        lost_packets=_opt_int(obj, "lost_packets", path),
        lost_percent=_opt_float(obj, "lost_percent", path),
        extra=_extra(obj, _INTERVAL_KEYS),
    )


def _interval(obj: Any, path: str) -> Interval:
    if not isinstance(obj, dict):
        raise ParseError(f"iperf3: {path} is not an object")
    streams = tuple(_interval_sample(s, f"{path}.streams[{i}]")
                    for i, s in enumerate(_list(obj, "streams", path)))
    total = _opt_obj(obj, "sum", path)
    rev = _opt_obj(obj, "sum_bidir_reverse", path)
    return Interval(
        streams=streams,
        sum=_interval_sample(total, f"{path}.sum") if total is not None else None,
        sum_bidir_reverse=_interval_sample(rev, f"{path}.sum_bidir_reverse") if rev is not None else None,
        extra=_extra(obj, frozenset({"streams", "sum", "sum_bidir_reverse"})),
    )


def _summary(obj: dict | None, path: str) -> Summary | None:
    if obj is None:
        return None
    return Summary(
        socket=_opt_int(obj, "socket", path),
        start=_req(_opt_float(obj, "start", path), "start", path),
        end=_req(_opt_float(obj, "end", path), "end", path),
        seconds=_req(_opt_float(obj, "seconds", path), "seconds", path),
        bytes=_req(_opt_int(obj, "bytes", path), "bytes", path),
        bits_per_second=_req(_opt_float(obj, "bits_per_second", path), "bits_per_second", path),
        retransmits=_opt_int(obj, "retransmits", path),
        max_snd_cwnd=_opt_int(obj, "max_snd_cwnd", path),
        max_snd_wnd=_opt_int(obj, "max_snd_wnd", path),
        max_rtt_us=_opt_int(obj, "max_rtt", path),
        min_rtt_us=_opt_int(obj, "min_rtt", path),
        mean_rtt_us=_opt_int(obj, "mean_rtt", path),
        jitter_ms=_opt_float(obj, "jitter_ms", path),
        lost_packets=_opt_int(obj, "lost_packets", path),
        packets=_opt_int(obj, "packets", path),
        lost_percent=_opt_float(obj, "lost_percent", path),
        out_of_order=_opt_int(obj, "out_of_order", path),
        sender=_opt_bool(obj, "sender", path),
        extra=_extra(obj, _SUMMARY_KEYS),
    )


_END_KEYS = frozenset({
    "streams", "sum_sent", "sum_received", "sum", "sum_sent_bidir_reverse",
    "sum_received_bidir_reverse", "cpu_utilization_percent", "sender_tcp_congestion",
    "receiver_tcp_congestion",
})


def _end(obj: dict | None) -> End | None:
    if not obj:  # "end": {} is how a failed run looks
        return None
    streams = []
    for i, s in enumerate(_list(obj, "streams", "end")):
        p = f"end.streams[{i}]"
        if not isinstance(s, dict):
            raise ParseError(f"iperf3: {p} is not an object")
        streams.append(EndStream(
            sender=_summary(_opt_obj(s, "sender", p), f"{p}.sender"),
            receiver=_summary(_opt_obj(s, "receiver", p), f"{p}.receiver"),
            udp=_summary(_opt_obj(s, "udp", p), f"{p}.udp"),
            extra=_extra(s, frozenset({"sender", "receiver", "udp"})),
        ))
    cpu = _opt_obj(obj, "cpu_utilization_percent", "end")
    cpu_p = "end.cpu_utilization_percent"
    return End(
        streams=tuple(streams),
        sum_sent=_summary(_opt_obj(obj, "sum_sent", "end"), "end.sum_sent"),
        sum_received=_summary(_opt_obj(obj, "sum_received", "end"), "end.sum_received"),
        sum=_summary(_opt_obj(obj, "sum", "end"), "end.sum"),
        sum_sent_bidir_reverse=_summary(_opt_obj(obj, "sum_sent_bidir_reverse", "end"),
                                        "end.sum_sent_bidir_reverse"),
        sum_received_bidir_reverse=_summary(_opt_obj(obj, "sum_received_bidir_reverse", "end"),
                                            "end.sum_received_bidir_reverse"),
        cpu_utilization_percent=None if cpu is None else CpuUtilization(
            host_total=_opt_float(cpu, "host_total", cpu_p),
            host_user=_opt_float(cpu, "host_user", cpu_p),
            host_system=_opt_float(cpu, "host_system", cpu_p),
            remote_total=_opt_float(cpu, "remote_total", cpu_p),
            remote_user=_opt_float(cpu, "remote_user", cpu_p),
            remote_system=_opt_float(cpu, "remote_system", cpu_p),
        ),
        sender_tcp_congestion=_opt_str(obj, "sender_tcp_congestion", "end"),
        receiver_tcp_congestion=_opt_str(obj, "receiver_tcp_congestion", "end"),
        extra=_extra(obj, _END_KEYS),
    )


def _host_port(obj: dict | None, path: str) -> HostPort | None:
    if obj is None:
        return None
    return HostPort(host=_req(_opt_str(obj, "host", path), "host", path),
                    port=_req(_opt_int(obj, "port", path), "port", path))


def _connection(obj: Any, path: str) -> Connection:
    if not isinstance(obj, dict):
        raise ParseError(f"iperf3: {path} is not an object")
    return Connection(
        socket=_opt_int(obj, "socket", path),
        local_host=_req(_opt_str(obj, "local_host", path), "local_host", path),
        local_port=_req(_opt_int(obj, "local_port", path), "local_port", path),
        remote_host=_req(_opt_str(obj, "remote_host", path), "remote_host", path),
        remote_port=_req(_opt_int(obj, "remote_port", path), "remote_port", path),
    )


_TEST_START_KEYS = frozenset({"protocol", "num_streams", "blksize", "omit", "duration", "bytes",
                              "blocks", "reverse", "bidir", "tos", "target_bitrate"})


def _test_start(obj: dict | None) -> TestStart | None:
    if obj is None:
        return None
    p = "start.test_start"
    return TestStart(
        protocol=_req(_opt_str(obj, "protocol", p), "protocol", p),
        num_streams=_req(_opt_int(obj, "num_streams", p), "num_streams", p),
        blksize=_opt_int(obj, "blksize", p),
        omit=_opt_float(obj, "omit", p),
        duration=_req(_opt_float(obj, "duration", p), "duration", p),
        bytes=_opt_int(obj, "bytes", p),
        blocks=_opt_int(obj, "blocks", p),
        reverse=bool(_opt_bool(obj, "reverse", p)),
        bidir=bool(_opt_bool(obj, "bidir", p)),
        tos=_opt_int(obj, "tos", p),
        target_bitrate=_opt_int(obj, "target_bitrate", p),
        extra=_extra(obj, _TEST_START_KEYS),
    )


_START_KEYS = frozenset({
    "connected", "version", "system_info", "timestamp", "connecting_to", "accepted_connection",
    "cookie", "tcp_mss_default", "target_bitrate", "sock_bufsize", "sndbuf_actual", "rcvbuf_actual", "test_start",
})
_STAMP_KEYS = frozenset({"time", "timesecs", "timemillisecs"})
_TOP_KEYS = frozenset({"start", "intervals", "end", "error", "server_output_json"})


def _result(doc: Any) -> Iperf3Result:
    if not isinstance(doc, dict) or not ({"start", "error"} & doc.keys()):
        raise ParseError("iperf3: not iperf3 --json output (no top-level \"start\" or \"error\")")
    start = _opt_obj(doc, "start", "") or {}
    stamp = _opt_obj(start, "timestamp", "start") or {}
    connecting_to = _host_port(_opt_obj(start, "connecting_to", "start"), "start.connecting_to")
    accepted = _host_port(_opt_obj(start, "accepted_connection", "start"), "start.accepted_connection")
    role = "client" if connecting_to is not None else "server" if accepted is not None else None
    server_json = doc.get("server_output_json")
    duplicates: list[DuplicateKey] = []
    _collect_duplicates(doc, "", duplicates)
    return Iperf3Result(
        version=_opt_str(start, "version", "start"),
        system_info=_opt_str(start, "system_info", "start"),
        role=role,
        time=_opt_str(stamp, "time", "start.timestamp"),
        timesecs=_opt_int(stamp, "timesecs", "start.timestamp"),
        timemillisecs=_opt_int(stamp, "timemillisecs", "start.timestamp"),
        connected=tuple(_connection(c, f"start.connected[{i}]")
                        for i, c in enumerate(_list(start, "connected", "start"))),
        connecting_to=connecting_to,
        accepted_connection=accepted,
        cookie=_opt_str(start, "cookie", "start"),
        tcp_mss_default=_opt_int(start, "tcp_mss_default", "start"),
        target_bitrate=_opt_int(start, "target_bitrate", "start"),
        sock_bufsize=_opt_int(start, "sock_bufsize", "start"),
        sndbuf_actual=_opt_int(start, "sndbuf_actual", "start"),
        rcvbuf_actual=_opt_int(start, "rcvbuf_actual", "start"),
        test_start=_test_start(_opt_obj(start, "test_start", "start")),
        intervals=tuple(_interval(iv, f"intervals[{i}]") for i, iv in enumerate(_list(doc, "intervals", ""))),
        end=_end(_opt_obj(doc, "end", "")),
        error=_opt_str(doc, "error", ""),
        server_output=_result(server_json) if isinstance(server_json, dict) else None,
        duplicate_keys=tuple(d for d in duplicates if not d.path.startswith("server_output_json")),
        start_extra={**_extra(start, _START_KEYS),
                     **{f"timestamp.{k}": v for k, v in _extra(stamp, _STAMP_KEYS).items()}},
        extra=_extra(doc, _TOP_KEYS),
    )


# ---------------------------------------------------------------------------- public API


def parse_all(text: str) -> list[Iperf3Result]:
    """Every JSON document in `text`: an `iperf3 -s -J` log holds one document per test, back to back."""
    results: list[Iperf3Result] = []
    idx, n = 0, len(text)
    while True:
        while idx < n and text[idx].isspace():
            idx += 1
        if idx >= n:
            break
        try:
            doc, idx = _DECODER.raw_decode(text, idx)
        except json.JSONDecodeError as exc:
            hint = " (human-readable output? run iperf3 with -J)" if not results and "Interval" in text else ""
            raise ParseError(f"iperf3: invalid JSON at line {exc.lineno} col {exc.colno}: {exc.msg}{hint}") from None
        results.append(_result(doc))
    if not results:
        raise ParseError("iperf3: empty output")
    return results


def parse(text: str) -> Iperf3Result:
    """Exactly one iperf3 --json document."""
    results = parse_all(text)
    if len(results) != 1:
        raise ParseError(f"iperf3: expected one JSON document, found {len(results)} (use parse_all)")
    return results[0]


def _usable(result: Iperf3Result) -> End:
    reason = result.failure
    if reason is not None:
        raise TrafficError(f"iperf3 run failed: {reason}")
    assert result.end is not None
    if result.test_start is not None and result.test_start.bidir:
        # two directions, two receivers: a single number would silently pick one of them
        raise TrafficError("iperf3 --bidir result: read end.sum_received and end.sum_received_bidir_reverse")
    return result.end


def receiver_throughput_bps(result: Iperf3Result) -> float:
    """Goodput as measured by the data receiver (end.sum_received.bits_per_second), bit/s.

    Raises TrafficError when the run failed, or when this JSON cannot know the receiver's view
    (the server's own JSON of a reverse test: there the server only sent)."""
    end = _usable(result)
    if result.role == "server" and result.reverse:
        raise TrafficError("server-side JSON of a reverse (-R) test has no receiver measurement; use the client's")
    if end.sum_received is None:
        raise TrafficError("iperf3 result has no end.sum_received")
    return end.sum_received.bits_per_second


def sender_throughput_bps(result: Iperf3Result) -> float:
    """Rate at which the data sender wrote into its sockets (end.sum_sent.bits_per_second), bit/s."""
    end = _usable(result)
    if result.role == "server" and not result.reverse:
        raise TrafficError("server-side JSON of a normal (non -R) test has no sender measurement; use the client's")
    if end.sum_sent is None:
        raise TrafficError("iperf3 result has no end.sum_sent")
    return end.sum_sent.bits_per_second


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def result_to_json(result: Iperf3Result) -> dict[str, Any]:
    out = asdict(result)
    out["failure"] = result.failure
    return _json_safe(out)


def to_json(text: str) -> Any:
    """`ctl parse iperf3 FILE`: one object, or a list when the file holds several documents."""
    results = parse_all(text)
    if len(results) == 1:
        return result_to_json(results[0])
    return [result_to_json(r) for r in results]
