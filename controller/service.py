"""The campaign daemon as a systemd service: the unit files ctl ships (controller/systemd/),
filled in for one rack and one installation, and put in place by `ctl service install`.

Pure part: `render_units` turns the templates into unit texts (the ctl executable, the account,
the rack's inventory, the evening start time). I/O part: `install_units` writes them (atomic
rename, mode 0644, never through a symlink or into a FIFO) into a directory, /etc/systemd/system by default.
It does not start anything: the caller prints the `systemctl` commands, or runs them with
--enable. The units use StateDirectory=ctl (/var/lib/ctl: the campaign store, locks, builds,
runs) and ConfigurationDirectory=ctl (/etc/ctl: secrets.env), and the dedicated account the
rack allows (`--user ctl` for a physical rack reached over SSH; a virtual rack needs root: it
builds network namespaces, so another account is refused). Their documentation is ctl(1), the
manual page installed with ctl: `Documentation=man:ctl(1)` where man(1) finds it by itself (ctl
installed under /usr or /usr/local), else the installed page's own path (a virtual environment's
share/man/man1/ctl.1; a checkout's man/man1/ctl.1), never a file that is not installed.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from controller.errors import UnsafePath, UsageError
from controller.safefs import open_dir, replace_file_at

TEMPLATES = Path(__file__).resolve().parent / "systemd"
DEFAULT_DEST = Path("/etc/systemd/system")
ALWAYS = ("ctl-campaign.service",)
NIGHTLY = ("ctl-campaign-nightly.service", "ctl-campaign-nightly.timer")
_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_AT = re.compile(r"([01]\d|2[0-3]):[0-5]\d")


@dataclass(frozen=True)
class UnitSettings:
    ctl: str               # absolute path of the ctl executable the service runs
    user: str
    inventory: str         # absolute path of the rack's inventory
    rack: str
    at: str = "21:25"      # the nightly timer's start time
    nightly: bool = False
    no_new_privileges: bool = True
    needs_root: bool = False   # the rack's hosts are made on this machine (a virtual rack): root only
    docs: str = "man:ctl(1)"   # Documentation= (documentation_uri())

    def check(self) -> None:
        if not _USER.fullmatch(self.user):
            raise UsageError(f"service install: --user {self.user!r} is not a login name")
        if self.needs_root and self.user != "root":
            raise UsageError(f"service install: rack {self.rack} is a virtual rack, which needs root (it builds "
                             f"network namespaces and runs its hosts' sshd): --user {self.user} could not run it; "
                             "give --user root, or install the service for a physical rack")
        if not _AT.fullmatch(self.at):
            raise UsageError(f"service install: --at {self.at!r} is not HH:MM")
        if not re.fullmatch(r"man:ctl\(1\)|file:///[^\s%$\\\"']+", self.docs):
            raise UsageError(f"service install: documentation {self.docs!r} is neither man:ctl(1) nor a file:// path")
        for what, path in (("ctl executable", self.ctl), ("inventory", self.inventory)):
            if not os.path.isabs(path) or any(c.isspace() or c in "%$\\\"'" for c in path):
                raise UsageError(f"service install: the {what} path {path!r} must be absolute, without blanks, "
                                 "quotes, % or $ (systemd would read them)")


def render_units(s: UnitSettings) -> dict[str, str]:
    """file name -> unit text (pure, apart from reading the shipped templates)."""
    s.check()
    values = {"@CTL@": s.ctl, "@USER@": s.user, "@INVENTORY@": s.inventory, "@RACK@": s.rack, "@AT@": s.at,
              "@DOCS@": s.docs,
              "@NO_NEW_PRIVILEGES@": "yes" if s.no_new_privileges else "no"}
    out = {}
    for name in ALWAYS + (NIGHTLY if s.nightly else ()):
        text = (TEMPLATES / name).read_text()
        for k, v in values.items():
            text = text.replace(k, v)
        left = sorted(set(re.findall(r"@[A-Z_]+@", text)))
        if left:   # a template names a value nobody fills in: a bug in the shipped files
            raise AssertionError(f"{name}: unfilled {', '.join(left)}")
        out[name] = text
    return out


def install_units(units: dict[str, str], dest: Path = DEFAULT_DEST) -> list[Path]:
    """Write each unit into `dest` (atomically; an existing unit file is replaced). `dest` must be a
    real directory of ours that others cannot write to (not a symlink); a unit's name there that
    is a symlink, a FIFO, a device or a directory is refused and left as it is. Written relative
    to the directory's descriptor (controller.safefs): never through a link, never blocking on a
    FIFO. Every refusal is one line (UsageError, exit 2) before that file is written."""
    try:
        fd = open_dir(dest, "service install: --dest", create=False, private=True)
    except UnsafePath as exc:
        raise UsageError(str(exc)) from None
    written = []
    try:
        for name, text in units.items():
            try:
                replace_file_at(fd, name, text, "service install: unit file", str(dest / name), mode=0o644)
            except UnsafePath as exc:
                raise UsageError(str(exc)) from None
            written.append(dest / name)
    finally:
        os.close(fd)
    return written


SYSTEM_PREFIXES = (Path("/usr"), Path("/usr/local"))
CHECKOUT_PAGE = TEMPLATES.parent.parent / "man" / "man1" / "ctl.1"


def documentation_uri(prefix: Path | None = None) -> str:
    """Where the units' documentation is on this machine: man:ctl(1) when ctl's manual page is
    installed where man(1) looks without help (a /usr or /usr/local prefix), else the file:// path
    of the page that is installed (a virtual environment's, or a checkout's), so `Documentation=`
    never names something absent."""
    prefix = Path(sys.prefix if prefix is None else prefix)
    page = prefix / "share" / "man" / "man1" / "ctl.1"
    if page.is_file():
        return "man:ctl(1)" if prefix in SYSTEM_PREFIXES else f"file://{page}"
    return f"file://{CHECKOUT_PAGE}" if CHECKOUT_PAGE.is_file() else "man:ctl(1)"


def default_user(needs_root: bool) -> str:
    """The account the daemon runs as unless told: root for a virtual rack, else `ctl`."""
    return "root" if needs_root else "ctl"


def ctl_executable() -> str:
    """The `ctl` this process runs as: the console script next to the interpreter, else on PATH."""
    here = Path(sys.executable).parent / "ctl"
    if here.exists():
        return str(here)
    found = shutil.which("ctl")
    if found:
        return os.path.abspath(found)
    raise UsageError("service install: no `ctl` executable found next to this Python or on PATH "
                     "(install ctl with pip, or give --ctl PATH)")
