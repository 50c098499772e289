"""The one YAML loader of ctl's own files (inventories, campaign files): safe, bounded, and
every error one line naming the file and the line.

Refused before or while parsing, each with its reason: a file over MAX_BYTES, bytes that are
not UTF-8 text, control characters (NUL, ESC, C1 controls, Unicode line separators and
bidirectional overrides), aliases and anchors (`*name`: the "billion laughs" expansion,
recursive aliases), mapping keys that are not plain scalars (`? [a, b]`), nesting deeper than
MAX_DEPTH, more than MAX_NODES values, duplicate keys, and values of types that are not
plain data (`!!binary`, `!!set`, timestamps, ...). A control character written as a YAML
escape (`"\\e[2J"`, `"\\0"`) is refused like a raw one. The loader records the line of every
key, so a model validation error can name the line of the offending field.

Speed: the file is tokenized by libyaml when PyYAML has it (about 5 times faster than the
pure-Python scanner) and composed here, so that the bounds above hold while parsing: the
largest file accepted is refused or loaded within a few seconds.
"""
from __future__ import annotations

import datetime
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from controller.errors import InventoryError

try:  # libyaml's event parser, when PyYAML was built with it (the PyPI wheels are)
    from yaml.cyaml import CParser as _EventParser
except ImportError:  # pragma: no cover - a PyYAML without libyaml: the pure-Python parser
    from yaml.parser import Parser as _PyParser
    from yaml.reader import Reader as _Reader
    from yaml.scanner import Scanner as _Scanner

    class _EventParser(_Reader, _Scanner, _PyParser):  # type: ignore[no-redef]
        def __init__(self, stream: str):
            _Reader.__init__(self, stream)
            _Scanner.__init__(self)
            _PyParser.__init__(self)

MAX_BYTES = 4 << 20          # an inventory of a large lab is ~100 kB; campaign files are smaller
MAX_DEPTH = 64               # ctl's formats nest about 6 deep
MAX_NODES = 500_000          # a large lab's inventory has ~10 000; a 4 MiB list of numbers ~2 million
# C0 controls but tab, LF and CR; DEL; C1 controls (U+0085 is a YAML line break, which would
# shift every line number after it); U+2028/U+2029 (line breaks to YAML, not to editors); the
# bidirectional overrides and isolates, which make a file read differently than it parses.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# In a value (after YAML escapes), tab and line breaks are text (a block scalar has them); the rest is not.
_VALUE_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_PLAIN_TYPES = (str, int, float, bool, type(None))
_TYPE_NAMES = {bytes: "binary", set: "set", tuple: "pair", datetime.date: "date", datetime.datetime: "timestamp"}


