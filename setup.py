"""Packaging glue: pyproject.toml declares everything; this only

- adds the repository's data folders (the shipped inventories, campaign files, the dnpipe and
  BitTorrent tools' sources) to the built package as `controller/shipped/...`, so an installed
  ctl finds them (controller.settings.shipped_dir) while the checkout keeps its top-level layout
  (setuptools has no declarative way to map a folder outside the packages into one);
- installs the manual page, man/man1/ctl.1 (generated from the parser: `python -m
  controller.cli.manpage --write`), as share/man/man1/ctl.1 of the environment, where `man ctl`
  finds it;
- builds out of tree: setuptools' build/ and ctl.egg-info/ go to a temporary directory removed
  afterwards, so `pip install .` writes nothing into the checkout (a stale build/lib could carry
  deleted modules into the next wheel). `--build-base` and `--egg-base` still choose others."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build import build
from setuptools.command.build_py import build_py
from setuptools.command.egg_info import egg_info

ROOT = Path(__file__).resolve().parent
_SCRATCH: list[str] = []


def _scratch() -> str:
    """One temporary directory per build process for setuptools' own files, removed at exit."""
    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="ctl-build-"))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    return _SCRATCH[0]


class BuildOutOfTree(build):
    def initialize_options(self) -> None:
        super().initialize_options()
        self.build_base = os.path.join(_scratch(), "build")


class EggInfoOutOfTree(egg_info):
    def initialize_options(self) -> None:
        super().initialize_options()
        self.egg_base = _scratch()
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


setup(cmdclass={"build_py": BuildPyWithShipped, "build": BuildOutOfTree, "egg_info": EggInfoOutOfTree},
      data_files=[("share/man/man1", ["man/man1/ctl.1"])])
