"""An endpoint's BTF is data (nodes/congestion/btfcheck.py): this machine's real BTF passes;
BTF blobs written here by hand -- a struct whose name carries a newline and an `#include` of
a file of ours, an out-of-range name offset, a truncated file, a wrong magic, ... -- are
refused before bpftool runs, and no refusal repeats the crafted bytes. The crafted blobs are
first shown to be valid to the real bpftool, which copies the name verbatim into the header:
that is the attack the check stops. Nothing is loaded into the kernel (clang and bpftool only
read and write files)."""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodes.congestion.btfcheck import (KINDS, MAX_BYTES, MAX_NAME, UnsafeBTF, check_btf, check_file,
                                       shown_diagnostics)
from nodes.congestion.build import LOCAL_BTF, BuildError, build
from nodes.congestion.catalog import BPF_DIR

BPFTOOL = shutil.which("bpftool") or ("/usr/sbin/bpftool" if os.path.exists("/usr/sbin/bpftool") else None)
CLANG = shutil.which("clang")
needs_tools = pytest.mark.skipif(BPFTOOL is None or CLANG is None, reason="bpftool and clang are not installed")
KIND = {k.name: n for n, k in KINDS.items()}


class Blob:
    """A BTF blob written field by field as Documentation/bpf/btf.rst lays it out."""

    def __init__(self, order: str = "<"):
        self.o = order
        self.strings = bytearray(b"\0")
        self.types = bytearray()
        self.count = 0

    def s(self, name: bytes) -> int:
        off = len(self.strings)
        self.strings += name + b"\0"
        return off

    def add(self, kind: str, name: bytes | int = b"", size_type: int = 0, records: list[tuple[int, ...]] = (),
            extra: tuple[int, ...] = (), vlen: int | None = None) -> int:
        name_off = name if isinstance(name, int) else self.s(name) if name else 0
        n = len(records) if vlen is None else vlen
        self.types += struct.pack(self.o + "III", name_off, (KIND[kind] << 24) | n, size_type)
        for v in extra:
            self.types += struct.pack(self.o + "I", v)
        for r in records:
            self.types += struct.pack(self.o + f"{len(r)}I", *r)
        self.count += 1
        return self.count

    def int_(self) -> int:
        return self.add("INT", b"int", 4, extra=((1 << 24) | 32,))       # BTF_INT_SIGNED, 32 bits

    def struct_(self, name: bytes, member: bytes = b"a") -> int:
        i = self.int_()
        return self.add("STRUCT", name, 4, records=[(self.s(member), i, 0)])

    def bytes(self, magic: int = 0xEB9F, version: int = 1, hdr_len: int = 24) -> bytes:
        hdr = struct.pack(self.o + "HBBIIIII", magic, version, 0, hdr_len, 0, len(self.types), len(self.types),
                          len(self.strings))
        return hdr + b"\0" * (hdr_len - 24) + bytes(self.types) + bytes(self.strings)


def sample(order: str = "<") -> Blob:
    """A small BTF with every kind, as a kernel's would hold them."""
    b = Blob(order)
    i = b.int_()
    ul = b.add("INT", b"long unsigned int", 8, extra=(64,))
    p = b.add("PTR", size_type=i)
    a = b.add("ARRAY", extra=(i, ul, 4))
    s = b.add("STRUCT", b"sock", 24, records=[(b.s(b"sk_flags"), i, 0), (0, a, 32), (b.s(b"next"), p, 160)])
    b.add("UNION", b"u", 4, records=[(b.s(b"x"), i, 0)])
    b.add("ENUM", b"tcp_ca_state", 4, records=[(b.s(b"TCP_CA_Open"), 0), (b.s(b"TCP_CA_Loss"), 4)])
    b.add("FWD", b"request_sock")
    t = b.add("TYPEDEF", b"u32_t", i)
    b.add("VOLATILE", size_type=t)
    c = b.add("CONST", size_type=s)
    b.add("RESTRICT", size_type=p)
    fp = b.add("FUNC_PROTO", size_type=i, records=[(b.s(b"sk"), c), (0, i)])
    f = b.add("FUNC", b"tcp_slow_start", fp)
    v = b.add("VAR", b"sysctl_tcp_mem", i, extra=(1,))
    b.add("DATASEC", b".data..percpu", 4, records=[(v, 0, 4)])
    b.add("FLOAT", b"long double", 16)
    b.add("DECL_TAG", b"bpf_kfunc", f, extra=(0xFFFFFFFF,))
    b.add("TYPE_TAG", b"address_space(1)", i)
    b.add("ENUM64", b"big", 8, records=[(b.s(b"BIG_ONE"), 1, 2)])
    return b


