"""Parser for `tc -j [-s] qdisc show [dev X]` (iproute2 6.1 verified).

Pure: text in, frozen dataclasses out. Facts from real output generated for this project
(tests/fixtures/generated/tc/; tests/fixtures/generated/tc/README.md has the exact commands):

- tbf `options.rate` is a JSON number in BYTES per second ("rate 20mbit" prints 2500000); we convert
  to bit/s. `burst` is a number in bytes (after tc's tick rounding: 32kb -> 32767); `lat` a number in
  microseconds. tbf's own `limit` is NOT printed unless -raw (or its latency would be negative).
- pfifo `limit` is in packets, bfifo `limit` in bytes: kept apart as limit_packets / limit_bytes.
- htb `default` is a STRING holding hex ("0x10" for `default 10`, i.e. class 1:10).
- handle/parent are strings ("1:", "1:1", ingress "ffff:" under "ffff:fff1"); a root qdisc has
  "root": true and no parent; "dev" is only printed when no `dev X` filter was given (pass `dev=`).
- with -s the counters are flat keys on the qdisc object: bytes, packets, drops, overlimits, requeues,
  backlog (bytes), qlen (packets).

The parser is exact about types: where 6.1 prints a number, a string (e.g. "20Mbit" from some other
tc build) raises ParseError instead of being guessed at, because a rate off by a factor of 8 would
end up in a paper.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from controller.errors import ParseError
from controller.parsers import numbers

_STAT_KEYS = ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")
_QDISC_KEYS = frozenset({"kind", "handle", "parent", "root", "dev", "refcnt", "options", *_STAT_KEYS})
INGRESS_PARENT = "ffff:fff1"


@dataclass(frozen=True)
class QdiscStats:
    bytes: int
    packets: int
    drops: int
    overlimits: int
    requeues: int
    backlog_bytes: int
    qlen: int                                # packets queued right now


@dataclass(frozen=True)
class Qdisc:
    kind: str                                # "tbf", "pfifo", "bfifo", "htb", "noqueue", "ingress", ...
    handle: str                              # "1:", "10:", "0:"
    parent: str | None                       # "1:1"; None for a root qdisc
    root: bool
    dev: str | None
    refcnt: int | None
    options: dict[str, Any]                  # typed, unit in the key: rate_bps, burst_bytes, lat_us, ...
    options_raw: dict[str, Any]              # exactly as tc printed them
    stats: QdiscStats | None                 # None without -s
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ingress(self) -> bool:
        return self.kind in ("ingress", "clsact") or self.parent == INGRESS_PARENT

    @property
    def rate_bps(self) -> int | None:
        return self.options.get("rate_bps")


def _num(obj: dict, key: str, where: str, *, integer: bool = True) -> Any:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"tc: {where}.{key} is {value!r}: iproute2 6.1 prints a number here")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ParseError(f"tc: {where}.{key} is {value!r}, expected an integer")
        return int(value)
    return value


def _hex_str(obj: dict, key: str, where: str) -> int:
    value = obj[key]
    if not isinstance(value, str) or not value.startswith("0x"):
        raise ParseError(f"tc: {where}.{key} is {value!r}: iproute2 6.1 prints a hex string here")
    try:
        return numbers.integer(value, f"tc: {where}.{key}", 16)
    except ValueError:
        raise ParseError(f"tc: {where}.{key} is {value!r:.80}, not hexadecimal") from None


# per kind: raw option key -> (typed key, converter)
_BYTES_PER_S_TO_BPS = 8


def _typed_options(kind: str, raw: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in raw:
        if kind == "tbf" and key in ("rate", "peakrate"):
            out[f"{key}_bps"] = _num(raw, key, where) * _BYTES_PER_S_TO_BPS
        elif kind == "tbf" and key in ("burst", "pburst", "mtu", "limit"):
            out[f"{key}_bytes"] = _num(raw, key, where)
        elif kind == "tbf" and key == "lat":
            out["lat_us"] = _num(raw, key, where)
        elif kind == "pfifo" and key == "limit":
            out["limit_packets"] = _num(raw, key, where)
        elif kind == "bfifo" and key == "limit":
            out["limit_bytes"] = _num(raw, key, where)
        elif kind == "htb" and key == "default":
            out["default"] = _hex_str(raw, key, where)
        elif kind == "htb" and key in ("r2q", "direct_packets_stat", "direct_qlen", "version"):
            out[key] = _num(raw, key, where)
        else:
            # kinds/keys not verified on real output: keep the value exactly as printed
            out[key] = raw[key]
    return out


def _qdisc(obj: Any, index: int, dev: str | None) -> Qdisc:
    where = f"qdisc[{index}]"
    if not isinstance(obj, dict):
        raise ParseError(f"tc: {where} is not an object")
    for key in ("kind", "handle"):
        if not isinstance(obj.get(key), str):
            raise ParseError(f"tc: {where} has no {key}")
    kind = obj["kind"]
    raw_options = obj.get("options", {})
    if not isinstance(raw_options, dict):
        raise ParseError(f"tc: {where}.options is not an object")
    parent = obj.get("parent")
    if parent is not None and not isinstance(parent, str):
        raise ParseError(f"tc: {where}.parent is {parent!r}")
    root = obj.get("root") is True
    present = [k for k in _STAT_KEYS if k in obj]
    stats = None
    if present:
        missing = [k for k in _STAT_KEYS if k not in obj]
        if missing:
            raise ParseError(f"tc: {where} has statistics but lacks {', '.join(missing)}")
        values = {k: _num(obj, k, where) for k in _STAT_KEYS}
        stats = QdiscStats(bytes=values["bytes"], packets=values["packets"], drops=values["drops"],
                           overlimits=values["overlimits"], requeues=values["requeues"],
                           backlog_bytes=values["backlog"], qlen=values["qlen"])
    refcnt = _num(obj, "refcnt", where) if "refcnt" in obj else None
    obj_dev = obj.get("dev")
    if obj_dev is not None and not isinstance(obj_dev, str):
        raise ParseError(f"tc: {where}.dev is {obj_dev!r}")
    return Qdisc(
        kind=kind, handle=obj["handle"], parent=parent, root=root,
        dev=obj_dev if obj_dev is not None else dev, refcnt=refcnt,
        options=_typed_options(kind, raw_options, f"{where}.options"),
        options_raw=dict(raw_options), stats=stats,
        extra={k: v for k, v in obj.items() if k not in _QDISC_KEYS},
    )


def parse(text: str, *, dev: str | None = None) -> list[Qdisc]:
    """`tc -j [-s] qdisc show [dev X]`. Give `dev` when the command filtered by device: tc then
    omits "dev" from every object."""
    stripped = text.strip()
    if not stripped:
        raise ParseError("tc: empty output (does the device exist?)")
    if not stripped.startswith("["):
        raise ParseError("tc: not JSON (run tc with -j)")
    try:
        doc = numbers.loads(stripped)            # numbers finite and within 2**64, else ParseError
    except json.JSONDecodeError as exc:
        raise ParseError(f"tc: invalid JSON at line {exc.lineno} col {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, list):
        raise ParseError("tc: qdisc JSON is not a list")
    qdiscs = [_qdisc(obj, i, dev) for i, obj in enumerate(doc)]
    with_stats = {q.stats is not None for q in qdiscs}
    if len(with_stats) > 1:
        raise ParseError("tc: some qdiscs have statistics and some do not")
    return qdiscs


def root_qdisc(qdiscs: list[Qdisc], dev: str | None = None) -> Qdisc | None:
    """The egress root qdisc (of `dev`, when the list spans several devices)."""
    roots = [q for q in qdiscs if q.root and not q.ingress and (dev is None or q.dev == dev)]
    if len(roots) > 1:
        raise ParseError(f"tc: {len(roots)} root qdiscs{' on ' + dev if dev else ''}: pass dev=")
    return roots[0] if roots else None


def children(qdiscs: list[Qdisc], handle: str) -> list[Qdisc]:
    """Qdiscs attached under `handle` ("1:" -> those with parent "1:<minor>")."""
    major = handle.split(":")[0]
    return [q for q in qdiscs if q.parent is not None and q.parent.split(":")[0] == major
            and q.handle != handle]


def qdisc_to_json(q: Qdisc) -> dict[str, Any]:
    out = asdict(q)
    out["ingress"] = q.ingress
    return out


def to_json(text: str) -> list[dict[str, Any]]:
    return [qdisc_to_json(q) for q in parse(text)]
