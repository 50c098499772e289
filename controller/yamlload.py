"""The one YAML loader of ctl's own files (inventories, campaign files): safe, bounded, and
every error one line naming the file and the line.

Refused before or while parsing, each with its reason: a file over MAX_BYTES, bytes that are
not UTF-8 text, control characters (NUL, ESC, ...), aliases and anchors (`*name`: the
"billion laughs" expansion, recursive aliases), mapping keys that are not plain scalars
(`? [a, b]`), nesting deeper than MAX_DEPTH, duplicate keys. The loader records the line of
every key, so a model validation error can name the line of the offending field.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from controller.errors import InventoryError

MAX_BYTES = 4 << 20          # an inventory of a large lab is ~100 kB; campaign files are smaller
MAX_DEPTH = 64               # ctl's formats nest about 6 deep
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class _Loader(yaml.SafeLoader):
    """A SafeLoader whose composer refuses aliases and bounds the nesting depth."""

    def __init__(self, stream: str, name: str):
        super().__init__(stream)
        self.name = name
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            ev = self.peek_event()
            raise InventoryError(f"{self.name}:{ev.start_mark.line + 1}: YAML aliases (*{ev.anchor}) are not "
                                 "allowed in ctl files: write the value out")
        ev = self.peek_event()
        if getattr(ev, "anchor", None):
            raise InventoryError(f"{self.name}:{ev.start_mark.line + 1}: YAML anchors (&{ev.anchor}) are not "
                                 "allowed in ctl files")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise InventoryError(f"{self.name}:{ev.start_mark.line + 1}: nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_text_file(path: Path, what: str = "file", limit: int = MAX_BYTES) -> str:
    """A small UTF-8 text file, or a one-line InventoryError saying why not (too big, a device,
    not UTF-8, control characters). Reads at most limit + 1 bytes (so /dev/zero ends quickly)."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except IsADirectoryError:
        raise InventoryError(f"{path}: is a directory, not a {what}") from None
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InventoryError(f"{path}: larger than {limit // (1 << 20)} MiB: not a {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InventoryError(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}): not a {what}") from None
    m = _CONTROL.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise InventoryError(f"{path}:{line}: control character 0x{ord(m.group()):02x} in the text: not a {what}")
    return text


def _construct_with_lines(loader: _Loader, node: yaml.Node, lines: dict, path: tuple) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise InventoryError(f"{loader.name}:{key_node.start_mark.line + 1}: a mapping key must be a plain "
                                     "value, not a list or a mapping")
            key = loader.construct_object(key_node, deep=True)
            if key in out:
                raise InventoryError(f"{loader.name}:{key_node.start_mark.line + 1}: duplicate key {key!r}")
            sub = path + (key,)
            lines[sub] = key_node.start_mark.line + 1
            out[key] = _construct_with_lines(loader, value_node, lines, sub)
            lines[sub] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct_with_lines(loader, n, lines, path + (i,)) for i, n in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_yaml_with_lines(path: Path) -> tuple[Any, dict[tuple, int]]:
    """(data, line of every key path) of a ctl YAML file; every problem an InventoryError."""
    text = read_text_file(path, "YAML file")
    loader = _Loader(text, str(path))
    try:
        node = loader.get_single_node()
        if node is None:
            raise InventoryError(f"{path}: empty file")
        lines: dict[tuple, int] = {}
        data = _construct_with_lines(loader, node, lines, ())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InventoryError(f"{where}: YAML error: {' '.join(str(problem).split())}") from None
    except RecursionError:
        raise InventoryError(f"{path}: nested too deeply") from None
    finally:
        loader.dispose()
    return data, lines