def refused(data: bytes) -> str:
    with pytest.raises(UnsafeBTF) as ei:
        check_btf(data)
    return str(ei.value)


def dump_c(tmp_path: Path, data: bytes) -> str:
    f = tmp_path / "in.btf"
    f.write_bytes(data)
    p = subprocess.run([BPFTOOL, "btf", "dump", "file", str(f), "format", "c"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


# ---- what passes ----------------------------------------------------------------------------

@pytest.mark.skipif(not LOCAL_BTF.exists(), reason="this kernel has no BTF (CONFIG_DEBUG_INFO_BTF off)")
def test_this_machines_vmlinux_btf_passes():
    s = check_file(LOCAL_BTF)
    assert s.types > 1000 and s.strings > 1000 and s.byte_order == "little"
    assert s.size == LOCAL_BTF.stat().st_size


@needs_tools
@pytest.mark.parametrize("order", ["<", ">"])
def test_every_kind_passes_and_bpftool_reads_the_same_blob(tmp_path, order):
    data = sample(order).bytes(0xEB9F)
    s = check_btf(data)
    assert s.types == 20 and s.byte_order == {"<": "little", ">": "big"}[order]
    header = dump_c(tmp_path, data)       # the blobs of these tests are real BTF to libbpf
    assert "struct sock {" in header and "TCP_CA_Loss = 4" in header and "typedef int u32_t;" in header


def test_a_longer_header_with_zeros_passes_and_with_data_is_refused():
    b = sample()
    assert check_btf(b.bytes(hdr_len=32)).types == 20
    data = bytearray(b.bytes(hdr_len=32))
    data[28] = 1
    assert "non-zero bytes past" in refused(bytes(data))


# ---- the injection ----------------------------------------------------------------------------

CANARY = "CTL_CANARY_first_line_of_a_controller_file"


def crafted_name(tmp_path: Path) -> bytes:
    target = tmp_path / "controller-file"
    target.write_text(CANARY + " secret\n")
    return b'x\n#include "' + str(target).encode() + b'"\nstruct y'


def assert_no_crafted_bytes(text: str, crafted: bytes) -> None:
    assert CANARY not in text and "#include" not in text and "\n" not in text
    assert "controller-file" not in text and "struct y" not in text
    assert crafted.decode() not in text


@needs_tools
def test_bpftool_copies_a_crafted_name_into_the_header_verbatim(tmp_path):
    """Why the check exists: libbpf does not escape names, so this BTF makes an #include."""
    name = crafted_name(tmp_path)
    header = dump_c(tmp_path, _blob_with(name).bytes())
    assert f'#include "{tmp_path / "controller-file"}"' in header.splitlines()


def _blob_with(name: bytes) -> Blob:
    b = Blob()
    b.struct_(name)
    return b


@needs_tools
def test_bpftool_writes_a_type_tag_into_a_c_string(tmp_path):
    """Why a tag may hold neither a quote nor a backslash."""
    b = Blob()
    i = b.int_()
    p = b.add("PTR", size_type=b.add("TYPE_TAG", b"user", i))
    b.add("STRUCT", b"s", 8, records=[(b.s(b"m"), p, 0)])
    assert 'int __attribute__((btf_type_tag("user"))) *m;' in dump_c(tmp_path, b.bytes())


def test_a_struct_named_with_an_include_is_refused_without_repeating_it(tmp_path):
    name = crafted_name(tmp_path)
    data = _blob_with(name).bytes()
    msg = refused(data)
    assert msg.startswith(f"BTF {check_digest(data)} (sha256 prefix) refused: type id 2 (STRUCT): ")
    assert "byte 1 of its" in msg and "0x0a" in msg
    assert_no_crafted_bytes(msg, name)


def test_a_big_endian_btf_is_read_in_its_own_byte_order(tmp_path):
    """An s390x endpoint writes its BTF big-endian: the same crafted name is found there."""
    b = Blob(">")
    b.struct_(crafted_name(tmp_path))
    assert "type id 2 (STRUCT): byte 1 of its" in refused(b.bytes())


def check_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def with_struct(real: bytes, name: bytes) -> bytes:
    """A real (little-endian) vmlinux BTF with one more type: an empty struct named `name`."""
    _, _, _, hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<HBBIIIII", real)
    types = real[hdr_len + type_off:hdr_len + type_off + type_len]
    strings = real[hdr_len + str_off:hdr_len + str_off + str_len]
    types += struct.pack("<III", len(strings), KIND["STRUCT"] << 24, 0)
    strings += name + b"\0"
    return struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings)) + types + strings


