"""Read a BPF map by id straight through the bpf(2) syscall (root only; Linux x86_64/arm64).

`bpftool -j map dump` of a 32768-record trace map prints some 80 MB of JSON (bytes as hex strings
and the BTF-formatted value besides); the tests read the used prefix of a trace map record by
record instead (BPF_MAP_GET_FD_BY_ID, then BPF_MAP_LOOKUP_ELEM per key), which takes
milliseconds. Standard library only (ctypes).
"""
from __future__ import annotations

import ctypes
import os
import platform
import struct
from typing import Any, Callable

_SYS_BPF = {"x86_64": 321, "aarch64": 280, "arm64": 280}
BPF_MAP_LOOKUP_ELEM = 1
BPF_MAP_GET_FD_BY_ID = 14

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    nr = _SYS_BPF.get(platform.machine())
    if nr is None:
        raise OSError(f"bpf(2) syscall number unknown for {platform.machine()}")
    r = _libc.syscall(ctypes.c_long(nr), ctypes.c_int(cmd), attr, ctypes.c_uint(len(attr)))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


class BpfMap:
    """An open map (a file descriptor of its own, closed with close())."""

    def __init__(self, map_id: int, value_size: int, key_size: int = 4):
        attr = ctypes.create_string_buffer(struct.pack("<III", map_id, 0, 0), 128)
        self.fd = _bpf(BPF_MAP_GET_FD_BY_ID, attr)
        self.value_size, self.key_size = value_size, key_size

    def lookup(self, key: int) -> bytes | None:
        k = ctypes.create_string_buffer(key.to_bytes(self.key_size, "little"), self.key_size)
        v = ctypes.create_string_buffer(self.value_size)
        attr = ctypes.create_string_buffer(struct.pack("<IIQQQ", self.fd, 0, ctypes.addressof(k),
                                                       ctypes.addressof(v), 0), 128)
        try:
            _bpf(BPF_MAP_LOOKUP_ELEM, attr)
        except FileNotFoundError:
            return None
        return v.raw

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "BpfMap":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_trace(maps: dict[str, int], stem: str, record_size: int, decode: Callable[[bytes], Any],
               limit: int | None = None) -> tuple[int, list]:
    """A trace build's records: (how many the program wrote, as `<stem>_tidx` counts them; the
    decoded records of `<stem>_trace`, in order, the first `limit` at most; a slot that does not
    decode is left out)."""
    with BpfMap(maps[f"{stem}_tidx"], 4) as idx:
        raw = idx.lookup(0)
        used = int.from_bytes(raw, "little") if raw else 0
    out = []
    with BpfMap(maps[f"{stem}_trace"], record_size) as trace:
        for i in range(used if limit is None else min(used, limit)):
            raw = trace.lookup(i)
            r = decode(raw) if raw else None
            if r is not None:
                out.append(r)
    return used, out
