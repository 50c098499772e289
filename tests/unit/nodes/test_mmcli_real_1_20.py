"""mmcli 1.20.4 as the real daemon printed it (tests/fixtures/generated/modemmanager, captured on the virtual
rack's modem host: the real ModemManager driving the AT emulator). The shapes the recorded samples did not
have: no `5g.rssi`, a six-hex-digit `tac`, the human location labels `operator mcc` / `operator mnc`, a
disabled modem after a reset, and the acknowledgements of the setup commands.
"""
from __future__ import annotations

import json

import pytest

from nodes.modem import mmcli
from nodes.modem.emulator import CELL_A, CELL_B
from tests.support.shipped import ROOT

CAPTURES = ROOT / "tests" / "fixtures" / "generated" / "modemmanager"


def read(name: str) -> str:
    return (CAPTURES / name).read_text()


def test_the_captures_are_from_1_20_4():
    assert read("version.txt").startswith("mmcli 1.20.4\n")
    index = [json.loads(line) for line in read("index.jsonl").splitlines()]
    assert {e["file"] for e in index} <= {p.name for p in CAPTURES.iterdir()}


def test_signal_has_no_5g_rssi_and_lte_from_cesq():
    raw = json.loads(read("signal_lte_cell_a.json"))["modem"]["signal"]
    assert set(raw["5g"]) == {"error-rate", "rsrp", "rsrq", "snr"}               # no "rssi"
    s = mmcli.parse_sample(read("signal_lte_cell_a.json"))
    assert (s.technology, s.rsrp_dbm, s.rsrq_db, s.rssi_dbm, s.snr_db) == ("lte", -93.0, -11.0, None, None)
    assert mmcli.parse_sample(read("signal_lte_cell_a.txt")) == s                # the human layout: the same


def test_location_tac_six_hex_digits_cid_eight():
    raw = json.loads(read("location_lte_cell_a.json"))["modem"]["location"]["3gpp"]
    assert (raw["tac"], raw["cid"], raw["lac"]) == ("00300B", "00386B26", "0000")
    s = mmcli.parse_sample(read("location_lte_cell_a.json"))
    assert (s.tac, s.cell_id_int, s.enb_id, s.local_cell_id, s.lac) == (CELL_A.tac, CELL_A.eci, CELL_A.eci >> 8,
                                                                         CELL_A.eci & 0xFF, None)
    assert (s.mcc, s.mnc) == ("234", "15")
    b = mmcli.parse_sample(read("location_lte_cell_b.json"))
    assert b.cell_id_int == CELL_B.eci and b.tac == CELL_B.tac


def test_human_location_labels_of_1_20():
    s = mmcli.parse_sample(read("location_lte_cell_a.txt"))
    assert (s.mcc, s.mnc, s.tac, s.cell_id_int) == ("234", "15", CELL_A.tac, CELL_A.eci)
    assert s == mmcli.parse_sample(read("location_lte_cell_a.json"))


def test_modem_identity_and_registration():
    out = mmcli.to_json(read("modem_lte_cell_a.json"))
    f = out["outputs"][0]["fields"]
    assert (f["equipment_identifier"], f["device"], f["state"]) == ("867978050021665", "ctl-virtual-modem-m1",
                                                                   "registered")
    assert f["device_identifier"] == "3486248a65421b0208a27638064ca3f79e0e0237"
    s = mmcli.parse_sample(read("modem_lte_cell_a.json"))
    assert (s.technology, s.operator_name, s.mcc, s.mnc, s.registration, s.signal_quality_pct) == \
        ("lte", "vodafone UK", "234", "15", "home", 80)
    human = mmcli.to_json(read("modem_lte_cell_a.txt"))["outputs"][0]["fields"]
    assert {k: human[k] for k in ("equipment_identifier", "device_identifier", "device", "state")} == \
        {k: f[k] for k in ("equipment_identifier", "device_identifier", "device", "state")}


def test_a_disabled_modem_after_a_reset_is_no_sample():
    f = mmcli.to_json(read("modem_after_reset_disabled.json"))["outputs"][0]["fields"]
    assert f["state"] == "disabled" and f["signal_quality_pct"] == 0 and f["dbus_path"].endswith("/Modem/2")
    assert mmcli.parse_sample(read("modem_after_reset_disabled.json")) is None    # 0 % nobody measured
    sig = mmcli.to_json(read("signal_after_reset_disabled.json"))
    assert sig["sample"] is None and sig["outputs"][0]["fields"]["signal_setup_needed"] is True


@pytest.mark.parametrize("name,kind", [("enable.txt", "enable"), ("enable_after_reset.txt", "enable"),
                                       ("signal_setup.txt", "signal-setup"),
                                       ("location_enable_3gpp.txt", "location-setup"),
                                       ("modem_gone.json.stderr", "error"),
                                       ("location_after_reset_disabled.json.stderr", "error")])
def test_acknowledgements_and_errors_are_recognised(name, kind):
    out = mmcli.to_json(read(name))
    assert [o["type"] for o in out["outputs"]] == [kind] and out["sample"] is None
