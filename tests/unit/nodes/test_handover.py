"""Handover detection on synthetic time series (pure function: no I/O, no clock)."""
from __future__ import annotations

import json

import pytest

from nodes.modem.handover import HandoverConfig, detect_handovers, find_dips
from nodes.modem.radio import RadioSample


def lte(cell: int, sinr: float | None = 10.0, rsrp: float | None = -90.0, **kw) -> RadioSample:
    return RadioSample(technology="lte", cell_id=f"{cell:X}", cell_id_int=cell, sinr_db=sinr, rsrp_dbm=rsrp, **kw)


def wimax(bsid: str, cinr: float | None) -> RadioSample:
    return RadioSample(technology="wimax", cell_id=bsid, cell_id_int=int(bsid.replace(":", ""), 16), cinr_db=cinr,
                       rssi_dbm=-60.0)


def nsa(cell: int, nr_pci: int, sinr: float = 10.0) -> RadioSample:
    leg = RadioSample(technology="nr5g", pci=nr_pci, rsrp_dbm=-80.0, sinr_db=20.0)
    return RadioSample(technology="nr5g-nsa", cell_id=f"{cell:X}", cell_id_int=cell, sinr_db=sinr, secondary=(leg,))


def series(*samples: RadioSample | None, start: float = 0.0, step: float = 1.0):
    return [(start + i * step, s) for i, s in enumerate(samples)]


BS1, BS2 = "00:00:02:0A:1B:2C", "00:00:02:0A:1B:3D"


def test_cell_change_is_one_event_with_before_and_after():
    ev = detect_handovers(series(lte(0x386B26), lte(0x386B26), lte(0x386B26, rsrp=-95.0),
                                 lte(0x38A40B, rsrp=-98.0, pci=295), lte(0x38A40B)))
    (e,) = ev
    assert (e.kind, e.time, e.before_time, e.after_time, e.gap_s) == ("cell-change", 3.0, 2.0, 3.0, 1.0)
    assert (e.before_cell_id, e.after_cell_id) == ("386B26", "38A40B")
    assert (e.before_rsrp_dbm, e.after_rsrp_dbm, e.after_pci) == (-95.0, -98.0, 295)
    assert e.dip_start is None and e.dip_duration_s is None
    assert json.loads(json.dumps(e.to_json()))["kind"] == "cell-change"


def test_cell_ids_compared_decoded_not_as_printed():
    # qmicli prints 3697446, Quectel 386B26: the same cell
    a = RadioSample(technology="lte", cell_id="3697446", cell_id_int=3697446)
    b = RadioSample(technology="lte", cell_id="386B26", cell_id_int=0x386B26)
    assert detect_handovers(series(a, b, a)) == []


def test_technology_change_lte_to_nr_nsa_and_back():
    ev = detect_handovers(series(lte(7), lte(7), nsa(7, 747), nsa(7, 747), lte(7)))
    assert [(e.kind, e.time, e.before_technology, e.after_technology) for e in ev] == [
        ("technology-change", 2.0, "lte", "nr5g-nsa"),
        ("technology-change", 4.0, "nr5g-nsa", "lte"),
    ]
    assert ev[0].before_cell_id == ev[0].after_cell_id == "7"      # anchor unchanged: the leg was added


def test_technology_and_cell_change_together_is_one_event():
    (e,) = detect_handovers(series(lte(7), nsa(8, 747)))
    assert e.kind == "technology-change" and (e.before_cell_id, e.after_cell_id) == ("7", "8")


def test_nr_leg_moving_to_another_pci_is_secondary_change():
    (e,) = detect_handovers(series(nsa(7, 747), nsa(7, 747), nsa(7, 500)))
    assert (e.kind, e.time, e.before_pci, e.after_pci) == ("secondary-change", 2.0, 747, 500)


def test_wibro_cinr_dip_with_recovery_is_a_handover_event():
    # The paper: CINR near 0 at the handover, back to normal right after.
    cinr = [21.0, 22.0, 20.5, 21.5, 22.0, 21.0, 0.4, 0.1, 0.6, 20.0, 21.0]
    (e,) = detect_handovers(series(*(wimax(BS1, c) for c in cinr)))
    assert (e.kind, e.metric, e.time, e.dip_start, e.dip_end, e.dip_duration_s) == ("signal-dip", "cinr_db", 6.0, 6.0, 9.0, 3.0)
    assert e.dip_min_db == 0.1
    assert (e.before_metric_db, e.after_metric_db, e.before_time, e.after_time) == (21.0, 20.0, 5.0, 9.0)


def test_dip_around_base_station_change_is_attached_to_the_cell_change():
    cinr = [(BS1, 21.0)] * 6 + [(BS1, 0.5), (BS1, 0.2), (BS2, 0.3), (BS2, 19.0), (BS2, 20.0)]
    (e,) = detect_handovers(series(*(wimax(b, c) for b, c in cinr)))
    assert (e.kind, e.time, e.before_cell_id, e.after_cell_id) == ("cell-change", 8.0, BS1, BS2)
    assert (e.dip_start, e.dip_end, e.dip_duration_s, e.dip_min_db, e.metric) == (6.0, 9.0, 3.0, 0.2, "cinr_db")


def test_dip_without_recovery_is_not_a_handover():
    cinr = [20.0] * 6 + [0.5] * 20            # coverage lost for good (well beyond max_dip_s)
    assert detect_handovers(series(*(wimax(BS1, c) for c in cinr))) == []
    (d,) = find_dips(series(*(wimax(BS1, c) for c in cinr)), HandoverConfig())
    assert not d.recovered and d.start == 6.0


