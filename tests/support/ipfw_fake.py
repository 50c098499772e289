"""A simulated FreeBSD dummynet bridge: a TEST DOUBLE for hardware we do not have here.

`FakeDummynetHost` satisfies controller.commands.Session. It keeps pipes and ipfw rules in
memory and answers the commands ctl's dummynet driver sends the way FreeBSD does, with its
own code written from the C sources (sbin/ipfw/dummynet.c, ipfw2.c, ip_dummynet.c,
libutil humanize_number) -- deliberately NOT reusing the parser's render() methods, so
that a formatting mistake on either side shows up as a test failure:

- `ipfw|dnctl pipe N config ...` parses its arguments like ipfw does, quirks included:
  strtoul() numbers (no decimals, 0x/0 prefixes), K/M(/G on 13+) multipliers, a `B`
  suffix meaning bytes (x8), plr clamped to [0,1] and stored as (int)(p*0x7fffffff),
  queue `K` = KiB and `B` = bytes, the userland limits ("delay must be < 10000", "2 <=
  queue size <= N", "queue size must be < NB", "bandwidth too large") and the kernel's
  silent adjustments (delay truncated to ticks, byte queues < 1500 bumped to 16384);
- `pipe show` prints with the exact format strings of list_pipes()/print_flowset_parms();
- `ipfw -S list`, `ipfw add`, `ipfw delete`, `sysctl`, `freebsd-version -u`, `uname -a`;
- `dnctl` exists only on 14+.

What it does not model: packet forwarding itself, masks, RED/AQM, profiles. Error
message texts for failures not quoted in the fixture (e.g. deleting a missing rule) are
approximations; tests only rely on the exit status there.
"""
# The printf-style formatting below mirrors the C format strings on purpose.
# ruff: noqa: UP031
from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from controller.commands import Command, CommandResult

PLR_SCALE = 0x7FFFFFFF
DN_MAX_ID = 65536
UINT_MAX = 4294967295


def strtoul(s: str) -> tuple[int, str]:
    """C strtoul(s, &end, 0) for non-negative input: (value, rest)."""
    m = re.match(r"\s*(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", s)
    if not m:
        return 0, s
    t = m.group(1)
    if t.lower().startswith("0x"):
        v = int(t, 16)
    elif t.startswith("0") and len(t) > 1:
        v = int(t, 8)
    else:
        v = int(t)
    return v, s[m.end():]


def strtod(s: str) -> float:
    m = re.match(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)", s)
    return float(m.group(1)) if m else 0.0


