"""Queue sizing for dummynet pipes (pure): a drop-tail queue of `factor` x the
bandwidth-delay product within the host's limits, verifiable in `pipe show`.
"""
from __future__ import annotations

import math
from fractions import Fraction

from bridges.dummynet.values import DEFAULT_BYTE_LIMIT, DEFAULT_SLOT_LIMIT, KB_PRINT_FROM, MIN_QUEUE_BYTES
from controller.errors import ParameterError
from controller.units import Queue, bdp_bytes, format_rate


def queue_for_bdp(bw_bps: int, rtt_us: int, factor: float = 1.0, mtu: int = 1500, *,
                  slot_limit: int = DEFAULT_SLOT_LIMIT, byte_limit: int = DEFAULT_BYTE_LIMIT,
                  notes: list[str] | None = None) -> Queue:
    """A drop-tail queue holding `factor` x the bandwidth-delay product, within host limits.

    Bytes are preferred (they bound the BDP exactly): at least 1500 B (smaller byte
    queues are silently bumped to 16 KiB by the kernel) and rounded up to whole KiB from
    8 KiB on (that is how `pipe show` prints them, so the result stays verifiable). When
    the BDP exceeds net.inet.ip.dummynet.pipe_byte_limit, slots of `mtu` bytes are used up
    to pipe_slot_limit. When both are too small the largest allowed queue is returned and
    a sentence saying so is appended to `notes`.
    """
    if bw_bps <= 0 or rtt_us < 0 or factor <= 0 or mtu <= 0:
        raise ParameterError("queue_for_bdp: bw, factor and mtu must be positive, rtt not negative")
    want = math.ceil(bdp_bytes(bw_bps, rtt_us) * Fraction(str(factor)))
    want_b = max(want, MIN_QUEUE_BYTES)
    if want_b >= KB_PRINT_FROM:
        want_b = -(-want_b // 1024) * 1024
    if want_b <= byte_limit:
        return Queue(bytes=want_b)
    slots = -(-want // mtu)
    if slots <= slot_limit:
        return Queue(slots=slots)
    max_bytes = byte_limit if byte_limit < KB_PRINT_FROM else (byte_limit // 1024) * 1024
    if slot_limit * mtu >= max_bytes:
        q = Queue(slots=slot_limit)
    else:
        q = Queue(bytes=max_bytes)
    if notes is not None:
        notes.append(f"queue for {format_rate(bw_bps)} x {rtt_us / 1000:g} ms RTT x {factor:g} needs {want} bytes "
                     f"({slots} slots of {mtu} B) but the host allows {byte_limit} bytes "
                     f"(net.inet.ip.dummynet.pipe_byte_limit) or {slot_limit} slots "
                     f"(net.inet.ip.dummynet.pipe_slot_limit): using {q}")
    return q
