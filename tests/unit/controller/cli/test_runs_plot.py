"""`ctl runs plot RUN`: every figure of a recorded run drawn again from its record, in the formats and
at the resolution asked for, written to --out only (never into the record, never through a
planted link); bad input is one line on stderr and exit 2."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from controller.cli import main
from controller.schemas import OUTPUT_DIR
from tests.support.shipped import RECORDED_RUNS, isolated_ctl

SHARED_ID = "20261122T041817Z_shared-bottleneck_delay-800ms"
BT_ID = "20261122T042633Z_mptcp-bittorrent_step-bittorrent_size-20MiB_repetitions-1"


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    shutil.copytree(RECORDED_RUNS / "shared-bottleneck" / "delay-800ms", root / SHARED_ID)
    shutil.copytree(RECORDED_RUNS / "mptcp-bittorrent" / "bittorrent-local", root / BT_ID)
    isolated_ctl(monkeypatch, tmp_path, root)
    return root


def digest(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        h.update(str(p.relative_to(d)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def test_plot_a_run_as_pdf_and_png_from_its_record(runs, tmp_path, capsys):
    before = digest(runs / SHARED_ID)
    out = tmp_path / "figs"
    assert main(["runs", "plot", SHARED_ID, "--format", "pdf", "--format", "png", "--dpi", "72", "--out",
                 str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    schema = json.loads((OUTPUT_DIR / "runs-plot.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    data = doc["data"]
    assert data["run_id"] == SHARED_ID and data["formats"] == ["pdf", "png"] and data["dpi"] == 72
    assert sorted(Path(f).name for f in data["files"]) == ["ratio.pdf", "ratio.png", "throughput.pdf",
                                                            "throughput.png"]
    assert (out / "throughput.pdf").read_bytes()[:5] == b"%PDF-" and (out / "ratio.png").read_bytes()[:4] == b"\x89PNG"
    assert digest(runs / SHARED_ID) == before                     # the record is only read


def test_plot_by_path_as_svg_with_the_default_out(runs, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["runs", "plot", str(runs / BT_ID), "--format", "svg"]) == 0
    text = capsys.readouterr().out
    assert f"run {BT_ID}: 1 figure file in figures-{BT_ID} (svg; 150 dpi for raster images)" in text
    assert (tmp_path / f"figures-{BT_ID}" / "bittorrent.svg").read_text().startswith("<?xml")


def test_bad_input_is_one_line_and_exit_2(runs, tmp_path, capsys):
    for argv, words in ((["runs", "plot", SHARED_ID, "--dpi", "10"], "10 dpi: from 50 to 1200"),
                        (["runs", "plot", SHARED_ID, "--dpi", "many"], "'many' is not a whole number"),
                        (["runs", "plot", SHARED_ID, "--format", "jpg"], "invalid choice: 'jpg'"),
                        (["runs", "plot", "no-such-run"], "no run record 'no-such-run'")):
        with pytest.raises(SystemExit) as exc:
            code = main(argv)
            raise SystemExit(code)
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and words in err and len(err.splitlines()) == 1, (argv, err)
    assert not (tmp_path / f"figures-{SHARED_ID}").exists()


def test_a_planted_link_in_out_is_refused_not_written_through(runs, tmp_path, capsys):
    out = tmp_path / "figs"
    out.mkdir()
    target = tmp_path / "elsewhere.png"
    target.write_bytes(b"mine")
    (out / "throughput.png").symlink_to(target)
    code = main(["runs", "plot", SHARED_ID, "--out", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and "not a regular file" in err and len(err.strip().splitlines()) == 1
    assert target.read_bytes() == b"mine" and (out / "throughput.png").is_symlink()
