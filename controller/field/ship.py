"""The field logger as shipped to a modem host (one checked zip of nodes/, standard library
only) and the short argv commands that install, start, query, stop and read it (pure).
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from typing import Any, Mapping

from controller.commands import Command
from controller.settings import PROJECT_ROOT


PHYSICAL_ROOT = "/var/lib/ctl-field"


def _package_files() -> list[tuple[str, bytes]]:
    """What runs on the modem host: nodes.modem's readers and nodes.fieldlog (not the test doubles)."""
    out = [("nodes/__init__.py", (PROJECT_ROOT / "nodes" / "__init__.py").read_bytes())]
    for pkg in ("modem", "fieldlog"):
        for p in sorted((PROJECT_ROOT / "nodes" / pkg).glob("*.py")):
            if p.name.startswith("emulator") or p.name == "modem_double.py":     # test doubles stay home
                continue
            out.append((f"nodes/{pkg}/{p.name}", p.read_bytes()))
    out.append(("__main__.py", b"from nodes.fieldlog.__main__ import main\nraise SystemExit(main())\n"))
    return out


def build_zipapp() -> tuple[bytes, str]:
    """The logger as one zip file python3 runs directly; deterministic (same sources -> same sha256)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in _package_files():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


# A constant installer: destination and checksum in argv, the zip (base64) on stdin.
INSTALL_SCRIPT = """import base64, hashlib, os, sys
dest, want = sys.argv[1], sys.argv[2]
data = base64.b64decode(sys.stdin.read())
if hashlib.sha256(data).hexdigest() != want:
    print("checksum mismatch"); sys.exit(3)
os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
tmp = dest + ".tmp"
with open(tmp, "wb") as f:
    f.write(data); f.flush(); os.fsync(f.fileno())
os.replace(tmp, dest)
link = os.path.join(os.path.dirname(dest), "fieldlog.pyz")
if os.path.lexists(link + ".tmp"):
    os.unlink(link + ".tmp")
os.symlink(os.path.basename(dest), link + ".tmp")
os.replace(link + ".tmp", link)
print("installed", dest)
"""


def pyz_path(root: str, sha: str) -> str:
    return f"{root}/fieldlog-{sha[:12]}.pyz"


def install_command(root: str, data: bytes, sha: str) -> Command:
    return Command(("python3", "-c", INSTALL_SCRIPT, pyz_path(root, sha), sha), timeout=60, mutates=True,
                   stdin=base64.b64encode(data).decode("ascii"), note="install the field logger")


def start_command(pyz: str, root: str, config: Mapping[str, Any] | None, token: str | None) -> Command:
    argv: tuple[str, ...] = ("python3", pyz, "start", "--root", root)
    if config is not None:
        argv += ("--config", json.dumps(config, separators=(",", ":"), sort_keys=True))
    stdin = None
    if token is not None:
        argv += ("--token-stdin",)
        stdin = token + "\n"          # never in argv: any local user can read argv in ps
    return Command(argv, timeout=45, mutates=True, stdin=stdin,
                   note="start the field logger" if config is not None else "resume the field logger")


def status_command(pyz: str, root: str) -> Command:
    return Command(("python3", pyz, "status", "--root", root), timeout=20, note="field logger status")


def stop_command(pyz: str, root: str, pid: int | None) -> Command:
    argv: tuple[str, ...] = ("python3", pyz, "stop", "--root", root, "--timeout", "40")
    if pid is not None:
        argv += ("--pid", str(pid))
    return Command(argv, timeout=60, mutates=True, note="stop the field logger by its PID")


def cat_command(pyz: str, root: str, run_id: str, name: str, offset: int, max_bytes: int = 4 << 20) -> Command:
    return Command(("python3", pyz, "cat", "--root", root, "--run", run_id, "--file", name, "--offset", str(offset),
                    "--max-bytes", str(max_bytes)), timeout=60, note=f"fetch {name}")
