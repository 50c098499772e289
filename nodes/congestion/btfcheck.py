"""An endpoint's BTF is data: checked before any C header is generated from it.

For a physical rack the controller copies each endpoint's /sys/kernel/btf/vmlinux and turns it
into `vmlinux.h` with `bpftool btf dump file F format c`, which copies type names verbatim
into C (libbpf's btf_dump does not escape them). A name holding a newline and `#include
"/some/controller/file"` would make the controller's clang read one of its own files and quote
it in the error, the run record and the lab database. So the file is read here first, in pure
Python and in one pass, following the kernel's Documentation/bpf/btf.rst (struct btf_header,
then the type section: a 12-byte struct btf_type per type followed by its kind's data, then
the string section of NUL-terminated names), and refused unless:

- it is at most MAX_BYTES long, has the magic 0xEB9F (either byte order: a big-endian
  endpoint writes it swapped) and version 1, and its header's sections lie inside the file,
  the type section 4-aligned and whole 32-bit words, neither overlapping the other;
- the type section holds whole types of known kinds (1..19), at most MAX_TYPES of them, and
  every type id a type refers to exists;
- the string section starts and ends with a NUL, and every name offset is inside it and at
  the start of a string;
- every name is of the shape its kind allows (`KINDS`, `_RULES`): a C identifier for everything
  bpftool may write into C as a name (STRUCT, UNION, ENUM, ENUM64 and their members and
  enumerators, FWD, TYPEDEF, FUNC, FUNC_PROTO parameters, VAR, and the unnamed kinds);
  C identifiers joined by single spaces for INT and FLOAT ("long unsigned int"); identifier
  characters and dots for DATASEC (".data..percpu", never written as C); identifier
  characters, parentheses, commas and dots for the tags (a real kernel has the type tag
  "address_space(1)"; bpftool writes a type tag into a C string literal,
  `__attribute__((btf_type_tag("user")))`). No name is longer than MAX_NAME bytes. None
  of these shapes can hold a newline, `#`, `%`, a quote, `<` or `\\`, so no name can start
  a preprocessor directive or leave a string literal.

A refusal is an UnsafeBTF naming the BTF by its digest (the first 16 hex digits of its
sha256, the build's btf id) and the kind and id of the offending type; the offending name
itself is never printed, only its length and the hex code of its first disallowed byte.

`shown_diagnostics` is the other half: what of a compiler's complaint may be shown. clang
quotes the source line of each diagnostic, so only diagnostics located in ctl's own sources
(and the generated vmlinux.h) are shown; one in any other file is reduced to its position.
"""
from __future__ import annotations

import array
import hashlib
import os
import re
import stat
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from nodes.congestion.catalog import BPF_DIR

MAGIC = 0xEB9F
VERSION = 1
HEADER_LEN = 24                 # struct btf_header (six fields) as the kernel defines it
MAX_HEADER_LEN = 256            # a longer header is accepted only if the bytes past ours are zero
MAX_BYTES = 64 << 20            # a distribution kernel's vmlinux BTF is 5-7 MB
MAX_TYPES = 0xFFFFF             # BTF_MAX_TYPE (include/uapi/linux/btf.h)
MAX_NAME = 512                  # KSYM_NAME_LEN since Linux 6.1
_U32 = next(c for c in "IL" if array.array(c).itemsize == 4)     # an array typecode of 32 bits

IDENT, WORDS, SECTION, TAG = "identifier", "type specifier", "section name", "tag"
_RULES = {
    IDENT: re.compile(rb"[A-Za-z_][A-Za-z0-9_]*"),
    WORDS: re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?: [A-Za-z_][A-Za-z0-9_]*)*"),
    SECTION: re.compile(rb"[A-Za-z0-9_.]+"),
    TAG: re.compile(rb"[A-Za-z_][A-Za-z0-9_(),.]*"),
}
_ALLOWED_BYTES = {
    IDENT: frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"),
}
_ALLOWED_BYTES[WORDS] = _ALLOWED_BYTES[IDENT] | {0x20}
_ALLOWED_BYTES[SECTION] = _ALLOWED_BYTES[IDENT] | {0x2E}
_ALLOWED_BYTES[TAG] = _ALLOWED_BYTES[IDENT] | frozenset(b"(),.")


