"""Several commands of one host in one round trip (pure: the script, its arguments, its output).

A run reads and changes a host with many small commands (`ip -j addr show`, `sysctl ...`,
`ethtool -k p1`, ...). Each one over SSH is a channel open, an exec and an exit status: a
round trip of 20-50 ms on a loaded controller, paid one after the other. `controller.ssh`
sends a host's consecutive commands as one command line instead: a constant POSIX `sh`
script (`BATCH_SCRIPT`) that gets every command's argv as positional arguments -- data never
becomes shell text -- runs them in order, each with its own `timeout`, stdin from /dev/null,
and stops after the first failing one that must succeed, exactly as `commands.run_all` does.
Each result comes back framed by its byte counts, so any output (newlines, NUL, a fake frame
header) is carried unchanged and the reader is linear.

Frame: `ctl-batch <exit status> <stdout bytes> <stderr bytes>\\n` then the stdout and stderr
bytes. Outputs are held in shell variables (the command line runs under `LC_ALL=C`, so `${#o}`
counts bytes), one fork per command besides the command's own: the shell drops NUL bytes from
them, which the text tools ctl runs never print. Needs `mktemp` and `cat` (POSIX; Linux and
FreeBSD hosts have them).
"""
from __future__ import annotations

from typing import Sequence

from controller.commands import Command

# $1.. are, per command: `1` (stop after it if it fails) or `0`, its argc, its argv. The
# positional parameters are rebuilt per command while `for a do` walks the original list once.
BATCH_SCRIPT = r'''d=$(mktemp -d "${TMPDIR:-/tmp}/ctl-batch.XXXXXX") || exit 125
trap 'rm -rf "$d"' EXIT
first=1 stop= left=-1
for a do
  if [ "$first" = 1 ]; then set --; first=0; fi
  if [ -z "$stop" ]; then stop=$a; continue; fi
  if [ "$left" -lt 0 ]; then left=$a; continue; fi
  set -- "$@" "$a"; left=$((left - 1))
  if [ "$left" -eq 0 ]; then
    o=$("$@" </dev/null 2>"$d/e"; s=$?; printf x; exit $s); s=$?; o=${o%x}; e=
    if [ -s "$d/e" ]; then e=$(cat "$d/e"; printf x); e=${e%x}; fi
    printf 'ctl-batch %s %s %s\n%s%s' "$s" "${#o}" "${#e}" "$o" "$e"
    if [ "$stop" = 1 ] && [ "$s" -ne 0 ]; then exit 0; fi
    set --; stop= left=-1
  fi
done
'''
BATCH_NAME = "ctl-batch"          # $0 of the script
SCRIPT_FAILED = 125               # mktemp failed: nothing ran
TIMEOUT_GRACE_S = 2               # timeout -k: TERM, then KILL this much later
MAX_BATCH_ARGV_BYTES = 96 << 10   # well under any exec request or ARG_MAX: longer lists are split
_HEADER = b"ctl-batch "
_MAX_HEADER = 80


def command_timeout(c: Command, cap: float) -> float:
    return max(min(c.timeout, cap) if c.timeout else cap, 0.1)


def batch_args(commands: Sequence[Command], cap_s: float) -> list[str]:
    """The script's positional arguments for `commands` (each under `timeout -k`, its deadline
    `min(command.timeout, cap_s)`), pure."""
    out: list[str] = []
    for c in commands:
        argv = ["timeout", "-k", str(TIMEOUT_GRACE_S), f"{command_timeout(c, cap_s):g}", *c.argv]
        out += ["1" if c.check else "0", str(len(argv)), *argv]
    return out


def split_batches(commands: Sequence[Command]) -> list[list[Command]]:
    """Consecutive commands grouped so that no group's arguments exceed MAX_BATCH_ARGV_BYTES (a
    command larger than that alone is a group of one); a command with input for its stdin is a
    group of one too (a batch gives its commands /dev/null)."""
    groups: list[list[Command]] = []
    size = 0
    alone = False
    for c in commands:
        n = sum(len(a.encode()) + 1 for a in c.argv) + 32
        if not groups or alone or c.stdin is not None or size + n > MAX_BATCH_ARGV_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(c)
        size += n
        alone = c.stdin is not None
    return groups


class BatchOutputError(ValueError):
    """The host's answer is not a sequence of frames (cut off, or not from the script)."""


def parse_batch_output(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """(exit status, stdout, stderr) of each command that ran, in order. Linear in `data`: each
    header is looked for within its first _MAX_HEADER bytes, each body sliced by its count."""
    out: list[tuple[int, bytes, bytes]] = []
    i, n = 0, len(data)
    while i < n:
        nl = data.find(b"\n", i, min(n, i + _MAX_HEADER))
        if nl < 0 or not data.startswith(_HEADER, i):
            raise BatchOutputError(f"no frame header at byte {i}: {data[i:i + 40]!r}")
        fields = data[i + len(_HEADER):nl].split()
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            raise BatchOutputError(f"bad frame header at byte {i}: {data[i:nl]!r}")
        status, n_out, n_err = (int(f) for f in fields)
        body = nl + 1
        if body + n_out + n_err > n:
            raise BatchOutputError(f"frame at byte {i} announces {n_out} + {n_err} bytes, "
                                   f"{n - body} arrived")
        out.append((status, data[body:body + n_out], data[body + n_out:body + n_out + n_err]))
        i = body + n_out + n_err
    return out
