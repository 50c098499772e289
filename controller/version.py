"""What ctl is: its version, the git commit it runs from, and the versions of its Python
dependencies (for `ctl --version` and every run record's manifest).

The version is the installed distribution's (`importlib.metadata`), else the checkout's
`pyproject.toml`. The commit is read from the checkout's git directory when ctl runs from a
checkout (`+dirty` when tracked files differ), else from `controller/_build.json`, which a
wheel build may carry; otherwise it is unknown and said so. Nothing here fails: a value that
cannot be read is None.
"""
from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
CHECKOUT = PACKAGE_ROOT.parent
DISTRIBUTION = "ctl"
# The dependencies whose versions a record names (they shape what a run measures or stores).
DEPENDENCIES = ("asyncssh", "pydantic", "PyYAML", "influxdb-client", "pysnmp", "matplotlib", "psycopg", "rich")


@functools.cache
def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    try:
        m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', (CHECKOUT / "pyproject.toml").read_text())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


@functools.cache
def commit() -> str | None:
    """The git commit of the checkout ctl runs from (`+dirty` if tracked files changed)."""
    if (CHECKOUT / ".git").exists():
        try:
            sha = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                 timeout=5).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(CHECKOUT), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            if sha:
                return sha + ("+dirty" if dirty else "")
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return json.loads((PACKAGE_ROOT / "_build.json").read_text()).get("commit")
    except (OSError, ValueError):
        return None


def dependencies() -> dict[str, str | None]:
    return dict(_dependencies())


@functools.cache
def _dependencies() -> tuple[tuple[str, str | None], ...]:
    """Read once per process (importlib.metadata scans the path: 7-20 ms a time)."""
    out: dict[str, str | None] = {}
    for name in DEPENDENCIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return tuple(out.items())


def version_info() -> dict:
    """Everything above, as one JSON-ready mapping."""
    return {"ctl": version(), "commit": commit(), "python": sys.version.split()[0], "dependencies": dependencies()}


def version_line() -> str:
    c = commit()
    return f"ctl {version()} ({'commit ' + c if c else 'commit unknown'}; Python {sys.version.split()[0]})"
