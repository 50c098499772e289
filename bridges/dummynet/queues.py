"""Queue sizing for dummynet pipes (pure): a drop-tail queue of `factor` x the
bandwidth-delay product within the host's limits, verifiable in `pipe show`.
"""
from __future__ import annotations

import math
from fractions import Fraction

from bridges.dummynet.values import DEFAULT_BYTE_LIMIT, DEFAULT_SLOT_LIMIT, KB_PRINT_FROM, MIN_QUEUE_BYTES
from controller.errors import ParameterError
from controller.units import Conversion, Queue, bdp_bytes, format_bytes, format_rate


def queue_for_bdp(bw_bps: int, rtt_us: int, factor: float = 1.0, mtu: int = 1500, *,
                  slot_limit: int = DEFAULT_SLOT_LIMIT, byte_limit: int = DEFAULT_BYTE_LIMIT,
                  what: str = "bottleneck queue", limits_of: str = "the bridge",
                  limit_names: tuple[str, str] = ("pipe_slot_limit", "pipe_byte_limit"),
                  conversions: list[Conversion] | None = None) -> Queue:
    """A drop-tail queue holding `factor` x the bandwidth-delay product, within host limits.

    Bytes are preferred (they bound the BDP exactly): at least 1500 B (smaller byte
    queues are silently bumped to 16 KiB by the kernel) and rounded up to whole KiB from
    8 KiB on (that is how `pipe show` prints them, so the result stays verifiable). When
    the BDP exceeds the byte limit (`limit_names[1]` of `limits_of`), slots of `mtu` bytes
    are used up to the slot limit. When both are too small the largest allowed queue is used.
    Every departure from the exact BDP in bytes is appended to `conversions` (what was asked,
    what is applied, and why, naming the limit)."""
    if bw_bps <= 0 or rtt_us < 0 or factor <= 0 or mtu <= 0:
        raise ParameterError("queue_for_bdp: bw, factor and mtu must be positive, rtt not negative")
    want = math.ceil(bdp_bytes(bw_bps, rtt_us) * Fraction(str(factor)))
    asked = (f"{'' if factor == 1 else f'{factor:g} x '}1 BDP ({format_rate(bw_bps)} x {rtt_us / 1000:g} ms) "
             f"= {format_bytes(want)}")
    out: list[Conversion] = [] if conversions is None else conversions
    want_b = max(want, MIN_QUEUE_BYTES)
    if want_b >= KB_PRINT_FROM:
        want_b = -(-want_b // 1024) * 1024
    if want_b <= byte_limit:
        if want_b != want:
            why = (f"{MIN_QUEUE_BYTES} B is the smallest byte queue ctl sets (dummynet turns a smaller one into "
                   "16 KiB)" if want < MIN_QUEUE_BYTES else
                   f"rounded up to whole KiB: dummynet's `pipe show` prints byte queues from {KB_PRINT_FROM:,} B "
                   "on in KiB, and ctl sizes queues alike on every back-end so runs compare")
            out.append(Conversion(what, asked, format_bytes(want_b), why))
        return Queue(bytes=want_b)
    slots = -(-want // mtu)
    slot_name, byte_name = limit_names
    if slots <= slot_limit:
        out.append(Conversion(what, asked, f"{slots} slots = {format_bytes(slots * mtu)} in {mtu}-byte packets",
                              f"above the {format_bytes(byte_limit)} {limits_of} holds in bytes ({byte_name}): "
                              "held as packets; a slot holds one packet of any size, so smaller packets fill it "
                              "with fewer bytes"))
        return Queue(slots=slots)
    max_bytes = byte_limit if byte_limit < KB_PRINT_FROM else (byte_limit // 1024) * 1024
    if slot_limit * mtu >= max_bytes:
        q = Queue(slots=slot_limit)
        applied = f"{slot_limit} slots = {format_bytes(slot_limit * mtu)} in {mtu}-byte packets"
    else:
        q = Queue(bytes=max_bytes)
        applied = format_bytes(max_bytes)
    out.append(Conversion(what, asked, applied,
                          f"capped: {limits_of} holds at most {format_bytes(byte_limit)} by {byte_name} or "
                          f"{slot_limit} slots by {slot_name}; the queue is {_fraction(q, want, mtu)} of the "
                          "BDP asked for"))
    return q


def _fraction(q: Queue, want: int, mtu: int) -> str:
    held = q.bytes if q.bytes is not None else (q.slots or 0) * mtu
    return f"{100 * held / want:.3g} %"
