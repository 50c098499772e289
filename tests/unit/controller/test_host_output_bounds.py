"""What a host sends is data, and bounded (issue 23: outputs of hosts are untrusted): a command's
stdout and stderr are read up to a cap, a streamed line over the line cap is dropped whole and
counted, and a sampler line that is JSON but not a sampler record is skipped, not fatal."""
from __future__ import annotations

import asyncio

from controller import ssh
from controller.telemetry.hosts import HostStream


class Reader:
    """A stream as asyncssh gives it: read(n) returns at most n characters, '' at EOF."""

    def __init__(self, text: str, chunk: int = 7):
        self.text, self.pos, self.chunk = text, 0, chunk

    async def read(self, n: int) -> str:
        out = self.text[self.pos:self.pos + min(n, self.chunk)]
        self.pos += len(out)
        return out


def lines(text: str, limit: int, chunk: int = 7) -> tuple[list[str], list[int]]:
    dropped: list[int] = []

    async def go() -> list[str]:
        return [x async for x in ssh.bounded_lines(Reader(text, chunk), limit, dropped.append)]
    return asyncio.run(go()), dropped


def test_lines_split_across_chunks_come_back_whole():
    got, dropped = lines("alpha\nbeta\n\ngamma", 100, chunk=3)
    assert got == ["alpha", "beta", "", "gamma"] and dropped == []


def test_a_line_over_the_limit_is_dropped_whole_and_reading_goes_on():
    text = "ok\n" + "x" * 50 + "\nafter\n" + "y" * 30
    got, dropped = lines(text, 20, chunk=4)
    assert got == ["ok", "after"] and dropped == [50, 30]


def test_a_huge_line_without_newline_is_never_held():
    class Endless:
        sent = 0

        async def read(self, n: int) -> str:
            if self.sent > 5_000_000:
                return ""
            self.sent += n
            return "z" * n

    dropped: list[int] = []

    async def go() -> list[str]:
        return [x async for x in ssh.bounded_lines(Endless(), 1000, dropped.append)]
    assert asyncio.run(go()) == [] and dropped and dropped[0] > 5_000_000


def test_a_command_output_over_its_cap_is_cut():
    text, over = asyncio.run(ssh._read_capped(Reader("a" * 100, chunk=9), 40))
    assert over and text == "a" * 40
    text, over = asyncio.run(ssh._read_capped(Reader("b" * 40, chunk=9), 40))
    assert not over and text == "b" * 40


class Hub:
    def __init__(self):
        self.points = []

    def emit(self, pts):
        self.points.extend(pts)

    def on_stream_lost(self, host, exc):
        raise AssertionError("the stream must not be lost")


class Proc:
    def __init__(self, items):
        self.items = items

    async def lines(self):
        for x in self.items:
            yield x


def test_a_sampler_line_that_is_json_but_not_a_record_is_skipped():
    hub = Hub()
    s = HostStream(hub, "a1", ["p1"], [], {}, 0)
    s.proc = Proc(["[1, 2]", "42", '"text"', '{"t": "not-a-number"}', '{"hello": 1}', "not json",
                   '{"t": 1000000000, "late": 3}'])
    asyncio.run(s._consume())
    assert s.malformed == 1 and s.late == 3 and s.error is None


def test_a_protocol_line_read_one_at_a_time_leaves_the_rest_to_the_stream():
    """A spawned process's first line (`ctl-pid ...`) and a helper's protocol lines are read one
    by one; what was read past a newline is kept, so the line stream that follows loses nothing."""
    from controller.streams import LineReader

    async def go() -> tuple:
        r = LineReader(Reader("ctl-pid 42 Thu\nfirst\nsecond\nlast", chunk=5), chunk=8)
        a = await r.readline(100)
        b = await r.readline(100)
        rest = [x async for x in ssh.bounded_lines(r, 100)]
        return a, b, rest
    assert asyncio.run(go()) == (("ctl-pid 42 Thu\n", False), ("first\n", False), ["second", "last"])


def test_a_protocol_line_over_its_limit_is_refused_not_held():
    from controller.streams import LineReader

    class Endless:
        sent = 0

        async def read(self, n: int) -> str:
            self.sent += n
            return "z" * n

    src = Endless()

    async def go() -> tuple[str, bool]:
        return await LineReader(src).readline(10_000)
    line, over = asyncio.run(go())
    assert over and len(line) == 10_000 and src.sent < 20_000        # read up to the limit, no further


def test_a_line_exactly_at_the_limit_is_whole_and_eof_gives_the_rest():
    from controller.streams import LineReader

    async def go() -> list:
        r = LineReader(Reader("abcd\nxyz", chunk=2), chunk=3)
        return [await r.readline(4), await r.readline(4), await r.readline(4)]
    assert asyncio.run(go()) == [("abcd\n", False), ("xyz", False), ("", False)]


def test_a_timeout_in_the_middle_of_a_line_loses_nothing_read():
    from controller.streams import LineReader

    class Slow:
        def __init__(self) -> None:
            self.parts = ["par", "tial"]

        async def read(self, n: int) -> str:
            if self.parts:
                return self.parts.pop(0)
            await asyncio.sleep(10)
            return ""

    async def go() -> list:
        r = LineReader(Slow())
        try:
            await asyncio.wait_for(r.readline(100), 0.05)
        except asyncio.TimeoutError:
            pass
        return [await r.read(100)]
    assert asyncio.run(go()) == ["partial"]