@needs_tools
@pytest.mark.skipif(not LOCAL_BTF.exists(), reason="this kernel has no BTF (CONFIG_DEBUG_INFO_BTF off)")
def test_the_build_refuses_a_crafted_btf_before_bpftool_runs(tmp_path):
    """This machine's BTF plus one struct named with an #include of a file of ours. On the old
    build.py it reached clang, which read the file and printed its first line into the
    BuildError (and so into the run record and the lab database)."""
    name = crafted_name(tmp_path)
    btf = tmp_path / "endpoint.btf"
    btf.write_bytes(with_struct(LOCAL_BTF.read_bytes(), name))
    dest = tmp_path / "builds"
    with pytest.raises(BuildError) as ei:
        build(btf, dest, names=["lia"])
    assert_no_crafted_bytes(str(ei.value), name)
    assert "(STRUCT)" in str(ei.value)
    assert not dest.exists()          # refused before any build directory, header or object


BAD_NAMES = [b"a b", b"a\nb", b"#define", b'a"b', b"a\\", b"1abc", b"a;b", b"a%:b", b"a(b)", b"\xff\xfe"]


@pytest.mark.parametrize("where", ["STRUCT", "member", "ENUM", "enumerator", "TYPEDEF", "FWD", "parameter",
                                   "FUNC", "VAR", "UNION", "ENUM64", "PTR", "CONST"])
@pytest.mark.parametrize("bad", BAD_NAMES)
def test_a_name_that_is_not_an_identifier_is_refused_in_every_place_bpftool_writes_one(where, bad):
    b = Blob()
    i = b.int_()
    if where == "member":
        b.add("STRUCT", b"s", 4, records=[(b.s(b"ok"), i, 0), (b.s(bad), i, 0)])
        expect = "type id 2 (STRUCT), member 1"
    elif where == "enumerator":
        b.add("ENUM", b"e", 4, records=[(b.s(bad), 1)])
        expect = "type id 2 (ENUM), enumerator 0"
    elif where == "parameter":
        b.add("FUNC_PROTO", size_type=i, records=[(b.s(b"ok"), i), (b.s(bad), i)])
        expect = "type id 2 (FUNC_PROTO), parameter 1"
    elif where in ("STRUCT", "UNION"):
        b.add(where, bad, 4, records=[(b.s(b"m"), i, 0)])
        expect = f"type id 2 ({where})"
    elif where == "ENUM":
        b.add("ENUM", bad, 4, records=[(b.s(b"A"), 1)])
        expect = "type id 2 (ENUM)"
    elif where == "ENUM64":
        b.add("ENUM64", bad, 8, records=[(b.s(b"A"), 1, 0)])
        expect = "type id 2 (ENUM64)"
    elif where == "VAR":
        b.add("VAR", bad, i, extra=(1,))
        expect = "type id 2 (VAR)"
    elif where == "FWD":
        b.add("FWD", bad)
        expect = "type id 2 (FWD)"
    else:
        b.add(where, bad, i)
        expect = f"type id 2 ({where})"
    msg = refused(b.bytes())
    assert expect + ":" in msg
    assert bad.decode("latin-1") not in msg


