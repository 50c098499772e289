"""A simulated Linux bridge host's tc state: a TEST DOUBLE, not a Linux host.

`FakeLinuxBridge` satisfies controller.commands.Session (a plain class: `host`, async `run`,
async `spawn`). It keeps each port's egress qdiscs in memory and answers the few tc
commands the tc shaper sends, the way iproute2 6.1 on kernel 6.18 does according to the
real captures in tests/fixtures/generated/tc/ (see its README):

- `tc -j -s qdisc show dev X` prints a JSON list in exactly the captured form: objects with
  `kind`, `handle`, `root`/`parent`, `refcnt` (roots only), `options`, then the flat stats
  keys; no `dev` key (a dev filter was given); compact separators. A port nobody configured
  shows `noqueue` (a veth's default, 01_default.s.json). tbf prints `rate` in BYTES per
  second (tc truncates bit/s / 8, like get_rate64()), `burst` in bytes after tick rounding
  (modelled as "one byte less", as 32kb -> 32767 in the capture; the exact tick maths are
  not modelled), `lat` in microseconds, and no `limit`; pfifo `limit` in packets, bfifo
  `limit` in bytes. A tbf without an attached child lists only itself (04_tbf_1gbit).
- `tc qdisc replace dev X root handle 1: tbf rate Nbit burst B limit L` creates or changes
  the root tbf (its previous child stays, as with the kernel's in-place change);
- `tc qdisc replace dev X parent 1:1 handle 10: pfifo|bfifo limit N` attaches the child;
- `tc qdisc del dev X root` returns the port to its default qdisc.

Anything else fails with exit status 1 ("unsupported by the test double"), so a command
ctl should not send shows up as a failure. Error texts for failures are approximations
(tests rely only on the exit status). Foreign state (e.g. the htb of 05_htb.s.json) can be
preloaded with `load_json`. Packet forwarding and counters are not simulated: counters
stay as loaded (0 for state created here).
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from controller.commands import Command, CommandResult

STAT_KEYS = ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")
DEFAULT = {"kind": "noqueue", "handle": "0:", "root": True, "refcnt": 2, "options": {}}


def _zero_stats() -> dict[str, int]:
    return {k: 0 for k in STAT_KEYS}


class FakeLinuxBridge:
    """Test double of a Linux bridge host's egress qdiscs (see module doc)."""

    def __init__(self, host: str, ports: Sequence[str]):
        self.host = host
        self.qdiscs: dict[str, list[dict[str, Any]]] = {p: [self._default()] for p in ports}
        self.log: list[tuple[str, ...]] = []          # every argv received, in order
        self.mutations: list[tuple[str, ...]] = []    # the ones that changed state

    # ---- set-up helpers -------------------------------------------------------------------

    @staticmethod
    def _default() -> dict[str, Any]:
        return {**json.loads(json.dumps(DEFAULT)), **_zero_stats()}

    def load_json(self, port: str, text: str) -> None:
        """Preload a port with a captured `tc -j -s qdisc show dev X` output."""
        self.qdiscs[port] = json.loads(text)

    def show(self, port: str) -> str:
        return json.dumps(self.qdiscs[port], separators=(",", ":")) + "\n"

    # ---- Session ----------------------------------------------------------------------------

    async def run(self, command: Command) -> CommandResult:
        argv = tuple(command.argv)
        self.log.append(argv)
        status, out, err = self._dispatch(argv)
        return CommandResult(self.host, argv, status, out, err, note=command.note)

    async def spawn(self, argv: Sequence[str], *, note: str = "", stdin_open: bool = False):
        raise NotImplementedError("FakeLinuxBridge does not run long-lived processes")

    # ---- tc ---------------------------------------------------------------------------------

    def _dispatch(self, argv: tuple[str, ...]) -> tuple[int, str, str]:
        if len(argv) == 7 and argv[:6] == ("tc", "-j", "-s", "qdisc", "show", "dev"):
            port = argv[6]
            if port not in self.qdiscs:
                return 1, "", f'Cannot find device "{port}"\n'
            return 0, self.show(port), ""
        if argv[:3] == ("tc", "qdisc", "del") and len(argv) == 6 and argv[3] == "dev" and argv[5] == "root":
            return self._del_root(argv[4], argv)
        if argv[:3] == ("tc", "qdisc", "replace") and len(argv) > 5 and argv[3] == "dev":
            port, rest = argv[4], argv[5:]
            if port not in self.qdiscs:
                return 1, "", f'Cannot find device "{port}"\n'
            if rest[:4] == ("root", "handle", "1:", "tbf"):
                return self._replace_tbf(port, rest[4:], argv)
            if rest[:4] == ("parent", "1:1", "handle", "10:") and len(rest) == 7 and rest[5] == "limit":
                return self._replace_child(port, rest[4], rest[6], argv)
        return 1, "", f"unsupported by the test double: {' '.join(argv)}\n"

    def _del_root(self, port: str, argv: tuple[str, ...]) -> tuple[int, str, str]:
        if port not in self.qdiscs:
            return 1, "", f'Cannot find device "{port}"\n'
        root = self.qdiscs[port][0]
        if root["handle"] == "0:":
            return 2, "", "Error: Cannot delete qdisc with handle of zero.\n"
        self.qdiscs[port] = [self._default()]
        self.mutations.append(argv)
        return 0, "", ""

    def _replace_tbf(self, port: str, args: tuple[str, ...], argv: tuple[str, ...]) -> tuple[int, str, str]:
        opts = dict(zip(args[0::2], args[1::2], strict=True)) if len(args) % 2 == 0 else None
        if opts is None or set(opts) != {"rate", "burst", "limit"}:
            return 1, "", "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS (test double)\n"
        m = re.fullmatch(r"([0-9]+)bit", opts["rate"])
        if not m or not opts["burst"].isdigit() or not opts["limit"].isdigit():
            return 1, "", "Illegal rate, burst or limit (test double accepts Nbit and plain bytes)\n"
        rate_bytes = int(m.group(1)) // 8      # get_rate64(): bps / 8, truncated to an integer
        if rate_bytes == 0:
            return 1, "", "Illegal \"rate\"\n"
        burst, limit = int(opts["burst"]), int(opts["limit"])
        lat_us = max(0, (limit - burst) * 1_000_000 // rate_bytes)
        tbf_opts = {"rate": rate_bytes, "burst": burst - 1, "lat": lat_us}
        qs = self.qdiscs[port]
        root = qs[0]
        if root["handle"] == "1:":
            if root["kind"] != "tbf":
                return 2, "", "Error: Invalid qdisc name.\n"
            root["options"] = tbf_opts                       # changed in place; the child stays
        else:
            self.qdiscs[port] = [{"kind": "tbf", "handle": "1:", "root": True, "refcnt": 3,
                                  "options": tbf_opts, **_zero_stats()}]
        self.mutations.append(argv)
        return 0, "", ""

    def _replace_child(self, port: str, kind: str, limit: str, argv: tuple[str, ...]) -> tuple[int, str, str]:
        qs = self.qdiscs[port]
        if qs[0]["handle"] != "1:" or qs[0]["kind"] != "tbf":
            return 2, "", "Error: Failed to find specified qdisc.\n"
        if kind not in ("pfifo", "bfifo") or not limit.isdigit():
            return 1, "", f"unsupported by the test double: {kind} limit {limit}\n"
        child = {"kind": kind, "handle": "10:", "parent": "1:1", "options": {"limit": int(limit)}, **_zero_stats()}
        self.qdiscs[port] = [qs[0], child]
        self.mutations.append(argv)
        return 0, "", ""