@dataclass(frozen=True)
class Kind:
    """One BTF kind's layout: `extra` bytes after struct btf_type, then vlen records of
    `record` bytes; which of the record's u32 fields is a name and which a type id; whether
    btf_type's size_type is a type id (else a size); how its names may look."""
    name: str
    extra: int = 0
    record: int = 0
    record_name: int | None = None      # index of the u32 holding a member/param/enumerator name
    record_type: int | None = None      # index of the u32 holding a type id
    extra_types: int = 0                # the first n u32 of `extra` are type ids (ARRAY)
    refers: bool = False                # size_type is a type id
    rule: str = IDENT


KINDS: dict[int, Kind] = {
    1: Kind("INT", extra=4, rule=WORDS),
    2: Kind("PTR", refers=True),
    3: Kind("ARRAY", extra=12, extra_types=2),
    4: Kind("STRUCT", record=12, record_name=0, record_type=1),
    5: Kind("UNION", record=12, record_name=0, record_type=1),
    6: Kind("ENUM", record=8, record_name=0),
    7: Kind("FWD"),
    8: Kind("TYPEDEF", refers=True),
    9: Kind("VOLATILE", refers=True),
    10: Kind("CONST", refers=True),
    11: Kind("RESTRICT", refers=True),
    12: Kind("FUNC", refers=True),
    13: Kind("FUNC_PROTO", record=8, record_name=0, record_type=1, refers=True),
    14: Kind("VAR", extra=4, refers=True),
    15: Kind("DATASEC", record=12, record_type=0, rule=SECTION),
    16: Kind("FLOAT", rule=WORDS),
    17: Kind("DECL_TAG", extra=4, refers=True, rule=TAG),
    18: Kind("TYPE_TAG", refers=True, rule=TAG),
    19: Kind("ENUM64", record=12, record_name=0),
}


class UnsafeBTF(Exception):
    """The BTF is malformed or holds a name that is not of its kind's shape."""


@dataclass(frozen=True)
class BTFSummary:
    digest: str             # first 16 hex digits of the sha256 (the build's btf id)
    byte_order: str         # "little" or "big"
    size: int               # bytes
    types: int
    strings: int            # distinct names checked


