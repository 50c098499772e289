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


class LineReader:
    """A reader with what a bounded `readline` read past its newline kept in front of it, so a
    protocol's first lines can be read one at a time and the rest of the stream goes on through
    `bounded_lines(this)`: nothing read is lost, and no line is held beyond its limit."""

    def __init__(self, reader: Any, chunk: int = 4096):
        self._reader = reader
        self._front = ""
        self._chunk = chunk

    async def read(self, n: int = -1) -> str:
        if self._front:
            if n is None or n < 0 or n >= len(self._front):
                out, self._front = self._front, ""
            else:
                out, self._front = self._front[:n], self._front[n:]
            return out
        data = await self._reader.read(n)
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else data

    async def readline(self, limit: int = MAX_LINE) -> tuple[str, bool]:
        """The next line with its newline ("" at EOF, the unterminated rest before EOF), and
        False; or the first `limit` characters and True when the line is longer (the rest of that
        line stays unread). Linear: each character is looked at once."""
        parts: list[str] = []
        size = 0
        while True:
            try:
                chunk = await self.read(self._chunk)
            except BaseException:               # a timeout or cancel: what was read stays in front
                self._front = "".join(parts) + self._front
                raise
            if not chunk:
                return "".join(parts), False
            nl = chunk.find("\n")
            end = len(chunk) if nl < 0 else nl + 1
            if size + end > limit + (1 if nl >= 0 else 0):
                keep = max(0, limit - size)
                self._front = chunk[keep:] + self._front
                return "".join(parts) + chunk[:keep], True
            parts.append(chunk[:end])
            size += end
            if nl >= 0:
                self._front = chunk[end:] + self._front
                return "".join(parts), False
