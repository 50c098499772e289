"""`ctl inventory check` reports a duplicate YAML key and goes on checking (issue 26: every error
at once; a duplicate key stopped the check after that one error).

Contract (controller/yamlload.py `load_yaml_with_lines(duplicates=...)`, controller/inventory_check.py
`check_file`): each duplicate key is one error at its own line naming the line of the first, the
first value stands, and every other mistake of the file is reported with it (exit 2); loading an
inventory to use it (`load_inventory`) still refuses the file at its first duplicate key.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.errors import InventoryError
from controller.inventory import load_inventory
from controller.inventory_check import check_file
from tests.support.shipped import LAB, ROOT

pytestmark = pytest.mark.usefixtures("tmp_state_dir")


def _line(text: str, needle: str, nth: int = 1) -> int:
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return hits[nth - 1]


@pytest.fixture
def broken(tmp_path: Path) -> tuple[Path, str]:
    text = LAB.read_text()
    for old, new in (("  user: ctl\n", "  user: ctl\n  user: other\n"),                  # duplicate in ssh
                     ("  connect_timeout: 10\n", "  connect_timeout: 10 parsecs\n"),     # a bad value
                     ("kind: physical\n", "kind: physical\nkind: virtual\n")):           # duplicate at the top
        assert text.count(old) >= 1, old
        text = text.replace(old, new, 1)
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    return path, text


def test_every_duplicate_key_and_every_other_error_at_once(broken):
    path, text = broken
    r = check_file(path, environ={})
    assert not r.valid and r.inventory is None
    got = [(f.line, f.render(path).split(": ", 1)[1]) for f in r.errors]
    assert got == [
        (_line(text, "kind: virtual"), f"duplicate key 'kind' (first at line {_line(text, 'kind: physical')}): this "
                                       "one is ignored while the rest is checked"),
        (_line(text, "user: other"), f"ssh: duplicate key 'user' (first at line {_line(text, 'user: ctl')}): this "
                                     "one is ignored while the rest is checked"),
        (_line(text, "connect_timeout:"), "ssh.connect_timeout: must be a number (found text)"),
    ], got


def test_the_cli_prints_them_all_and_exits_2(broken, tmp_path):
    path, _text = broken
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTL_")}
    env.update(CTL_STATE_DIR=str(tmp_path / "state"), CTL_RUNS_DIR=str(tmp_path / "runs"))
    p = subprocess.run([sys.executable, "-m", "controller", "inventory", "check", str(path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert sum("duplicate key" in l for l in lines) == 2 and any("connect_timeout" in l for l in lines), p.stderr
    assert lines[-1] == f"ctl: error: {path}: 3 errors: nothing was changed"


def test_loading_it_for_use_still_refuses_the_first_duplicate(broken):
    path, text = broken
    with pytest.raises(InventoryError, match=rf"{path}:{_line(text, 'kind: virtual')}: duplicate key 'kind'$"):
        load_inventory(path)


def test_a_file_without_duplicates_is_checked_as_before():
    assert check_file(LAB, environ={}).valid