@pytest.mark.parametrize("kind,bad", [("INT", b"int\n#x"), ("INT", b"unsigned  int"), ("INT", b" int"),
                                      ("FLOAT", b'float"'), ("DATASEC", b".data\n"), ("DATASEC", b".a b"),
                                      ("TYPE_TAG", b'user")))'), ("DECL_TAG", b"a b"), ("DECL_TAG", b"x\\n")])
def test_the_looser_kinds_still_refuse_what_could_leave_a_name(kind, bad):
    b = Blob()
    i = b.int_()
    if kind == "INT":
        b.add("INT", bad, 4, extra=(32,))
    elif kind == "DATASEC":
        v = b.add("VAR", b"v", i, extra=(0,))
        b.add("DATASEC", bad, 4, records=[(v, 0, 4)])
    elif kind == "DECL_TAG":
        b.add("DECL_TAG", bad, i, extra=(0xFFFFFFFF,))
    else:
        b.add(kind, bad, i if kind == "TYPE_TAG" else 4)
    msg = refused(b.bytes())
    assert f"({kind}):" in msg and bad.decode() not in msg


def test_a_name_longer_than_the_kernel_allows_is_refused():
    b = _blob_with(b"a" * (MAX_NAME + 1))
    assert f"{MAX_NAME + 1} bytes long, more than {MAX_NAME}" in refused(b.bytes())
    assert check_btf(_blob_with(b"a" * MAX_NAME).bytes()).types == 2


# ---- malformed files ---------------------------------------------------------------------------

def test_a_name_offset_outside_the_string_section_is_refused():
    b = Blob()
    i = b.int_()
    b.add("STRUCT", 10_000, 4, records=[(b.s(b"a"), i, 0)])
    assert "type id 2 (STRUCT): name offset 10000 is outside the string section" in refused(b.bytes())


def test_a_name_offset_inside_a_string_is_refused():
    """`#x` inside `a#x` is not a name bpftool would see, but its suffix `x` would pass: real
    BTF names always start strings, so anything else is refused."""
    b = Blob()
    i = b.int_()
    off = b.s(b"abc")
    b.add("STRUCT", off + 1, 4, records=[(b.s(b"a"), i, 0)])
    assert "not the start of a string" in refused(b.bytes())


def test_a_reference_to_a_missing_type_is_refused():
    b = Blob()
    i = b.int_()
    b.add("STRUCT", b"s", 4, records=[(b.s(b"a"), i, 0), (b.s(b"b"), 99, 0)])
    assert "type id 2 (STRUCT), member 1: refers to a type id above the last one (2)" in refused(b.bytes())
    b = Blob()
    b.add("PTR", size_type=7)
    assert "type id 1 (PTR): refers to a type id above" in refused(b.bytes())


def test_every_truncation_of_a_blob_is_refused():
    data = sample().bytes()
    for n in range(len(data)):
        with pytest.raises(UnsafeBTF):
            check_btf(data[:n])


