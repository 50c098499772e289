"""The field logger's GPS thread against a local server speaking gpsd's protocol (a TCP socket: the
client's ?WATCH, then JSON reports one per line, as gpsd sends them). Issue 23 audit: one report
`{"class":"TPV","mode":"x"}` raised out of tpv() and ended the thread for good (no fix for the rest of
the field test). A malformed report is now counted, logged and skipped; the thread goes on."""
from __future__ import annotations

import json
import socket
import threading
import time

from nodes.fieldlog import sources as S

BAD = [b'{"class":"TPV","mode":"x"}',
       b'{"class":"TPV","mode":1e999,"time":"2026-01-01T00:00:00Z"}',
       b'{"class":"TPV","mode":3,"time":"2026-01-01T00:00:00Z","lat":1e999,"lon":2.5}',
       b'{"class":"TPV","mode":3,"lat":' + b"9" * 400 + b',"lon":2.5}',
       b'{"class":"TPV","mode":[]}',
       b'{"class":"TPV","mode":true}']
GOOD = b'{"class":"TPV","device":"/dev/ttyACM0","mode":3,"time":"2026-01-01T00:00:%02d.000Z","lat":1.5,"lon":2.5,"alt":10.0}'


def test_malformed_reports_are_skipped_and_the_gps_thread_goes_on():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    watch: list[bytes] = []
    sent = threading.Event()

    def gpsd() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.sendall(b'{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}\n')
            watch.append(conn.recv(1024))
            for line in BAD:                     # first the malformed ones, then good ones, one at a time
                conn.sendall(line + b"\n")
            for i in range(30):
                conn.sendall(GOOD % i + b"\n")
                time.sleep(0.05)
            sent.set()
            time.sleep(2.0)

    threading.Thread(target=gpsd, daemon=True).start()
    logged: list[str] = []
    g = S.GpsSource(f"127.0.0.1:{port}", max_age_s=5.0, log=logged.append)
    g.start()
    try:
        assert sent.wait(20)
        deadline = time.monotonic() + 5
        fix = g.latest()
        while (fix is None or fix.time != "2026-01-01T00:00:29.000Z") and time.monotonic() < deadline:
            time.sleep(0.05)
            fix = g.latest()
        assert g._thread.is_alive(), "the GPS thread died on a malformed report"
        assert fix is not None and fix.time == "2026-01-01T00:00:29.000Z" and (fix.lat, fix.lon) == (1.5, 2.5)
        assert g.bad_reports == len(BAD)
        assert g.take_bad() == len(BAD) and g.take_bad() == 0       # per tick: the ones since the last tick
        skipped = [m for m in logged if "report skipped" in m]
        assert len(skipped) == len(BAD) and "mode 'x'" in skipped[0] and "(1 so far)" in skipped[0]
        assert watch and watch[0].startswith(b"?WATCH=")
    finally:
        g.stop()
        srv.close()


def test_a_flood_of_malformed_reports_is_logged_sparingly():
    g = S.GpsSource("127.0.0.1:1")
    logged: list[str] = []
    g.log = logged.append
    for _ in range(2500):
        g._bad_report(BAD[0], ValueError("x"))
    assert g.bad_reports == 2500 and len(logged) == 12      # the first ten, the 1000th and the 2000th
    assert g.take_bad() == 2500
    g._bad_report(BAD[0], ValueError("x"))
    assert g.take_bad() == 1 and g.take_bad() == 0


def test_a_position_off_the_globe_is_a_skipped_report():
    from nodes.modem.gps import tpv
    g = S.GpsSource("127.0.0.1:1")
    line = b'{"class":"TPV","mode":2,"lat":91.0,"lon":2.5}'
    try:
        tpv(json.loads(line))
    except Exception as exc:              # what the thread does with it (sources.GpsSource._run)
        g._bad_report(line, exc)
    assert g.take_bad() == 1
