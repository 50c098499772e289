"""Traces of a bbr3 test build (-DCTL_TRACE) decoded and replayed through the reference model.

A test build of nodes/congestion/bpf/bbr3.bpf.c records every call of its five entry points in
the map `bbr3_trace` (`struct b3_trace_rec`): the event, the socket, the inputs, the outputs
and the whole `struct bbr3` before and after. `replay` runs the same call through
nodes/congestion/model_bbr3.py from the recorded state before and inputs, and `check_trace`
compares the model's state after and outputs with the recorded ones, field by field.

The layouts here are the C structs' (u64 first, natural alignment, no holes); the unit tests
compare them with the C source, the integration test with the sizes the compiler gave them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import Iterable, Sequence

from nodes.congestion import model_bbr3 as m

EV_INIT, EV_ACK, EV_SSTHRESH, EV_UNDO, EV_CWND_EVENT = 1, 2, 3, 4, 5
EVENT_NAMES = {EV_INIT: "init", EV_ACK: "ack", EV_SSTHRESH: "ssthresh", EV_UNDO: "undo", EV_CWND_EVENT: "cwnd_event"}

# u64 fields of struct bbr3 (all others are u32; bw_hi, xa, snap are arrays)
_STATE_U64 = ("min_rtt_stamp", "probe_rtt_min_stamp", "probe_rtt_done_stamp", "cycle_stamp",
              "extra_acked_interval_start")
_STATE_ARRAYS = {"bw_hi": 2, "xa": m.EXTRA_ACKED_FILTER_LEN, "snap": 3 * m.SNAPS}


def _state_format() -> str:
    out = "<"
    for f in fields(m.Bbr3):
        out += "Q" if f.name in _STATE_U64 else f"{_STATE_ARRAYS[f.name]}I" if f.name in _STATE_ARRAYS else "I"
    return out


_IN_SIGNED64 = ("rs_interval_us", "rs_rtt_us")
_IN_U64 = ("now", "pacing_rate", "max_pacing_rate")
_IN_SIGNED32 = ("rs_delivered", "rs_losses")


def _in_format() -> str:
    out = "<"
    for f in fields(m.Inputs):
        out += "Q" if f.name in _IN_U64 else "q" if f.name in _IN_SIGNED64 else "i" if f.name in _IN_SIGNED32 else "I"
    return out + "I"                               # pad


def _out_format() -> str:
    return "<Q" + "I" * (len(fields(m.Outputs)) - 1) + "I"      # pacing_rate, u32s, pad


STATE = struct.Struct(_state_format())
INPUTS = struct.Struct(_in_format())
OUTPUTS = struct.Struct(_out_format())
HEADER = struct.Struct("<IIQ")
RECORD_SIZE = HEADER.size + INPUTS.size + OUTPUTS.size + 2 * STATE.size      # struct b3_trace_rec


def decode_state(raw: bytes) -> m.Bbr3:
    vals = list(STATE.unpack(raw))
    kw, k = {}, 0
    for f in fields(m.Bbr3):
        n = _STATE_ARRAYS.get(f.name)
        if n is None:
            kw[f.name] = vals[k]
            k += 1
        elif f.name == "snap":
            flat = vals[k:k + n]
            kw[f.name] = [list(flat[j:j + 3]) for j in range(0, n, 3)]
            k += n
        else:
            kw[f.name] = list(vals[k:k + n])
            k += n
    return m.Bbr3(**kw)


def decode_inputs(raw: bytes) -> m.Inputs:
    vals = INPUTS.unpack(raw)
    return m.Inputs(*vals[:len(fields(m.Inputs))])


def decode_outputs(raw: bytes) -> m.Outputs:
    vals = OUTPUTS.unpack(raw)
    return m.Outputs(*vals[:len(fields(m.Outputs))])


@dataclass(frozen=True)
class Record:
    seq: int
    event: int
    sk: int
    inputs: m.Inputs
    outputs: m.Outputs
    before: m.Bbr3
    after: m.Bbr3

    @property
    def name(self) -> str:
        return EVENT_NAMES.get(self.event, str(self.event))


def decode_record(raw: bytes) -> Record | None:
    """One `b3_trace_rec` (None for an unused slot)."""
    seq, event, sk = HEADER.unpack_from(raw, 0)
    if not seq:
        return None
    o = HEADER.size
    inputs = decode_inputs(raw[o:o + INPUTS.size])
    o += INPUTS.size
    outputs = decode_outputs(raw[o:o + OUTPUTS.size])
    o += OUTPUTS.size
    before = decode_state(raw[o:o + STATE.size])
    o += STATE.size
    after = decode_state(raw[o:o + STATE.size])
    return Record(seq, event, sk, inputs, outputs, before, after)


def replay(r: Record) -> tuple[m.Bbr3, m.Outputs] | None:
    """The state after and the outputs the model computes for a recorded call."""
    if r.event == EV_INIT:
        return m.init(r.inputs)
    if r.event == EV_ACK:
        return m.on_ack(r.before, r.inputs)
    if r.event == EV_SSTHRESH:
        return m.on_ssthresh(r.before, r.inputs)
    if r.event == EV_UNDO:
        return m.on_undo(r.before, r.inputs)
    if r.event == EV_CWND_EVENT:
        return m.on_tx_start(r.before, r.inputs)
    return None


@dataclass(frozen=True)
class Mismatch:
    record: Record
    state: dict          # field -> (recorded, model)
    outputs: dict

    def __str__(self) -> str:
        return (f"seq {self.record.seq} ({self.record.name}, state {m.STATE_NAMES[self.record.before.state]}): "
                f"state {self.state} outputs {self.outputs}")


def check_trace(records: Iterable[Record]) -> tuple[int, list[Mismatch]]:
    """(calls replayed, the calls where the model disagrees with the program)."""
    n, bad = 0, []
    for r in records:
        want = replay(r)
        if want is None:
            continue
        n += 1
        state, out = want
        ds = r.after.differences(state)
        do = {f.name: (getattr(r.outputs, f.name), getattr(out, f.name)) for f in fields(m.Outputs)
              if getattr(r.outputs, f.name) != getattr(out, f.name)}
        if ds or do:
            bad.append(Mismatch(r, ds, do))
    return n, bad


def continuity_breaks(records: Sequence[Record]) -> list[tuple[Record, Record]]:
    """Consecutive calls on one socket where the state before the second is not the state after
    the first (something changed the state outside the traced calls)."""
    last: dict[int, Record] = {}
    out = []
    for r in sorted(records, key=lambda x: x.seq):
        prev = last.get(r.sk)
        if prev is not None and r.event != EV_INIT and prev.after != r.before:
            out.append((prev, r))
        last[r.sk] = r
    return out