def test_a_wrong_magic_version_or_header_is_refused():
    b = sample()
    assert "magic 0x1234 is not BTF's 0xeb9f" in refused(b.bytes(magic=0x1234))
    assert "version 2" in refused(b.bytes(version=2))
    data = bytearray(b.bytes())
    struct.pack_into("<I", data, 4, 1 << 30)      # hdr_len
    assert "header length" in refused(bytes(data))
    data = bytearray(b.bytes())
    struct.pack_into("<I", data, 16, 1 << 20)     # str_off past the end
    assert "do not fit" in refused(bytes(data))
    data = bytearray(b.bytes())
    struct.pack_into("<I", data, 16, 0)           # strings on top of the types
    assert "overlap" in refused(bytes(data))


def test_an_unknown_kind_and_a_type_section_ending_inside_a_type_are_refused():
    b = Blob()
    b.types += struct.pack("<III", 0, 25 << 24, 0)
    b.count += 1
    assert "type id 1: unknown kind 25" in refused(b.bytes())
    b = Blob()
    b.add("STRUCT", b"s", 4, records=[], vlen=3)      # says 3 members, holds none
    assert "type id 1 (STRUCT): truncated" in refused(b.bytes())


def test_a_string_section_must_end_with_a_nul():
    b = _blob_with(b"s")
    b.strings += b"tail"
    assert "start and end with a NUL" in refused(b.bytes())


def test_a_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path):
    f = tmp_path / "huge.btf"
    with open(f, "wb") as fh:
        fh.truncate(MAX_BYTES + 1)               # sparse: no disk used
    with pytest.raises(UnsafeBTF, match=f"larger than {MAX_BYTES} bytes"):
        check_file(f)


def test_a_fifo_is_not_read_as_btf(tmp_path):
    f = tmp_path / "fifo"
    os.mkfifo(f)
    with pytest.raises(UnsafeBTF, match="not a regular file"):
        check_file(f)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_corruption_is_refused_or_passed_never_a_crash(data):
    blob = bytearray(sample(data.draw(st.sampled_from(["<", ">"]))).bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(blob) - 1))
        blob[pos] = data.draw(st.integers(0, 255))
    try:
        s = check_btf(bytes(blob))
    except UnsafeBTF as exc:
        assert "\n" not in str(exc)
    else:
        assert s.types >= 1


# ---- compiler diagnostics ---------------------------------------------------------------------

@needs_tools
def test_clang_diagnostics_about_other_files_are_not_quoted(tmp_path):
    """A real clang run: a source of ours includes a file elsewhere whose first line is not C;
    clang quotes that line, shown_diagnostics keeps only its position."""
    own = tmp_path / "own"
    own.mkdir()
    other = tmp_path / "elsewhere.txt"
    other.write_text(f"{CANARY}: x\n")
    (own / "prog.c").write_text(f'#include "{other}"\nint ok = undeclared_in_ours;\n')
    p = subprocess.run([CLANG, "-fsyntax-only", str(own / "prog.c")], capture_output=True, text=True)
    assert p.returncode != 0 and CANARY in p.stderr          # what clang itself prints
    shown = shown_diagnostics(p.stderr, (own,))
    assert CANARY not in shown
    assert f"{other}:1:" in shown and "outside ctl's sources (not quoted)" in shown
    assert "undeclared_in_ours" in shown                      # our own source's diagnostic is kept


def test_diagnostics_of_ctls_sources_and_the_generated_header_are_kept():
    text = (f"In file included from {BPF_DIR}/lia.bpf.c:3:\n"
            f"{BPF_DIR}/ctl_cc.h:10:5: error: unknown type name 'u99'\n"
            "    u99 x;\n    ^\n"
            "/tmp/ctl-cc-build-abc123/vmlinux.h:7:1: error: redefinition of 'sock'\n"
            f"{BPF_DIR}/../../../../etc/shadow:1:1: error: unknown type name 'root'\n"
            "root:$y$j9T$...\n^\n"
            "3 errors generated.\n")
    shown = shown_diagnostics(text)
    assert "unknown type name 'u99'" in shown and "    u99 x;" in shown
    assert "redefinition of 'sock'" in shown
    assert "root" not in shown and "$y$" not in shown
    assert "3 errors generated." in shown
