"""Reading what a host sends, bounded (pure of SSH: any reader with `async read(n)`).

A command's output is read in chunks up to a cap, a long-running process's stream line by
line with no line over a limit held: a host's outputs are data, and never make the controller
buffer without bound. Used by `controller.ssh`.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Callable

MAX_LINE = 1 << 20


async def read_capped(reader: Any, cap: int, empty: Any = "") -> tuple[Any, bool]:
    """Everything `reader` sends until EOF, or the first `cap` characters and True when it sends
    more (`empty`: "" for a text stream, b"" for bytes)."""
    parts: list[Any] = []
    size = 0
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            return empty.join(parts), False
        size += len(chunk)
        if size > cap:
            parts.append(chunk[:max(0, cap - (size - len(chunk)))])
            return empty.join(parts), True
        parts.append(chunk)


async def bounded_lines(reader: Any, limit: int = MAX_LINE, on_dropped: Callable[[int], None] | None = None
                        ) -> AsyncIterator[str]:
    """The lines of a stream, each at most `limit` characters: a longer line is dropped whole (its
    length given to `on_dropped`) and reading goes on at the next newline. Linear in the input:
    each chunk is scanned once."""
    buf: list[str] = []
    size = 0
    dropping = False
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            if buf and not dropping:
                yield "".join(buf)
            elif dropping and on_dropped:
                on_dropped(size)
            return
        start = 0
        while True:
            nl = chunk.find("\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if not dropping:
                if size + len(piece) > limit:
                    dropping, buf = True, []
                else:
                    buf.append(piece)
            size += len(piece)
            if nl < 0:
                break
            if dropping:
                if on_dropped:
                    on_dropped(size)
            else:
                yield "".join(buf)
            buf, size, dropping, start = [], 0, False, nl + 1
