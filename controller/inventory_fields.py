"""Field types of the inventory model: where a value of the YAML file becomes a path on this
machine, an argument of a command, or the key to a secret, it is checked here.

- Paths (`XPath`, `AbsPath`) expand `~`, `${CTL_STATE_DIR}` and `${HOME}` and nothing else:
  another `$VAR` is refused, naming the variable and never its value (a path like
  `/x/${CTL_INFLUX_TOKEN}` would otherwise carry a secret into run records and messages).
  These are the inventory's path fields: `ssh.key_file`, `ssh.known_hosts` (and per host),
  a secret's `file`, `virtual.runtime_dir`, a dnpipe shaper's `binary` and `control_dir`.
  AbsPath fields must be absolute and free of `..`.
- Names that become argv elements (`IfName`, `UserName`, `GpsdAddress`) are checked by the one
  validator in controller.argutil: full match of their kind's pattern, no leading `-`, no
  control character.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from controller.argutil import NAME_PATTERNS, host_port_value, name_value
from controller.errors import ParameterError

# A Linux/FreeBSD interface name as ctl accepts it: 1-15 characters, never a leading '-' (it
# becomes an argv element of ip, tc, ethtool, ifconfig). One pattern per kind, in argutil.
IFNAME = "^" + NAME_PATTERNS["interface"] + "$"


# The only variables a path may name: ctl sets CTL_STATE_DIR before loading an inventory.
# Any other `$...` is refused (a path like /x/${CTL_INFLUX_TOKEN} would put a secret into run
# records and error messages); the message names the variable, never its value.
PATH_VARIABLES = ("CTL_STATE_DIR", "HOME")
_VAR = re.compile(r"\$(\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*)?")


def expand_path(v: Any) -> Any:
    """`~` and ${CTL_STATE_DIR} / ${HOME} in paths, nothing else."""
    if not isinstance(v, (str, Path)):
        return v
    text = str(v)

    def sub(m: re.Match) -> str:
        name = (m.group(1) or "").strip("{}")
        if name not in PATH_VARIABLES or not m.group(1) or (m.group(1).startswith("{") and not m.group(1).endswith("}")):
            shown = m.group(0)[:40]
            raise ValueError(f"{shown!r}: only ${{CTL_STATE_DIR}}, ${{HOME}} and ~ are expanded in paths")
        value = os.environ.get(name)
        if not value:
            raise ValueError(f"${{{name}}} is not set")
        return value
    text = _VAR.sub(sub, text)
    if text.startswith("~"):
        text = os.path.expanduser(text)
    if any(ord(c) < 32 for c in text):
        raise ValueError("a path cannot hold a NUL, a line break or another control character")
    if text.startswith("-"):
        raise ValueError(f"{text[:40]!r} starts with '-' (it would be read as an option)")
    return Path(text)


def _absolute(p: Path) -> Path:
    if not p.is_absolute():
        raise ValueError(f"{str(p)[:60]!r} is not an absolute path (relative to what? write it out, or use "
                         "~ or ${CTL_STATE_DIR})")
    if ".." in p.parts:
        raise ValueError(f"{str(p)[:60]!r}: no '..' in a path ctl creates or reads files under")
    return p


def _checked(check: Any) -> Any:
    """A pydantic validator from a controller.argutil check (its ParameterError a ValueError)."""
    def run(v: Any) -> Any:
        try:
            return check(v)
        except ParameterError as exc:
            raise ValueError(str(exc).split(": ", 1)[-1]) from None
    return AfterValidator(run)


# Paths: `~`, ${CTL_STATE_DIR} and ${HOME} expanded (nothing else), never a leading '-'.
# AbsPath also: absolute, without '..' (the files ctl creates, the keys it reads).
XPath = Annotated[Path, BeforeValidator(expand_path)]
AbsPath = Annotated[Path, BeforeValidator(expand_path), AfterValidator(_absolute)]
# Names that become argv elements (ip, tc, ethtool, ifconfig; ssh's user), one validator each.
IfName = Annotated[str, _checked(lambda v: name_value(v, "interface", "interface"))]
UserName = Annotated[str, _checked(lambda v: name_value(v, "user", "user"))]
GpsdAddress = Annotated[str, _checked(lambda v: host_port_value(v, "gpsd"))]
MAC = r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"


def first_line(path: Path, limit: int = 64 << 10) -> str:
    """The first line of a secret file, stripped; read without blocking on a FIFO and at most
    `limit` bytes (a secret is short: /dev/zero must not be read until memory runs out)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        data = os.read(fd, limit)
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace").split("\n", 1)[0].strip()