def humanize_number(quotient: int) -> str:
    """libutil humanize_number(buf, 12, q, "", HN_AUTOSCALE, 0) as dummynet calls it."""
    length, baselen = 12, 1 + 1 + 1     # base, digit, separator " "
    prefixes = ["", "k", "M", "G", "T", "P", "E"]
    remainder = 0
    maximum = 10 ** (length - baselen)
    i = 0
    while (quotient >= maximum or (quotient == maximum - 1 and remainder >= 950)) and i < 7:
        remainder = quotient % 1024
        quotient //= 1024
        i += 1
    return "%d %s" % (quotient + (remainder + 50) // 1000, prefixes[i])


@dataclass
class FakePipe:
    bw: int = 0                 # bit/s
    delay_ticks: int = 0
    burst_scaled: int = 0       # bytes * 8 * hz, as config_link() stores it
    qsize: int = 50
    qbytes: bool = False
    plr: int = 0                # 31-bit
    flows: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # tot_pkts, tot_bytes, q_pkts, q_bytes, drops


class _Exit(Exception):
    def __init__(self, status: int, stderr: str):
        super().__init__(stderr)
        self.status, self.stderr = status, stderr


def _bw_text(b: float, *, gbit: bool, unlimited: str) -> str:
    """The bandwidth as dummynet.c / ipfw2.c print it (%7.3f of the largest unit that fits)."""
    if b == 0:
        return unlimited
    if gbit and b >= 1000000000:
        return "%7.3f Gbit/s" % (b / 1000000000)
    if b >= 1000000:
        return "%7.3f Mbit/s" % (b / 1000000)
    if b >= 1000:
        return "%7.3f Kbit/s" % (b / 1000)
    return "%7.3f bit/s " % b


def _queue_and_plr(p: "FakePipe") -> tuple[str, str]:
    """print_flowset_parms() of both the old and the new dummynet.c: queue size, then plr glued to it."""
    if p.qbytes:
        qs = "%d KB" % (p.qsize // 1024) if p.qsize >= 8192 else "%d B" % p.qsize
    else:
        qs = "%3d sl." % p.qsize
    return qs, "plr %f" % (1.0 * p.plr / float(PLR_SCALE)) if p.plr else ""


class FakeDummynetHost:
    """In-memory FreeBSD bridge answering ipfw/dnctl/sysctl like the real one (see module doc)."""

    def __init__(self, host: str = "dn2", release: str = "13.3-RELEASE", *, hz: int = 1000,
                 slot_limit: int = 100, byte_limit: int = 1048576, sysctls: dict[str, str] | None = None):
        self.host = host
        self.release = release
        self.major = int(release.split(".")[0])
        self.hz = hz
        self.sysctls: dict[str, str] = {
            "kern.hz": str(hz),
            "net.inet.ip.dummynet.expire": "1",
            "net.inet.ip.dummynet.hash_size": "64",
            "net.inet.ip.dummynet.io_fast": "0",
            "net.inet.ip.dummynet.pipe_byte_limit": str(byte_limit),
            "net.inet.ip.dummynet.pipe_slot_limit": str(slot_limit),
            "net.link.bridge.ipfw": "1",
            "net.link.bridge.ipfw_arp": "0",
            "net.link.bridge.pfil_bridge": "0",
            "net.link.bridge.pfil_member": "0",
            "net.link.bridge.pfil_onlyip": "0",
            "net.link.ether.ipfw": "1",
            "net.inet.ip.fw.one_pass": "1",
        }
        self.sysctls.update(sysctls or {})
        self.pipes: dict[int, FakePipe] = {}
        self.rules: list[tuple[int, int, tuple[str, ...]]] = []   # (number, set, tokens) in insertion order
        self.disabled_sets: set[int] = set()
        self.log: list[tuple[str, ...]] = []
        self.mutations: list[tuple[str, ...]] = []
        self.spawned: list[tuple[str, ...]] = []

    # ---- Session -------------------------------------------------------------------------------

    async def run(self, command: Command) -> CommandResult:
        argv = tuple(command.argv)
        self.log.append(argv)
        try:
            out = self._dispatch(argv)
            status, stdout, stderr = 0, out, ""
        except _Exit as e:
            status, stdout, stderr = e.status, getattr(e, "stdout", ""), e.stderr
        return CommandResult(self.host, argv, status, stdout, stderr, note=command.note)

    async def spawn(self, argv: Sequence[str], *, note: str = "", stdin_open: bool = False) -> _FakeProcess:
        argv = tuple(argv)
        self.spawned.append(argv)
        # The only long-running command ctl's dummynet driver spawns: its sampler loop.
        if len(argv) < 5 or argv[:2] != ("/bin/sh", "-c"):
            raise AssertionError(f"fake host: unexpected spawn {argv!r}")
        interval, cmd = argv[4], argv[5:]
        lines: list[str] = []
        for seq in range(1, 4):
            lines += self._dispatch(tuple(cmd)).splitlines()
            lines.append(f"---ctl-sample {seq} {1700000000 + seq}---")
            for p in self.pipes.values():   # traffic moves between samples
                p.flows = [(a + 10, b + 15000, c, d, e) for (a, b, c, d, e) in p.flows]
        return _FakeProcess(self.host, argv, lines, interval)

    # ---- dispatch ------------------------------------------------------------------------------

    def _dispatch(self, argv: tuple[str, ...]) -> str:
        prog = argv[0]
        if prog == "freebsd-version" and argv[1:] == ("-u",):
            if self.major < 10:                     # freebsd-version(1) appeared in FreeBSD 10.0
                raise _Exit(127, "freebsd-version: not found\n")
            return self.release + "\n"
        if prog == "uname":
            if argv[1:] == ("-r",):
                return self.release + "\n"
            if argv[1:] == ("-a",):
                return f"FreeBSD {self.host} {self.release} FreeBSD {self.release} GENERIC amd64\n"
        if prog == "sysctl":
            return self._sysctl(argv[1:])
        if prog == "dnctl":
            if self.major < 14:
                raise _Exit(127, "sh: dnctl: not found\n")
            return self._dummynet("dnctl", argv[1:])
        if prog == "ipfw":
            args = argv[1:]
            if args[:1] in (("pipe",), ("queue",), ("sched",)):
                return self._dummynet("ipfw", args)
            if args[:2] == ("-S", "list"):
                return self._list(args[2:])
            if args[:1] == ("add",):
                return self._add(args[1:])
            if args[:1] == ("delete",):
                return self._delete(args[1:])
        raise _Exit(127, f"fake host: unsupported command {argv!r}\n")

    def _sysctl(self, names: Sequence[str]) -> str:
        out, err = [], []
        for n in names:
            if n in self.sysctls:
                out.append(f"{n}: {self.sysctls[n]}")
                continue
            sub = sorted(k for k in self.sysctls if k.startswith(n + "."))
            if sub:
                out += [f"{k}: {self.sysctls[k]}" for k in sub]
            else:
                err.append(f"sysctl: unknown oid '{n}'")
        if err:
            # like FreeBSD sysctl: prints what it can, complains, exits 1
            raise _Exit(1, "\n".join(err) + "\n") if not out else _PartialExit("\n".join(out) + "\n", err)
        return "\n".join(out) + "\n"

    # ---- dummynet ------------------------------------------------------------------------------

    def _dummynet(self, prog: str, args: tuple[str, ...]) -> str:
        if args[:1] != ("pipe",):
            raise _Exit(64, f"{prog}: fake host models pipes only\n")
        rest = args[1:]
        if rest == ("show",) or rest == ("list",):
            return self._pipe_show()
        if len(rest) >= 2 and rest[0].isdigit():
            n = int(rest[0])
            if rest[1] == "config":
                self.mutations.append((prog, "pipe") + rest)
                self._config(prog, n, list(rest[2:]))
                return ""
            if rest[1:] == ("delete",):
                self.mutations.append((prog, "pipe") + rest)
                if n not in self.pipes:
                    raise _Exit(69, f"{prog}: rule 1: setsockopt(IP_DUMMYNET_DEL): No such file or directory\n")
                del self.pipes[n]
                return ""
            if rest[1:] == ("show",):
                return self._pipe_show(only=n)
        raise _Exit(64, f"{prog}: unsupported {args!r}\n")

    def _read_bandwidth(self, prog: str, arg: str) -> int:
        if "a" <= arg[:1] <= "z":
            raise _Exit(1, f"{prog}: no if support\n")
        bw, end = strtoul(arg)
        if end[:1] in ("K", "k"):
            end, bw = end[1:], bw * 1000
        elif end[:1] in ("M", "m"):
            end, bw = end[1:], bw * 1000000
        elif self.major >= 13 and end[:1] in ("G", "g"):
            end, bw = end[1:], bw * 1000000000
        if (end[:1] == "B" and not end.startswith("Bi")) or end.startswith("by"):
            bw *= 8
        if self.major >= 13:
            if bw > UINT_MAX:
                raise _Exit(65, f"{prog}: bandwidth too large\n")
        else:
            bw &= 0xFFFFFFFF                # int arithmetic wraps ...
            if bw >= 2**31:                 # ... and a negative int is "too large"
                raise _Exit(65, f"{prog}: bandwidth too large\n")
        return bw

    def _config(self, prog: str, n: int, av: list[str]) -> None:
        if n <= 0:
            raise _Exit(64, f"{prog}: need a pipe/flowset/sched number\n")
        bw, delay, plr, qsize, qbytes, burst = 0, 0, 0, 0, False, 0
        while av:
            tok = av.pop(0)
            if tok in ("bw", "bandwidth"):
                bw = self._read_bandwidth(prog, av.pop(0))
            elif tok == "delay":
                delay, _ = strtoul(av.pop(0))
            elif tok == "plr":
                d = strtod(av.pop(0))
                d = 1.0 if d > 1 else 0.0 if d < 0 else d
                plr = int(d * PLR_SCALE)
            elif tok == "queue":
                qsize, end = strtoul(av.pop(0))
                if end[:1] in ("K", "k"):
                    qbytes, qsize = True, qsize * 1024
                elif end[:1] == "B" or end.startswith("by"):
                    qbytes = True
            elif tok == "burst":
                burst, end = strtoul(av.pop(0))
                if end:
                    raise _Exit(65, f"{prog}: burst: invalid argument\n")
            else:
                raise _Exit(65, f"{prog}: unrecognised option ``{tok}''\n")
        if delay > 10000:
            raise _Exit(65, f"{prog}: delay must be < 10000\n")
        slot_limit = int(self.sysctls["net.inet.ip.dummynet.pipe_slot_limit"])
        byte_limit = int(self.sysctls["net.inet.ip.dummynet.pipe_byte_limit"])
        if qbytes and qsize > byte_limit:
            raise _Exit(65, f"{prog}: queue size must be < {byte_limit}B\n")
        if not qbytes and qsize > slot_limit:
            raise _Exit(65, f"{prog}: 2 <= queue size <= {slot_limit}\n")
        # kernel side: config_fs() bounds, config_link() units
        if qbytes:
            qsize = 16384 if qsize < 1500 else min(qsize, byte_limit)
        else:
            qsize = 50 if qsize < 1 else min(qsize, slot_limit)
        old = self.pipes.get(n)
        self.pipes[n] = FakePipe(bw=bw, delay_ticks=delay * self.hz // 1000, burst_scaled=burst * 8 * self.hz,
                                 qsize=qsize, qbytes=qbytes, plr=plr, flows=old.flows if old else [])

    def _pipe_show_classic(self, only: int | None = None) -> str:
        """FreeBSD <= 7 (ipfw2.c list_pipes, print_flowset_parms, list_queues; the format macOS
        dnctl and Emulab delay nodes still print): one line per pipe, then, for a pipe with flows,
        its mask and the header before them."""
        out: list[str] = []
        for n in sorted(self.pipes):
            if only is not None and n != only:
                continue
            p = self.pipes[n]
            buf = _bw_text(float(p.bw), gbit=False, unlimited="unlimited")     # the old code: no Gbit branch
            prefix = "%05d: %s %4d ms " % (n, buf, p.delay_ticks * 1000 // self.hz)
            qs, plr = _queue_and_plr(p)
            out.append("%s %s%s %d queues (%d buckets) %s" % (prefix, qs, plr, len(p.flows), 1, "droptail"))
            if p.flows:
                out.append("    mask: 0x%02x 0x%08x/0x%04x -> 0x%08x/0x%04x" % (0, 0, 0, 0, 0))
                out.append("BKT Prot ___Source IP/port____ ____Dest. IP/port____ Tot_pkt/bytes Pkt/Byte Drp")
            for (tp, tb, qp, qb, dr) in p.flows:
                out.append("%3d " % 0 + "%-4s " % "ip" + "%15s/%-5d " % ("0.0.0.0", 0) + "%15s/%-5d " % ("0.0.0.0", 0)
                           + "%4d %8d %2u %4u %3u" % (tp, tb, qp, qb, dr))
        return "".join(line + "\n" for line in out)

    def _pipe_show(self, only: int | None = None) -> str:
        if self.major <= 7:
            return self._pipe_show_classic(only)
        out: list[str] = []
        header_done = False
        for n in sorted(self.pipes):
            if only is not None and n != only:
                continue
            p = self.pipes[n]
            bwbuf = _bw_text(float(p.bw), gbit=self.major >= 13, unlimited="unlimited     ")
            burst = humanize_number(p.burst_scaled // (8 * self.hz))
            out.append("%05d: %s %4d ms burst %s" % (n % DN_MAX_ID, bwbuf, p.delay_ticks * 1000 // self.hz, burst))
            qs, plr = _queue_and_plr(p)
            out.append("q%05d %s%s %d flows (%d buckets) sched %d weight %d lmax %d pri %d %s"
                       % (n + 2 * DN_MAX_ID, qs, plr, len(p.flows), 1, n + DN_MAX_ID, 0, 0, 0, "droptail"))
            out.append(" sched %d type %s flags 0x%x %d buckets %d active" % (n + DN_MAX_ID, "FIFO", 0, 0, len(p.flows)))
            for (tp, tb, qp, qb, dr) in p.flows:
                if not header_done:   # newer ipfw: one header per listing
                    out.append("BKT Prot ___Source IP/port____ ____Dest. IP/port____ Tot_pkt/bytes Pkt/Byte Drp")
                    header_done = True
                out.append("%3u%c" % (0, " ") + "%-4s " % "ip" + "%15s/%-5d " % ("0.0.0.0", 0)
                           + "%15s/%-5d " % ("0.0.0.0", 0) + "%4d " % tp + "%8d " % tb + "%2u %4u %3u" % (qp, qb, dr))
        # real ipfw output lines end with the humanize_number separator (trailing blank)
        return "".join(line + "\n" for line in out)

    # ---- rules ---------------------------------------------------------------------------------

    def _rule_text(self, number: int, set_no: int, tokens: tuple[str, ...]) -> str:
        prefix = "# DISABLED " if set_no in self.disabled_sets else ""
        return f"{prefix}{number:05d} set {set_no} " + " ".join(tokens)

    def _list(self, ranges: tuple[str, ...]) -> str:
        rules = sorted(self.rules, key=lambda r: r[0]) + [(65535, 31, ("deny", "ip", "from", "any", "to", "any"))]
        if ranges:
            lo, _, hi = ranges[0].partition("-")
            first, last = int(lo), int(hi or lo)
            rules = [r for r in rules if first <= r[0] <= last]
            if not rules:
                raise _Exit(69, f"ipfw: no rules in range {first}-{last}\n")
        return "".join(self._rule_text(*r) + "\n" for r in rules)

    def _add(self, args: tuple[str, ...]) -> str:
        self.mutations.append(("ipfw", "add") + args)
        rest = list(args)
        number = int(rest.pop(0)) if rest and rest[0].isdigit() else None
        if number is None or not 1 <= number <= 65534:
            raise _Exit(64, "ipfw: fake host requires an explicit rule number\n")
        set_no = 0
        if rest[:1] == ["set"]:
            rest.pop(0)
            set_no = int(rest.pop(0))
        tokens = tuple("ip" if t == "all" and i < 3 else t for i, t in enumerate(rest))
        if "from" not in tokens and "//" not in tokens[:1]:
            raise _Exit(64, "ipfw: fake host expects a full `proto from A to B` body\n")
        # the kernel keeps rules sorted by number, same numbers in insertion order
        at = len([r for r in self.rules if r[0] <= number])
        self.rules.insert(at, (number, set_no, tokens))
        return f"{number:05d} " + " ".join(tokens) + "\n"

    def _delete(self, args: tuple[str, ...]) -> str:
        self.mutations.append(("ipfw", "delete") + args)
        n = int(args[0])
        before = len(self.rules)
        self.rules = [r for r in self.rules if r[0] != n]
        if len(self.rules) == before:
            raise _Exit(69, f"ipfw: rule {n}: setsockopt(IP_FW_XDEL): No such file or directory\n")
        return ""


class _PartialExit(_Exit):
    """sysctl printed some names and failed on others (exit 1 with stdout)."""

    def __init__(self, stdout: str, errors: list[str]):
        super().__init__(1, "\n".join(errors) + "\n")
        self.stdout = stdout


class _FakeProcess:
    """RemoteProcess of the sampler: its output for three iterations of the loop."""

    def __init__(self, host: str, argv: tuple[str, ...], lines: list[str], interval: str):
        self.host, self.argv, self._lines, self.interval = host, argv, lines, interval
        self.pid: int | None = 4242

    async def lines(self) -> AsyncIterator[str]:
        for line in self._lines:
            yield line

    async def wait(self, timeout: float | None = None) -> CommandResult:
        return CommandResult(self.host, self.argv, 0, "\n".join(self._lines) + "\n", "")

    async def terminate(self) -> None:
        return None