class _Loader(Composer, _EventParser, SafeConstructor, Resolver):  # type: ignore[misc,valid-type]
    """Events from libyaml (or PyYAML's parser), composed here (Composer comes first in the
    method order): aliases and anchors refused, nesting depth and node count bounded."""

    def __init__(self, stream: str, name: str):
        _EventParser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.name = name
        self._depth = 0
        self._nodes = 0
        # (line, key path, message) of each duplicate key, when the caller collects them
        # (load_yaml_with_lines(duplicates=...)); None: the first one is an error
        self.duplicates: list[tuple[int, tuple, str]] | None = None

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            ev = self.peek_event()
            raise InventoryError(f"{self.name}:{ev.start_mark.line + 1}: YAML aliases (*{ev.anchor}) are not "
                                 "allowed in ctl files: write the value out")
        ev = self.peek_event()
        if getattr(ev, "anchor", None):
            raise InventoryError(f"{self.name}:{ev.start_mark.line + 1}: YAML anchors (&{ev.anchor}) are not "
                                 "allowed in ctl files")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise InventoryError(f"{self.name}:{ev.start_mark.line + 1}: more than {MAX_NODES} values: "
                                 "not a ctl file")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise InventoryError(f"{self.name}:{ev.start_mark.line + 1}: nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _read_bounded(path: Path, limit: int) -> bytes:
    """At most limit + 1 bytes of `path`. Opened without blocking, so a FIFO nobody writes to
    reads as empty instead of hanging; a pipe with a writer (`--inventory <(...)`) is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory")
        if not stat.S_ISREG(st.st_mode):
            os.set_blocking(fd, True)   # with no writer, a FIFO's read returns EOF at once
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_file(path: Path, what: str = "file", limit: int = MAX_BYTES) -> str:
    """A small UTF-8 text file, or a one-line InventoryError saying why not (too big, a device,
    not UTF-8, control characters). Reads at most limit + 1 bytes (so /dev/zero ends quickly)."""
    try:
        data = _read_bounded(Path(path), limit)
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
        raise InventoryError(f"{path}:{line}: control character U+{ord(m.group()):04X} in the text: not a {what}")
    return text


def _tag(node: yaml.Node) -> str:
    """A node's tag as written (`!!set`, `!!python/object:...`, `!local`), for messages."""
    tag = str(node.tag)
    return ("!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag)[:60]


def _plain(loader: _Loader, node: yaml.Node, value: Any, what: str) -> Any:
    """A scalar's value, refused unless it is plain data (text without control characters but
    tab and line feed, a finite number, a boolean or null)."""
    line = node.start_mark.line + 1
    if not isinstance(value, _PLAIN_TYPES):
        kind = next((n for t, n in _TYPE_NAMES.items() if isinstance(value, t)), type(value).__name__)
        raise InventoryError(f"{loader.name}:{line}: {str(node.value)[:40]!r} is a YAML {kind} ({_tag(node)}): "
                             "ctl files hold text, numbers, booleans, lists and mappings (quote it)")
    if isinstance(value, float) and not math.isfinite(value):
        raise InventoryError(f"{loader.name}:{line}: {node.value!r} is not a finite number")
    if isinstance(value, str):
        m = _VALUE_CONTROL.search(value)
        if m:
            raise InventoryError(f"{loader.name}:{line}: control character U+{ord(m.group()):04X} in a {what}")
    return value


def _construct_with_lines(loader: _Loader, node: yaml.Node, lines: dict, path: tuple) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        if node.tag != "tag:yaml.org,2002:map":
            raise InventoryError(f"{loader.name}:{node.start_mark.line + 1}: the YAML tag {_tag(node)} is not "
                                 "allowed in ctl files")
        out: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise InventoryError(f"{loader.name}:{key_node.start_mark.line + 1}: a mapping key must be a plain "
                                     "value, not a list or a mapping")
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise InventoryError(f"{loader.name}:{key_node.start_mark.line + 1}: YAML merge keys (<<) are not "
                                     "allowed in ctl files")
            key = _plain(loader, key_node, loader.construct_object(key_node, deep=True), "key")
            sub = path + (key,)
            if key in out:
                line = key_node.start_mark.line + 1
                if loader.duplicates is None:
                    raise InventoryError(f"{loader.name}:{line}: duplicate key {key!r}")
                # collected: the first value stands, this one is left out, and the rest is read on
                loader.duplicates.append((line, sub, f"duplicate key {key!r} (first at line {lines[sub]}): this "
                                                     "one is ignored while the rest is checked"))
                continue
            lines[sub] = key_node.start_mark.line + 1
            out[key] = _construct_with_lines(loader, value_node, lines, sub)
            lines[sub] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        if node.tag != "tag:yaml.org,2002:seq":
            raise InventoryError(f"{loader.name}:{node.start_mark.line + 1}: the YAML tag {_tag(node)} is not "
                                 "allowed in ctl files")
        return [_construct_with_lines(loader, n, lines, path + (i,)) for i, n in enumerate(node.value)]
    return _plain(loader, node, loader.construct_object(node, deep=True), "value")


def load_yaml_with_lines(path: Path, duplicates: list[tuple[int, tuple, str]] | None = None
                         ) -> tuple[Any, dict[tuple, int]]:
    """(data, line of every key path) of a ctl YAML file; every problem an InventoryError. With a
    `duplicates` list, a duplicate key is not an error but appended to it as (line, key path,
    message), its value left out (the first one stands), so a checker can report it and go on."""
    text = read_text_file(path, "YAML file")
    loader = _Loader(text, str(path))
    loader.duplicates = duplicates
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
        if "nesting depth" in str(problem):   # libyaml's own bound (1000) met before ours
            raise InventoryError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
        raise InventoryError(f"{where}: YAML error: {' '.join(str(problem).split())}") from None
    except (RecursionError, ValueError, OverflowError) as exc:
        # ValueError/OverflowError: a scalar the resolver took for a number that Python cannot
        # hold (an int of more than 4300 digits)
        what = "nested too deeply" if isinstance(exc, RecursionError) else f"unreadable value ({exc})"
        raise InventoryError(f"{path}: {' '.join(what.split())[:200]}") from None
    finally:
        loader.dispose()
    return data, lines
