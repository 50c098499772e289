"""mmcli <= 1.6's quoted layout, rendered with that release's own format strings
(cli/mmcli-modem.c of ModemManager 1.6.0, `print_modem_info`): every value quoted, the object
path and device id on the first line, `signal quality: '%u' (%s)`, `revision` rather than
`firmware revision`. The parser reads it like the current layout and says which it saw."""
from __future__ import annotations

from nodes.modem import mmcli

VALUES = dict(path="/org/freedesktop/ModemManager1/Modem/3", device_id="2e4b9c0a7d1f", manufacturer="huawei",
              model="E3372", revision="22.315.01.00.00", supported="gsm-umts, lte", current="gsm-umts, lte",
              equipment_id="867223020000000", device="/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2",
              drivers="huawei_cdc_ncm, option1", plugin="Huawei", primary_port="cdc-wdm0",
              ports="cdc-wdm0 (at), ttyUSB0 (at), wwan0 (net)", own="unknown", lock="none",
              retries="sim-pin (3), sim-puk (10)", state="registered", power="on", access="lte", quality=54,
              recent="recent", imei="867223020000000", locks="none", operator_id="26201",
              operator_name="Telekom.de", subscription="unknown", registration="roaming")


def render_16(v: dict) -> str:
    """The 1.6.0 printf sequence (Modes/Bands/IP/SIM/Bearers sections left out: not read)."""
    return ("\n"
            "%s (device id '%s')\n" % (v["path"], v["device_id"])
            + "  -------------------------\n"
              "  Hardware |   manufacturer: '%s'\n"
              "           |          model: '%s'\n"
              "           |       revision: '%s'\n"
              "           |      supported: '%s'\n"
              "           |        current: '%s'\n"
              "           |   equipment id: '%s'\n" % (v["manufacturer"], v["model"], v["revision"], v["supported"],
                                                      v["current"], v["equipment_id"])
            + "  -------------------------\n"
              "  System   |         device: '%s'\n"
              "           |        drivers: '%s'\n"
              "           |         plugin: '%s'\n"
              "           |   primary port: '%s'\n"
              "           |          ports: '%s'\n" % (v["device"], v["drivers"], v["plugin"], v["primary_port"],
                                                      v["ports"])
            + "  -------------------------\n"
              "  Numbers  |           own : '%s'\n" % v["own"]
            + "  -------------------------\n"
              "  Status   |           lock: '%s'\n"
              "           | unlock retries: '%s'\n"
              "           |          state: '%s'\n" % (v["lock"], v["retries"], v["state"])
            + "           |    power state: '%s'\n"
              "           |    access tech: '%s'\n"
              "           | signal quality: '%u' (%s)\n" % (v["power"], v["access"], v["quality"], v["recent"])
            + "  -------------------------\n"
              "  3GPP     |           imei: '%s'\n"
              "           |  enabled locks: '%s'\n"
              "           |    operator id: '%s'\n"
              "           |  operator name: '%s'\n"
              "           |   subscription: '%s'\n"
              "           |   registration: '%s'\n" % (v["imei"], v["locks"], v["operator_id"], v["operator_name"],
                                                      v["subscription"], v["registration"]))


def test_the_quoted_layout_reads_like_the_current_one():
    out = mmcli.to_json(render_16(VALUES))
    (o,) = out["outputs"]
    f, s = o["fields"], o["sample"]
    assert f["dbus_path"] == VALUES["path"] and f["sections"]["layout"] == "quoted (mmcli <= 1.6)"
    assert (f["manufacturer"], f["model"], f["revision"]) == ("huawei", "E3372", "22.315.01.00.00")
    assert f["state"] == "registered" and f["access_technologies"] == ["lte"]
    assert f["signal_quality_pct"] == 54 and f["signal_quality_recent"] is True
    assert (f["operator_code"], f["operator_name"], f["registration_state"]) == ("26201", "Telekom.de", "roaming")
    assert "'" not in str(f["imei"]) and f["imei"] == "867223020000000"
    assert (s["mcc"], s["mnc"], s["registration"], s["technology"], s["signal_quality_pct"]) == \
        ("262", "01", "roaming", "lte", 54)


def test_cached_signal_quality_and_unknown_values():
    v = dict(VALUES, recent="cached", quality=0, operator_name="unknown")
    (o,) = mmcli.to_json(render_16(v))["outputs"]
    assert o["fields"]["signal_quality_pct"] == 0 and o["fields"]["signal_quality_recent"] is False
