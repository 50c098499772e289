"""Compile ctl's congestion controls for a kernel, against that kernel's own BTF.

A program is built for one kernel: `vmlinux.h` is generated from the kernel's BTF
(`/sys/kernel/btf/vmlinux`: this machine's for the virtual rack, or the copy fetched from an
endpoint of a physical rack), then every source is compiled with clang. The objects go to
`<dest>/<btf-id>[-trace]/` next to a manifest naming each object's sha256, the BTF it was
built for and the toolchain; an unchanged build is reused. `<btf-id>` is the first 16 hex
digits of the BTF's sha256, so two endpoints with the same kernel share one build.

    python3 -m nodes.congestion.build [--btf FILE] [--dest DIR] [--trace] [--arch x86]

Commands are argv lists (no shell); errors are BuildError with the tool's own message.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nodes.congestion.btfcheck import UnsafeBTF, check_file, shown_diagnostics
from nodes.congestion.catalog import ALGORITHMS, BPF_DIR, Algorithm

LOCAL_BTF = Path("/sys/kernel/btf/vmlinux")
FORMAT = 3          # 2: reproducible objects (path-independent debug information); 3: variants (defines)
ARCHES = {"x86_64": "x86", "amd64": "x86", "aarch64": "arm64", "arm64": "arm64", "s390x": "s390",
          "ppc64le": "powerpc", "riscv64": "riscv"}


class BuildError(Exception):
    """The toolchain is missing or refused a source."""


@dataclass(frozen=True)
class Build:
    directory: Path
    btf_id: str
    trace: bool
    objects: dict[str, dict]        # algorithm -> {"path", "sha256", "source", "source_sha256"}

    def object_of(self, name: str) -> Path:
        return Path(self.objects[name]["path"])

    def sha256_of(self, name: str) -> str:
        return self.objects[name]["sha256"]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def btf_id(btf: Path) -> str:
    return sha256_file(btf)[:16]


def _tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if path is None:
        raise BuildError(f"{name} is not installed (scripts/setup.sh installs clang, bpftool and libbpf-dev)")
    return path


def _run(argv: list[str], what: str) -> str:
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        detail = " ".join(shown_diagnostics(p.stderr or p.stdout).split())[-800:]   # never another file's text
        raise BuildError(f"{what} failed (exit {p.returncode}): {detail}")
    return p.stdout


def compile_argv(clang: str, source: Path, out: Path, include: Path, arch: str, trace: bool,
                 alg: Algorithm | None = None) -> list[str]:
    """The one clang command line of a program (pure). The build is reproducible: the paths of
    this checkout, of the temporary include directory and of the working directory are mapped
    to constants in the debug information, so the same sources for the same BTF give the same
    object (same sha256) on every controller and in every state dir; two racks on one kernel
    can then share one registered program. A variant (`alg` with defines) is the same source
    with its -D flags, its map prefix (CTL_NAME) and its kernel name (CTL_ALG)."""
    argv = [clang, "-g", "-O2", "-target", "bpf", "-mcpu=v3", f"-D__TARGET_ARCH_{arch}", "-I", str(include),
            "-I", str(BPF_DIR), f"-ffile-prefix-map={include}=/ctl/include",
            f"-ffile-prefix-map={BPF_DIR}=/ctl/nodes/congestion/bpf", "-fdebug-compilation-dir=/ctl"]
    if trace:
        argv.append("-DCTL_TRACE")
    if alg is not None and alg.defines:
        argv += [f"-DCTL_NAME={alg.stem}", f"-DCTL_ALG={alg.name}"] + [f"-D{d}" for d in alg.defines]
    return argv + ["-c", str(source), "-o", str(out)]


def _sources_digest() -> str:
    """The sources and what the catalog builds from them (a changed define is a changed build)."""
    h = hashlib.sha256()
    for p in sorted(BPF_DIR.glob("*")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    for name, alg in sorted(ALGORITHMS.items()):
        h.update(json.dumps([name, alg.source, alg.stem, list(alg.defines)]).encode())
    return h.hexdigest()


def build(btf: Path = LOCAL_BTF, dest: Path | None = None, *, trace: bool = False, arch: str | None = None,
          names: list[str] | None = None) -> Build:
    """Build (or reuse) every algorithm for the kernel whose BTF is `btf`."""
    if not btf.exists():
        raise BuildError(f"{btf}: no BTF: this kernel cannot load BPF congestion controls "
                         "(CONFIG_DEBUG_INFO_BTF is off)")
    try:
        check_file(btf)     # an endpoint's BTF is data: its names become C (nodes/congestion/btfcheck.py)
    except UnsafeBTF as exc:
        raise BuildError(str(exc)) from None
    if dest is None:
        dest = Path(os.environ.get("CTL_STATE_DIR", ".state")) / "congestion"
    arch = arch or ARCHES.get(os.uname().machine, "x86")
    bid = btf_id(btf)
    out_dir = dest / (bid + ("-trace" if trace else ""))
    manifest = out_dir / "manifest.json"
    digest = _sources_digest()
    wanted = sorted(names or ALGORITHMS)
    if manifest.exists():
        try:
            m = json.loads(manifest.read_text())
        except ValueError:
            m = {}
        if m.get("format") == FORMAT and m.get("sources_sha256") == digest and m.get("arch") == arch and \
                all(n in m.get("objects", {}) and Path(m["objects"][n]["path"]).exists() for n in wanted):
            return Build(out_dir, bid, trace, {n: m["objects"][n] for n in wanted})
    clang, bpftool = _tool("clang"), _tool("bpftool")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ctl-cc-build-") as tmp:
        include = Path(tmp)
        (include / "vmlinux.h").write_text(_run([bpftool, "btf", "dump", "file", str(btf), "format", "c"],
                                                f"bpftool btf dump of {btf}"))
        objects = {}
        for name in wanted:
            alg = ALGORITHMS[name]
            obj = out_dir / f"{name}.bpf.o"
            part = obj.with_suffix(".o.part")
            _run(compile_argv(clang, alg.path, part, include, arch, trace, alg), f"clang {alg.source} ({name})")
            os.replace(part, obj)
            objects[name] = {"path": str(obj), "sha256": sha256_file(obj), "source": f"nodes/congestion/bpf/{alg.source}",
                             "source_sha256": sha256_file(alg.path), "defines": list(alg.defines),
                             "kernel_name": alg.trace_name if trace else alg.name}
    clang_version = _run([clang, "--version"], "clang --version").splitlines()[0]
    doc = {"format": FORMAT, "btf_id": bid, "btf_sha256": sha256_file(btf), "arch": arch, "trace": trace,
           "sources_sha256": digest, "clang": clang_version, "objects": objects}
    tmp_manifest = manifest.with_suffix(".part")
    tmp_manifest.write_text(json.dumps(doc, indent=1))
    os.replace(tmp_manifest, manifest)
    return Build(out_dir, bid, trace, objects)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m nodes.congestion.build", description=__doc__.splitlines()[0])
    ap.add_argument("--btf", type=Path, default=LOCAL_BTF, help="the kernel's BTF (default: this machine's)")
    ap.add_argument("--dest", type=Path, help="where builds go (default: $CTL_STATE_DIR/congestion)")
    ap.add_argument("--trace", action="store_true", help="the test build that records every decision")
    ap.add_argument("--arch", help="the kernel's architecture (x86, arm64, ...; default: this machine's)")
    args = ap.parse_args(argv)
    try:
        b = build(args.btf, args.dest, trace=args.trace, arch=args.arch)
    except BuildError as exc:
        print(f"build: {exc}", file=sys.stderr)
        return 1
    for name, o in sorted(b.objects.items()):
        print(f"{name:14s} {o['sha256'][:16]}  {o['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