def test_dip_open_at_end_of_series_is_not_reported():
    cinr = [20.0] * 6 + [0.5, 0.4]
    assert detect_handovers(series(*(wimax(BS1, c) for c in cinr))) == []


def test_relative_drop_on_a_good_link():
    # Never below the 1 dB floor, but 16 dB under the rolling median (bus: mean 12.4, sd 7.4 in the paper)
    sinr = [25.0, 26.0, 24.0, 25.0, 25.0, 25.0, 9.0, 8.0, 25.0, 25.0]
    (e,) = detect_handovers(series(*(lte(1, s) for s in sinr)))
    assert (e.kind, e.dip_start, e.dip_duration_s, e.dip_min_db) == ("signal-dip", 6.0, 2.0, 8.0)
    assert detect_handovers(series(*(lte(1, s) for s in sinr)), HandoverConfig(drop_db=20.0)) == []


def test_floor_threshold_and_static_host():
    # The static WiBro host: CINR 2.9 dB (sd .38) all the time -- never a handover with the defaults.
    static = [2.9, 3.1, 2.6, 3.3, 2.9, 2.5, 3.0, 2.8, 3.2, 2.9]
    assert detect_handovers(series(*(wimax(BS1, c) for c in static))) == []
    # With the floor raised above it the level is "low" for good: still no event (no recovery).
    assert detect_handovers(series(*(wimax(BS1, c) for c in static)), HandoverConfig(floor_db=5.0)) == []
    # A dip to 2 dB from 8 dB is not below the 1 dB floor nor 10 dB down ... unless thresholds say so.
    sinr = [8.0] * 6 + [2.0, 2.0, 8.0]
    assert detect_handovers(series(*(lte(1, s) for s in sinr))) == []
    (e,) = detect_handovers(series(*(lte(1, s) for s in sinr)), HandoverConfig(floor_db=3.0))
    assert e.kind == "signal-dip" and e.dip_duration_s == 2.0


def test_max_dip_duration_threshold():
    cinr = [20.0] * 6 + [0.5] * 12 + [20.0]
    assert detect_handovers(series(*(wimax(BS1, c) for c in cinr))) == []                       # 12 s > 10 s
    (e,) = detect_handovers(series(*(wimax(BS1, c) for c in cinr)), HandoverConfig(max_dip_s=15.0))
    assert e.dip_duration_s == 12.0


def test_real_zero_sinr_is_low_but_missing_is_not():
    zero = [10.0] * 6 + [0.0, 10.0]
    (e,) = detect_handovers(series(*(lte(1, s) for s in zero)))
    assert e.kind == "signal-dip" and e.dip_min_db == 0.0
    missing = [10.0] * 6 + [None, None, 10.0]
    assert detect_handovers(series(*(lte(1, s) for s in missing))) == []


def test_none_samples_do_not_create_handovers():
    # modem reset: no samples at all for a while, then the same cell and the same signal
    s = series(lte(1), lte(1), None, None, None, lte(1), lte(1))
    assert detect_handovers(s) == []
    # samples whose id/technology fields are missing (e.g. only +CSQ answered) change nothing either
    partial = RadioSample(rssi_dbm=-70.0)
    assert detect_handovers(series(lte(1), partial, partial, lte(1))) == []


def test_gap_then_other_cell_is_one_event_with_gap():
    (e,) = detect_handovers(series(lte(1), lte(1), None, None, None, lte(2)))
    assert (e.kind, e.before_time, e.time, e.gap_s) == ("cell-change", 1.0, 5.0, 4.0)


def test_gap_inside_a_dip_counts_wall_time():
    cinr = [20.0] * 6 + [0.5, None, None, None, None, None, None, None, None, None, None, None, 20.0]
    assert detect_handovers(series(*(wimax(BS1, c) for c in cinr))) == []     # back after 12 s: not a handover


def test_metric_preference_and_unsorted_input():
    s = RadioSample(technology="wimax", cell_id_int=1, cinr_db=0.2, sinr_db=30.0)   # CINR wins
    good = RadioSample(technology="wimax", cell_id_int=1, cinr_db=20.0, sinr_db=30.0)
    data = series(good, good, good, good, good, good, s, good)
    (e,) = detect_handovers(list(reversed(data)))
    assert e.metric == "cinr_db" and e.time == 6.0
    assert detect_handovers(data, HandoverConfig(metrics=("sinr_db",))) == []


@pytest.mark.parametrize("attach,kinds", [(3.0, ["cell-change"]), (0.0, ["signal-dip", "cell-change"])])
def test_attach_window(attach, kinds):
    # dip 6..8 recovers on the old cell at 8; the cell changes at 10
    data = [(BS1, 20.0)] * 6 + [(BS1, 0.3), (BS1, 0.3), (BS1, 20.0), (BS1, 20.0), (BS2, 20.0)]
    ev = detect_handovers(series(*(wimax(b, c) for b, c in data)), HandoverConfig(attach_s=attach))
    assert [e.kind for e in ev] == kinds


def test_end_of_a_long_outage_is_not_reported_as_a_handover():
    cinr = [20.0] * 6 + [0.5] * 25 + [20.0] * 3
    assert detect_handovers(series(*(wimax(BS1, c) for c in cinr))) == []


def test_new_lower_level_becomes_the_baseline_and_later_dips_are_found():
    sinr = [25.0] * 6 + [12.0] * 15 + [0.5, 0.5] + [12.0] * 3
    (e,) = detect_handovers(series(*(lte(1, s) for s in sinr)))
    assert (e.kind, e.dip_start, e.dip_duration_s) == ("signal-dip", 21.0, 2.0)