def read_btf(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a BTF file: a regular file (never a FIFO or a device), at most `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeBTF(f"{path}: cannot read the BTF: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeBTF(f"{path}: not a regular file: refused as BTF")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:
        raise UnsafeBTF(f"{path}: BTF larger than {limit} bytes: refused")
    return b"".join(chunks)


def check_file(path: Path) -> BTFSummary:
    """Check the BTF at `path` (see the module doc); UnsafeBTF if it is refused."""
    return check_btf(read_btf(path))


def check_btf(data: bytes) -> BTFSummary:
    """Check one BTF blob in one pass over its bytes (pure)."""
    digest = hashlib.sha256(data).hexdigest()[:16]

    def refuse(why: str) -> UnsafeBTF:
        return UnsafeBTF(f"BTF {digest} (sha256 prefix) refused: {why}")

    if len(data) > MAX_BYTES:
        raise refuse(f"larger than {MAX_BYTES} bytes")
    if len(data) < HEADER_LEN:
        raise refuse(f"{len(data)} bytes, shorter than a BTF header ({HEADER_LEN} bytes)")
    (magic,) = struct.unpack_from("<H", data)
    if magic == MAGIC:
        order, bo = "little", "<"
    elif magic == 0x9FEB:
        order, bo = "big", ">"
    else:
        raise refuse(f"magic 0x{magic:04x} is not BTF's 0x{MAGIC:04x}")
    _, version, _flags, hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from(bo + "HBBIIIII", data)
    if version != VERSION:
        raise refuse(f"version {version}, only version {VERSION} is known")
    if not HEADER_LEN <= hdr_len <= MAX_HEADER_LEN or hdr_len > len(data):
        raise refuse(f"header length {hdr_len} outside {HEADER_LEN}..{min(MAX_HEADER_LEN, len(data))} bytes")
    if any(data[HEADER_LEN:hdr_len]):
        raise refuse("the header has non-zero bytes past the fields this reader knows")
    body = len(data) - hdr_len
    if type_off % 4 or type_off + type_len > body or str_off + str_len > body:
        raise refuse(f"sections (types at {type_off}+{type_len}, strings at {str_off}+{str_len}) "
                     f"do not fit the {body} bytes after the header")
    if type_off < str_off + str_len and str_off < type_off + type_len:
        raise refuse("the type and string sections overlap")
    strings = data[hdr_len + str_off:hdr_len + str_off + str_len]
    if not strings or strings[0] != 0 or strings[-1] != 0:
        raise refuse("the string section does not start and end with a NUL byte")

    # One pass over the types (as 32-bit words: every BTF record is made of them): their
    # extent, the names by the rule they must obey, the type ids referred to. Names are
    # checked afterwards, each distinct one once.
    if type_len % 4:
        raise refuse(f"the type section's length {type_len} is not a whole number of 32-bit words")
    words = array.array(_U32, data[hdr_len + type_off:hdr_len + type_off + type_len])
    if (bo == "<") != (sys.byteorder == "little"):
        words.byteswap()
    names: dict[str, set[int]] = {rule: set() for rule in _RULES}
    member_names = names[IDENT].update
    table: list[tuple | None] = [None] * 32
    for n, k in KINDS.items():
        table[n] = (k, 3 + k.extra // 4, k.record // 4, k.record_name, k.record_type, k.refers, k.extra_types,
                    names[k.rule].add)
    i, end = 0, len(words)
    count, max_ref = 0, 0
    while i < end:
        count += 1
        if end - i < 3:
            raise refuse(f"type id {count}: truncated (the type section ends inside it)")
        info = words[i + 1]
        entry = table[(info >> 24) & 0x1F]
        if entry is None:
            raise refuse(f"type id {count}: unknown kind {(info >> 24) & 0x1F}")
        kind, head, per, name_at, type_at, refers, extra_types, add = entry
        vlen = info & 0xFFFF
        rec = i + head
        nxt = rec + per * vlen
        if nxt > end:
            raise refuse(f"type id {count} ({kind.name}): truncated (the type section ends inside it)")
        add(words[i])
        if refers and words[i + 2] > max_ref:
            max_ref = words[i + 2]
        if extra_types:
            max_ref = max(max_ref, *words[i + 3:i + 3 + extra_types])
        if vlen and per:
            if name_at is not None:
                member_names(words[rec + name_at:nxt:per])
            if type_at is not None:
                max_ref = max(max_ref, max(words[rec + type_at:nxt:per]))
        i = nxt
    if count > MAX_TYPES:
        raise refuse(f"{count} types, more than {MAX_TYPES}")
    if max_ref > count:
        first = _first_type(data, bo, hdr_len + type_off, hdr_len + type_off + type_len,
                            lambda i, k, refs, _: max(refs, default=0) > count)
        raise refuse(f"{first}: refers to a type id above the last one ({count})")

    starts: dict[int, bytes] = {}
    off = 0
    for s in strings[:-1].split(b"\0"):
        starts[off] = s
        off += len(s) + 1
    checked = 0
    for rule, offsets in names.items():
        match = _RULES[rule].fullmatch
        for name_off in offsets:
            name = starts.get(name_off)
            if name is not None and (not name or (len(name) <= MAX_NAME and match(name))):
                checked += 1
                continue
            first = _first_type(data, bo, hdr_len + type_off, hdr_len + type_off + type_len,
                                lambda i, k, refs, offs, n=name_off: n in offs)
            raise refuse(f"{first}: {_why(name_off, name, rule, len(strings))}")
    return BTFSummary(digest, order, len(data), count, checked)


def _why(name_off: int, name: bytes | None, rule: str, str_len: int) -> str:
    """Why a name is refused, without its bytes (only a length, a position, a hex code)."""
    if name is None:
        if name_off >= str_len:
            return f"name offset {name_off} is outside the string section ({str_len} bytes)"
        return f"name offset {name_off} is not the start of a string"
    if len(name) > MAX_NAME:
        return f"its name is {len(name)} bytes long, more than {MAX_NAME}"
    bad = next((i for i, b in enumerate(name) if b not in _ALLOWED_BYTES[rule]), None)
    if bad is not None:
        return f"byte {bad} of its {len(name)}-byte name is 0x{name[bad]:02x}, which no {rule} holds"
    return f"its {len(name)}-byte name is not a well-formed {rule}"


def _first_type(data: bytes, bo: str, pos: int, end: int, hit) -> str:
    """Where the first type for which hit(id, kind, referenced ids, name offsets) holds is
    ("type id N (KIND)", with the member when it is one of them): the slow path, run only to
    word a refusal, over a type section the fast pass has already found whole."""
    i = 0
    while pos < end:
        i += 1
        name_off, info, size_type = struct.unpack_from(bo + "III", data, pos)
        kind = KINDS[(info >> 24) & 0x1F]
        vlen = info & 0xFFFF
        refs = [size_type] if kind.refers else []
        if kind.extra_types:
            refs += struct.unpack_from(f"{bo}{kind.extra_types}I", data, pos + 12)
        if hit(i, kind, refs, {name_off}):
            return f"type id {i} ({kind.name})"
        rec = pos + 12 + kind.extra
        per = kind.record // 4
        for m in range(vlen if kind.record else 0):
            fields = struct.unpack_from(f"{bo}{per}I", data, rec + m * kind.record)
            what = {"ENUM": "enumerator", "ENUM64": "enumerator", "FUNC_PROTO": "parameter",
                    "DATASEC": "variable"}.get(kind.name, "member")
            mrefs = [fields[kind.record_type]] if kind.record_type is not None else []
            moffs = {fields[kind.record_name]} if kind.record_name is not None else set()
            if hit(i, kind, mrefs, moffs):
                return f"type id {i} ({kind.name}), {what} {m}"
        pos = rec + kind.record * vlen
    return "a type"


# ---- compiler diagnostics -------------------------------------------------------------------

_DIAG = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<level>fatal error|error|warning|note|remark): ")
_INCLUDED = re.compile(r"^(?:In file included from |\s+from )(?P<path>[^:\n]+):(?P<line>\d+):")
# clang's closing words, which carry no file's text (kept even after a hidden diagnostic)
_SUMMARY = re.compile(r"\d+ (?:errors?|warnings?)(?: and \d+ warnings?)? generated\.|"
                      r"fatal error: too many errors emitted, stopping now \[-ferror-limit=\]")


def _own(path: str, own: tuple[Path, ...]) -> bool:
    """Whether a diagnostic's file is one of ctl's sources or the build's generated vmlinux.h
    (in the temporary include directory build.py makes, `ctl-cc-build-*`)."""
    p = os.path.normpath(path)
    if os.path.basename(p) == "vmlinux.h" and os.path.basename(os.path.dirname(p)).startswith("ctl-cc-build-"):
        return True
    return any(p.startswith(str(d) + os.sep) for d in own)


def shown_diagnostics(text: str, own: tuple[Path, ...] = (BPF_DIR,)) -> str:
    """The part of a compiler's stderr that may be shown (pure, linear): each diagnostic
    located in a file under `own` (ctl's BPF sources) or in the build's generated vmlinux.h
    keeps its message and quoted source; one located anywhere else keeps only its position,
    since its message and quoted line are that file's text. Lines before the first diagnostic
    (a tool's own complaint) and the compiler's closing "N errors generated." are kept;
    include-chain lines naming other files are dropped."""
    out: list[str] = []
    showing = True
    for line in text.splitlines():
        m = _DIAG.match(line)
        if m:
            showing = _own(m["path"], own)
            out.append(line if showing else
                       f"{m['path']}:{m['line']}:{m['col']}: {m['level']} in a file outside ctl's sources (not quoted)")
            continue
        if _SUMMARY.fullmatch(line):
            out.append(line)
            continue
        m = _INCLUDED.match(line)
        if m:
            if _own(m["path"], own):
                out.append(line)
            continue
        if showing:
            out.append(line)
    return "\n".join(out)
