"""The house rules of the code base, checked on every run of the suite (CONTRIBUTING.md):

- no import cycles between modules of the project (function-level imports included);
- no module over 800 lines (tests and recorded fixtures excepted), and no C source or header of
  the project either (bridges/dnpipe/src, nodes/congestion/bpf; not the generated vmlinux.h);
- the layering: a package imports only packages of its own layer or below
  (cli -> campaign, field -> run, lab, rack -> scenarios -> results, telemetry, traffic
  -> drivers (nodes, bridges) -> base);
- every package has a docstring saying what lives there.

Each failure names the offender and the rule.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests.support.shipped import ROOT as PROJECT

ROOTS = ("controller", "bridges", "nodes")
MAX_LINES = 800

# Highest first. A module may import modules of its own layer or of any layer below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli", ("controller.cli", "controller.__main__")),
    ("apps", ("controller.campaign", "controller.field", "controller.reproduce", "controller.schemas")),
    ("execution", ("controller.run", "controller.lab", "controller.rack")),
    ("scenarios", ("controller.scenarios",)),
    ("services", ("controller.results", "controller.telemetry", "controller.traffic")),
    ("drivers", ("nodes", "bridges")),
    ("base", ("controller",)),   # everything else under controller/: flat base modules, parsers/
)
# Code that runs on modem hosts and endpoints on its own (shipped as files): standard
# library only, never the controller.
SHIPPED = ("nodes.fieldlog", "nodes.agent", "nodes.congestion.hostctl")   # run on a host by themselves


def _modules() -> dict[str, Path]:
    out = {}
    for root in ROOTS:
        for p in sorted((PROJECT / root).rglob("*.py")):
            rel = p.relative_to(PROJECT)
            name = ".".join(rel.with_suffix("").parts)
            out[name.removesuffix(".__init__")] = p
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Project modules `name` imports, anywhere in the file."""
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def layer_of(module: str) -> int:
    for i, (_name, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes if p != "controller"):
            return i
    assert module.split(".")[0] == "controller", module
    return len(LAYERS) - 1


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles (move the shared part down): " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    n = len(MODULES[module].read_text().splitlines())
    assert n <= MAX_LINES, f"{MODULES[module].relative_to(PROJECT)} has {n} lines, over the limit of {MAX_LINES}: " \
                           "split it by concern"


def _c_sources() -> dict[str, Path]:
    """The project's C sources and headers: not vendored code (npm's node_modules), not tests or
    their fixtures, not build output, not vmlinux.h (generated from a kernel's BTF at build time)."""
    out = {}
    for root in ROOTS:
        for p in sorted((PROJECT / root).rglob("*.[ch]")):
            rel = p.relative_to(PROJECT)
            if p.name == "vmlinux.h" or {"node_modules", "tests", "fixtures", "build"} & set(rel.parts):
                continue
            out[str(rel)] = p
    return out


C_SOURCES = _c_sources()


def test_the_c_rule_sees_the_c_code():
    assert {"bridges/dnpipe/src/core.c", "bridges/dnpipe/src/daemon.c", "nodes/congestion/bpf/ctl_cc.h",
            "nodes/congestion/bpf/bbr3.bpf.c"} <= set(C_SOURCES)


@pytest.mark.parametrize("source", sorted(C_SOURCES))
def test_c_source_size(source):
    n = len(C_SOURCES[source].read_text().splitlines())
    assert n <= MAX_LINES, f"{source} has {n} lines, over the limit of {MAX_LINES}: split it by concern " \
                           "(a header per concern, as nodes/congestion/bpf/bbr3_*.h)"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layering(module):
    mine = layer_of(module)
    bad = sorted(d for d in GRAPH[module] if layer_of(d) < mine)
    assert not bad, (f"{module} (layer {LAYERS[mine][0]}) imports from a layer above it: "
                     + ", ".join(f"{d} ({LAYERS[layer_of(d)][0]})" for d in bad))


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(SHIPPED)))
def test_shipped_code_is_standard_library_only(module):
    bad = sorted(d for d in GRAPH[module] if not d.startswith(("nodes.fieldlog", "nodes.agent", "nodes.modem")))
    assert not bad, f"{module} runs on a host by itself but imports {', '.join(bad)}"


@pytest.mark.parametrize("package", sorted(m for m, p in MODULES.items() if p.name == "__init__.py"))
def test_every_package_says_what_lives_there(package):
    doc = ast.get_docstring(ast.parse(MODULES[package].read_text()))
    assert doc and len(doc.split()) >= 8, f"{MODULES[package].relative_to(PROJECT)}: no docstring saying what lives " \
                                          "in the package and what it may import"


def test_layer_table_covers_every_package():
    """A new package under controller/ must be placed in LAYERS (else it would silently count as base)."""
    packages = {m for m, p in MODULES.items() if p.name == "__init__.py" and m.count(".") == 1
                and m.startswith("controller.")}
    placed = {p for _n, prefixes in LAYERS for p in prefixes}
    base_packages = {"controller.parsers", "controller.labdb"}
    assert packages - placed - base_packages == set(), "packages missing from LAYERS: " + \
        ", ".join(sorted(packages - placed - base_packages))


def test_pyflakes_finds_nothing():
    """ruff's pyflakes rules (F: undefined names, unused imports and variables, redefinitions) over
    everything the project ships and tests. An undefined name in a scenario's summary escaped the
    unit tests once and broke `ctl reproduce --smoke` (parallel_streams.pipe_drops); this catches
    that class before the rack does."""
    import subprocess
    import sys
    ruff = Path(sys.executable).with_name("ruff")
    proc = subprocess.run([str(ruff), "check", "--select", "F", "--output-format", "concise", "--no-cache",
                           "controller", "nodes", "bridges", "bench", "scripts", "tests"],
                          cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
