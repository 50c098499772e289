"""qmicli captures with noise around the tool's output (issue 17): each kind of stray line is set
aside with its line number and why, the output is parsed as if it were alone, and the parse
fails -- naming a line -- only when nothing recognisable remains.

The qmicli output below is SAMPLE A of tests/fixtures/recorded/02b_qmicli.md (libqmi PR #2, a
Quectel RM500Q on an Amari callbox), tabs as qmicli prints them; the noise is the kind a field
capture holds (the lines are ours, their shapes those of bash/ash prompts, GLib's log format
g_log_default_handler, libqmi's --verbose log, a serial console's echo).
"""
from __future__ import annotations

import pytest

from controller.errors import ParseError
from controller.parsers import parse as registry_parse, parse_partial
from nodes.modem import qmicli

BODY = ("[/dev/cdc-wdm0] Successfully got signal info\n"
        "LTE:\n\tRSSI: '-47 dBm'\n\tRSRQ: '-5 dB'\n\tRSRP: '-70 dBm'\n\tSNR: '30.0 dB'\n"
        "5G:\n\tRSRP: '-75 dBm'\n\tSNR: '18.5 dB'\n\tRSRQ: '-11 dB'\n")
HEADERLESS = BODY.split("\n", 1)[1]


def _check(out: dict) -> None:
    (o,) = out["outputs"]
    assert o["type"] == "signal-info"
    s = out["sample"]
    assert (s["technology"], s["rsrp_dbm"], s["rsrq_db"], s["snr_db"]) == ("nr5g-nsa", -70.0, -5.0, 30.0)
    assert s["secondary"][0]["rsrp_dbm"] == -75.0


NOISE = [
    ("root@OpenWrt:~# qmicli -d /dev/cdc-wdm0 -p --nas-get-signal-info", "shell-prompt"),
    ("user@laptop:~/captures$ sudo qmicli -d /dev/cdc-wdm0 --nas-get-signal-info", "shell-prompt"),
    ("~ # qmicli -d /dev/cdc-wdm0 --nas-get-signal-info", "shell-prompt"),
    ("\x1b[01;32mpi@raspberrypi\x1b[00m:\x1b[01;34m~ $\x1b[00m qmicli -p --nas-get-signal-info", "shell-prompt"),
    ("qmicli -d /dev/cdc-wdm0 --nas-get-signal-info", "shell-prompt"),            # the command echoed alone
    ("(qmicli:1234): GLib-WARNING **: 10:12:01.123: g_main_context_pop_thread_default: assertion failed",
     "glib-log"),
    ("** (qmicli:2201): WARNING **: couldn't open device: Resource temporarily unavailable", "glib-log"),
    ("GLib-GIO-CRITICAL **: g_dbus_connection_call_finish: assertion 'G_IS_DBUS_CONNECTION' failed", "glib-log"),
    ("[19 Jun 2017, 12:34:56] [Debug] [/dev/cdc-wdm0] Opening device with flags 'proxy'...", "qmi-log"),
    ("AT+CSQ", "serial-echo"),
    ("+CREG: 1", "serial-echo"),
    ("[sudo] password for pi: ", "sudo"),
]


@pytest.mark.parametrize("noise, why", NOISE)
def test_noise_line_before_the_header_is_skipped_and_reported(noise, why):
    out = qmicli.to_json(noise + "\n" + BODY)
    _check(out)
    assert out["skipped"] == [{"line": 1, "text": noise, "why": why}]


@pytest.mark.parametrize("noise, why", NOISE)
def test_noise_line_before_a_headerless_body_is_skipped(noise, why):
    out = qmicli.to_json(noise + "\n" + HEADERLESS)
    _check(out)
    assert [x["line"] for x in out["skipped"]] == [1]


def test_glib_warning_inside_the_output_is_skipped_not_nested():
    lines = BODY.split("\n")
    text = "\n".join(lines[:3] + ["(qmicli:77): GLib-WARNING **: stray"] + lines[3:])
    out = qmicli.to_json(text)
    _check(out)
    assert out["skipped"] == [{"line": 4, "text": "(qmicli:77): GLib-WARNING **: stray", "why": "glib-log"}]


def test_several_kinds_of_noise_together_with_line_numbers():
    text = ("[sudo] password for pi: \r\nroot@OpenWrt:~# qmicli -p --nas-get-signal-info\r\n"
            "(qmicli:1234): GLib-WARNING **: whatever\r\n" + BODY.replace("\n", "\r\n") + "root@OpenWrt:~# \r\n")
    out = qmicli.to_json(text)
    _check(out)
    assert [(x["line"], x["why"]) for x in out["skipped"]] == [
        (1, "sudo"), (2, "shell-prompt"), (3, "glib-log"), (14, "shell-prompt")]


def test_unclassified_stray_text_before_a_headerless_body_is_skipped():
    text = "Script started on 2024-03-01 10:00:00+00:00\nsome words\n" + HEADERLESS
    out = qmicli.to_json(text)
    _check(out)
    assert [(x["line"], x["why"]) for x in out["skipped"]] == [(1, "typescript"), (2, "not qmicli output")]


def test_a_log_line_in_brackets_is_not_taken_for_a_success_header():
    out = qmicli.to_json("[sudo] password for pi: \n[19 Jun 2017, 12:34:56] [Debug] x\n" + BODY)
    assert [o["device"] for o in out["outputs"]] == ["/dev/cdc-wdm0"]


def test_qrtr_device_header():
    out = qmicli.to_json(BODY.replace("/dev/cdc-wdm0", "qrtr://0"))
    assert out["outputs"][0]["device"] == "qrtr://0"


def test_clean_output_skips_nothing():
    assert qmicli.to_json(BODY)["skipped"] == []


def test_nothing_recognisable_names_the_first_line():
    with pytest.raises(ParseError, match=r"line 2: no qmicli output recognised"):
        qmicli.to_json("\nbash: qmicli: command not found\nroot@OpenWrt:~# \n")


def test_only_noise_is_an_error():
    with pytest.raises(ParseError, match=r"line 1: .*glib-log"):
        qmicli.to_json("(qmicli:1): GLib-WARNING **: x\n")


def test_unknown_command_header_names_its_line():
    text = "root@OpenWrt:~# qmicli --nas-get-home-network\n[/dev/cdc-wdm0] Successfully got home network:\n" \
           "\tHome network:\n\t\tMCC: '234'\n"
    with pytest.raises(ParseError, match=r"line 2: unknown output 'Successfully got home network'"):
        qmicli.to_json(text)


def test_partial_keeps_the_known_output_next_to_an_unknown_one():
    text = "[/dev/cdc-wdm0] Successfully got home network:\n\tHome network:\n\t\tMCC: '234'\n" + BODY
    out = parse_partial("qmicli", text)
    assert out["partial"] and out["unrecognised"][0]["line"] == 1
    _check(out["result"])


def test_same_code_path_as_ctl_parse():
    _check(registry_parse("qmicli", "root@OpenWrt:~# qmicli -p --nas-get-signal-info\n" + BODY))


def test_error_line_still_an_error_output_after_noise():
    out = qmicli.to_json("root@x:~# qmicli --nas-get-serving-system\n"
                         "error: couldn't get serving system: QMI protocol error (3): 'Internal'\n")
    assert out["outputs"][0]["type"] == "error" and out["skipped"][0]["why"] == "shell-prompt"
