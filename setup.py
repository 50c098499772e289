"""Packaging glue: pyproject.toml declares everything; this only adds the repository's data
folders (the shipped inventories, campaign files, the dnpipe and BitTorrent tools' sources)
to the built package as `controller/shipped/...`, so an installed ctl finds them
(controller.settings.packaged_inventory) while the checkout keeps its top-level layout.
setuptools has no declarative way to map a folder outside the packages into one."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = {"inventory": "controller/shipped/inventory", "campaigns": "controller/shipped/campaigns",
           "bridges/dnpipe": "controller/shipped/dnpipe", "nodes/bittorrent": "controller/shipped/bittorrent"}
PATTERNS = ("*.yaml", "*.json", "*.md", "*.c", "*.h", "Makefile", "*.js")
SKIP = {"node_modules", "build", "tests", "__pycache__"}


def _commit() -> str | None:
    """The git commit being packaged (`+dirty` when tracked files differ), for `ctl --version`."""
    try:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (sha + ("+dirty" if dirty else "")) if sha else None


class BuildPyWithShipped(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return          # `pip install -e .`: the checkout itself is the package, nothing to ship
        build_info = Path(self.build_lib) / "controller" / "_build.json"
        build_info.write_text(json.dumps({"commit": _commit()}) + "\n")
        for src, dest in SHIPPED.items():
            base = ROOT / src
            for p in sorted(base.rglob("*")):
                rel = p.relative_to(base)
                if p.is_file() and not SKIP & set(rel.parts) and any(p.match(pat) for pat in PATTERNS):
                    target = Path(self.build_lib) / dest / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(p, target)


setup(cmdclass={"build_py": BuildPyWithShipped})
