"""Rack names with a chosen CRC-32, as the reviewer found them: CRC-32 is affine over GF(2), so
a name whose last 16 characters are free to take one of eight letters each (a c e g i k m o:
the byte 0x61 plus any combination of bits 0x02, 0x04, 0x08) can be solved for any 31-bit
value by Gaussian elimination, in well under a millisecond. The names are valid rack names
([a-z][a-z0-9-]*, at most 31 characters with a prefix of up to 15)."""
from __future__ import annotations

import zlib

_FREE_CHARS = 16                      # 48 free bits for 31 equations (full rank)
_BITS = (0x02, 0x04, 0x08)


def crc31(name: str) -> int:
    """The old lock key's second half: crc32(name) & 0x7FFFFFFF."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def name_with_crc31(prefix: str, target: int) -> str:
    """A rack name `prefix` + 16 letters whose crc31 is `target`."""
    base = bytearray(prefix.encode() + b"a" * _FREE_CHARS)
    c0 = zlib.crc32(bytes(base))
    columns: list[tuple[int, int]] = []      # (effect on the CRC, variable index)
    variables: list[tuple[int, int]] = []    # (byte position, bit)
    for i in range(_FREE_CHARS):
        for bit in _BITS:
            pos = len(prefix) + i
            flipped = bytearray(base)
            flipped[pos] ^= bit
            columns.append((zlib.crc32(bytes(flipped)) ^ c0, len(variables)))
            variables.append((pos, bit))
    want = (c0 ^ target) & 0x7FFFFFFF      # the top bit is not part of the key: any value will do
    # Solve sum(x_j * col_j) == want on the low 31 bits (rows: bits, columns: variables).
    rows = []
    for b in range(31):
        mask = 0
        for effect, j in columns:
            if effect >> b & 1:
                mask |= 1 << j
        rows.append([mask, want >> b & 1])
    pivots: list[tuple[int, int]] = []
    r = 0
    for j in range(len(variables)):
        pivot = next((k for k in range(r, len(rows)) if rows[k][0] >> j & 1), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        for k in range(len(rows)):
            if k != r and rows[k][0] >> j & 1:
                rows[k][0] ^= rows[r][0]
                rows[k][1] ^= rows[r][1]
        pivots.append((r, j))
        r += 1
    assert all(m or not v for m, v in rows), "no solution"
    x = [0] * len(variables)
    for row, j in pivots:
        x[j] = rows[row][1]
    out = bytearray(base)
    for (pos, bit), v in zip(variables, x):
        if v:
            out[pos] ^= bit
    name = out.decode()
    assert crc31(name) == target, (name, crc31(name), target)
    return name
