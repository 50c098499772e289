"""`ctl run`'s start-up asks for liboqs (asyncssh's post-quantum key exchange) without gcc and ld
where the library is not installed (controller.cli.quick_oqs_lookup): the answer asyncssh gets is
find_library's, only cheaper; other names, and a liboqs file that is there, go to find_library."""
from __future__ import annotations

import ctypes.util

import pytest

import controller.cli as cli


def test_the_answer_is_find_librarys_and_the_original_is_put_back(monkeypatch):
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    original = ctypes.util.find_library
    expected = {name: original(name) for name in ("oqs", "liboqs", "c")}
    with cli.quick_oqs_lookup():
        assert ctypes.util.find_library is not original
        got = {name: ctypes.util.find_library(name) for name in expected}
    assert got == expected
    assert ctypes.util.find_library is original


@pytest.fixture
def asked(monkeypatch) -> list[str]:
    """find_library itself, recording what it is asked (the cache lookup answers nothing)."""
    calls: list[str] = []
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: calls.append(name) or None)
    monkeypatch.setattr(ctypes.util, "_findSoname_ldconfig", lambda name: None)
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    return calls


def test_without_a_liboqs_file_gcc_and_ld_are_not_run(asked, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "_LIBRARY_DIRS", (str(tmp_path),))
    with cli.quick_oqs_lookup():
        assert ctypes.util.find_library("oqs") is None and ctypes.util.find_library("liboqs") is None
        ctypes.util.find_library("nettle")
    assert asked == ["nettle"]


@pytest.mark.parametrize("where", ["", "x86_64-linux-gnu"])
def test_a_liboqs_file_the_cache_does_not_list_is_left_to_find_library(asked, monkeypatch, tmp_path, where):
    (tmp_path / where).mkdir(exist_ok=True)
    (tmp_path / where / "liboqs.so.5").write_bytes(b"")
    monkeypatch.setattr(cli, "_LIBRARY_DIRS", (str(tmp_path),))
    with cli.quick_oqs_lookup():
        ctypes.util.find_library("oqs")
    assert asked == ["oqs"]


def test_ld_library_path_is_left_to_find_library(asked, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "_LIBRARY_DIRS", (str(tmp_path),))
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    with cli.quick_oqs_lookup():
        ctypes.util.find_library("liboqs")
    assert asked == ["liboqs"]
