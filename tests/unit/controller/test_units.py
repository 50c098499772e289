"""controller.units: the one unit convention of the project, tested from its module docstring.

Rates are int bit/s with decimal prefixes (lowercase b = bits, uppercase B = bytes); durations
are float seconds; delays int microseconds with a mandatory unit; probabilities fractions in
[0, 1] or percentages; sizes bytes with binary multiples; queues slots or bytes.
"""
from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import ParameterError, UsageError
from controller.units import (
    Queue,
    bdp_bytes,
    format_bytes,
    format_delay,
    format_percent,
    format_probability,
    format_rate,
    format_rate_arg,
    format_size,
    parse_delay_us,
    parse_duration,
    parse_probability,
    parse_queue,
    parse_rate,
    parse_size,
)

# ---- rates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, bps", [
    ("20M", 20_000_000),
    ("100Mbit/s", 100_000_000),
    ("100Mbps", 100_000_000),
    ("1G", 1_000_000_000),
    ("2.5M", 2_500_000),
    ("500k", 500_000),
    ("500K", 500_000),
    ("1e6", 1_000_000),
    ("20000000", 20_000_000),
    ("20Mb", 20_000_000),           # lowercase b: bits
    ("20mbit", 20_000_000),         # tc's spelling
    ("100kbit/s", 100_000),
    ("1Tbps", 10**12),
    (" 20M ", 20_000_000),
    (".5M", 500_000),
])
def test_parse_rate_bits(text, bps):
    assert parse_rate(text) == bps
    assert isinstance(parse_rate(text), int)


@pytest.mark.parametrize("text, bps", [
    ("10MB/s", 80_000_000),         # the docstring's example
    ("20MB", 160_000_000),          # uppercase B: bytes
    ("20KB/s", 160_000),
    ("1Bps", 8),
    ("1B/s", 8),
])
def test_parse_rate_bytes_are_times_eight(text, bps):
    assert parse_rate(text) == bps


def test_bit_and_byte_spellings_differ_by_eight():
    assert parse_rate("10MB/s") == 8 * parse_rate("10Mb/s") == 8 * parse_rate("10Mbit/s")


def test_parse_rate_numbers_are_bit_per_second():
    assert parse_rate(20_000_000) == 20_000_000
    assert parse_rate(1500.0) == 1500


@pytest.mark.parametrize("text, fragment", [
    ("-5M", "must be a positive rate"),
    ("20Q", "unknown unit 'Q'"),
    ("0", "must be a positive rate"),
    ("", "is not a rate"),
    ("nan", "is not a rate"),
    ("inf", "is not a rate"),
    ("20M/s", "unknown unit"),
    ("0.4", "below 1 bit/s"),
])
def test_parse_rate_rejects(text, fragment):
    with pytest.raises(ParameterError) as ei:
        parse_rate(text, what="--link2")
    assert fragment in str(ei.value)
    assert str(ei.value).startswith("--link2: ")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 0, True])
def test_parse_rate_rejects_numbers(value):
    with pytest.raises(ParameterError):
        parse_rate(value)


def test_parse_rate_zero_only_when_allowed():
    assert parse_rate("0", allow_zero=True) == 0
    with pytest.raises(ParameterError):
        parse_rate("0")


def test_rate_errors_are_usage_errors_exit_2():
    with pytest.raises(UsageError) as ei:
        parse_rate("-5M")
    assert ei.value.exit_code == 2


@pytest.mark.parametrize("parse, text", [
    (parse_rate, "1e400"),
    (parse_duration, "1e400s"),
    (parse_delay_us, "1e400ms"),
    (parse_probability, "1e400%"),
    (parse_size, "1e400"),
])
def test_huge_exponent_is_a_parameter_error_not_a_crash(parse, text):
    # Bad input must be one line and exit 2 (README); an OverflowError would be a traceback.
    with pytest.raises(ParameterError):
        parse(text)


# ---- durations -----------------------------------------------------------------------------


@pytest.mark.parametrize("text, seconds", [
    ("30", 30.0),                   # default unit: seconds
    ("30s", 30.0),
    ("1.5s", 1.5),
    ("10min", 600.0),
    ("1m", 60.0),
    ("2h", 7200.0),
    ("50ms", 0.05),
    ("250us", 250e-6),
    ("250µs", 250e-6),
    ("1e3ms", 1.0),
    (30, 30.0),
    (2.5, 2.5),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12)


def test_parse_duration_default_unit():
    assert parse_duration("30", default_unit="ms") == pytest.approx(0.03)
    with pytest.raises(ParameterError, match="needs a unit"):
        parse_duration("30", default_unit=None)
    with pytest.raises(ParameterError, match="needs a unit"):
        parse_duration(30, default_unit=None)
    assert parse_duration("30s", default_unit=None) == 30.0


@pytest.mark.parametrize("text", ["0", "0s", "-1s", "5x", "", "nan", True])
def test_parse_duration_rejects(text):
    with pytest.raises(ParameterError):
        parse_duration(text)


def test_parse_duration_zero_when_allowed():
    assert parse_duration("0s", allow_zero=True) == 0.0


# ---- delays --------------------------------------------------------------------------------


@pytest.mark.parametrize("text, us", [
    ("50ms", 50_000),
    ("0.5ms", 500),
    ("800ms", 800_000),
    ("2s", 2_000_000),
    ("250us", 250),
    ("1us", 1),
    ("0.001ms", 1),
    ("0.1ms", 100),
    ("0.3ms", 300),
    ("123.456ms", 123_456),
    ("0", 0),                       # zero needs no unit
    ("0.0", 0),
    ("0ms", 0),
    (0, 0),
])
def test_parse_delay_us(text, us):
    got = parse_delay_us(text)
    assert got == us and isinstance(got, int)


@pytest.mark.parametrize("text, fragment", [
    ("50", "needs a unit"),         # a delay's unit is mandatory
    (50, "needs a unit"),
    ("1.5us", "finer than 1 microsecond"),
    ("0.0015ms", "finer than 1 microsecond"),
    ("-5ms", "not a duration"),
])
def test_parse_delay_rejects(text, fragment):
    with pytest.raises(ParameterError) as ei:
        parse_delay_us(text, what="--delay")
    assert fragment in str(ei.value)
    assert str(ei.value).startswith("--delay: ")


# ---- probabilities -------------------------------------------------------------------------


@pytest.mark.parametrize("text, p", [
    ("0.01%", 0.0001),
    ("1%", 0.01),
    ("0.5 %", 0.005),
    ("100%", 1.0),
    ("1e-4", 0.0001),               # a fraction in scientific notation
    ("2.5E-3", 0.0025),
    ("4.6e-5", 0.000046),
    ("1e0", 1.0),
    ("0", 0.0),                     # zero is zero either way
    ("0.0", 0.0),
    ("0%", 0.0),
    (0, 0.0),                       # a YAML 0
    (0.0, 0.0),
])
def test_parse_probability(text, p):
    assert parse_probability(text) == pytest.approx(p, rel=1e-12, abs=0)


@pytest.mark.parametrize("text", ["101%", "1.5e0", "2e0", "-1%", "nan", "x%", True, "1e-4 %%", "%"])
def test_parse_probability_rejects(text):
    with pytest.raises(ParameterError):
        parse_probability(text)


def test_probability_over_100_percent_message():
    with pytest.raises(ParameterError, match=r"outside 0\.\.1 \(0%\.\.100%\)"):
        parse_probability("101%", what="--plr")


@pytest.mark.parametrize("text, message", [
    # the case: the paper's "0.01" (percent) as a bare number would have been 1 %
    ("0.01", "--loss: 0.01 is ambiguous: write 0.01% or 1e-4 for 0.01 percent, 1% or 1e-2 for a fraction of 0.01"),
    ("0.0046", "--loss: 0.0046 is ambiguous: write 0.0046% or 4.6e-5 for 0.0046 percent, "
               "0.46% or 4.6e-3 for a fraction of 0.0046"),
    ("1", "--loss: 1 is ambiguous: write 1% or 1e-2 for 1 percent, 100% or 1e0 for a fraction of 1"),
    ("0.05", "--loss: 0.05 is ambiguous: write 0.05% or 5e-4 for 0.05 percent, 5% or 5e-2 for a fraction of 0.05"),
    ("1.5", "--loss: 1.5 is ambiguous: write 1.5% or 1.5e-2 for 1.5 percent"),   # not a fraction at all
    ("200", "--loss: 200 is above 100 % as a percentage and above 1 as a fraction: write a percentage (0.01%) or "
            "a fraction in scientific notation (1e-4)"),
    (" 0.25 ", "--loss: 0.25 is ambiguous: write 0.25% or 2.5e-3 for 0.25 percent, 25% or 2.5e-1 for a fraction "
               "of 0.25"),
    # a YAML number: its spelling is gone, the message says it was a number
    (0.01, "--loss: the number 0.01 is ambiguous: write 0.01% or 1e-4 for 0.01 percent, 1% or 1e-2 for a "
           "fraction of 0.01"),
    (1, "--loss: the number 1 is ambiguous: write 1% or 1e-2 for 1 percent, 100% or 1e0 for a fraction of 1"),
])
def test_a_bare_loss_is_refused_naming_the_accepted_forms(text, message):
    with pytest.raises(UsageError) as ei:
        parse_probability(text, what="--loss")
    assert str(ei.value) == message and ei.value.exit_code == 2


def test_every_spelling_the_refusal_suggests_parses_to_its_reading():
    """The two spellings offered for each reading of a bare number mean the same value."""
    for bare in ("0.01", "0.0046", "0.025", "0.1", "1", "0.5", "0.000001", "12.5", "100"):
        with pytest.raises(ParameterError) as ei:
            parse_probability(bare)
        readings = re.findall(r"write (\S+) or (\S+) for|, (\S+) or (\S+) for", str(ei.value))
        pairs = [tuple(x for x in r if x) for r in readings]
        assert pairs and float(bare) / 100 == pytest.approx(parse_probability(pairs[0][0]), rel=1e-12)
        for a, b in pairs:
            assert parse_probability(a) == pytest.approx(parse_probability(b), rel=1e-12)
        if float(bare) <= 1:
            assert parse_probability(pairs[1][1]) == pytest.approx(float(bare), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.decimals(min_value=0, max_value=100, allow_nan=False, allow_infinity=False, places=8))
def test_any_bare_number_but_zero_is_refused_and_its_unit_forms_are_not(d):
    """Fuzzed: a bare decimal is refused unless it is zero; with `%` it is a percentage, and the
    scientific spelling the refusal offers for that reading is the same fraction."""
    text = format(d, "f")
    if d == 0:
        assert parse_probability(text) == 0.0
        return
    with pytest.raises(ParameterError, match="is ambiguous"):
        parse_probability(text)
    assert parse_probability(text + "%") == pytest.approx(float(d) / 100, rel=1e-12)
    sci = re.search(r"% or (\S+) for", str(pytest.raises(ParameterError, parse_probability, text).value)).group(1)
    assert parse_probability(sci) == pytest.approx(float(d) / 100, rel=1e-12)


def test_a_long_bare_number_is_refused_in_one_short_line():
    with pytest.raises(ParameterError) as ei:
        parse_probability("0." + "0" * 5000 + "1")
    assert "ambiguous" in str(ei.value) and len(str(ei.value)) < 300


# ---- sizes and queues ----------------------------------------------------------------------


@pytest.mark.parametrize("text, n", [
    ("1500", 1500),
    ("1500B", 1500),
    ("64KB", 65536),                # binary, as dummynet reads `queue 64KBytes`
    ("64kB", 65536),
    ("64K", 65536),
    ("64KiB", 65536),
    ("64KBytes", 65536),
    ("1.5KB", 1536),
    ("100MiB", 100 * 1024**2),
    ("1MB", 1024**2),
    ("1GB", 1024**3),
    (1500, 1500),
])
def test_parse_size_binary(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["0", "0.5", "64Kbit", "-5", 0, -5, "", True])
def test_parse_size_rejects(text):
    with pytest.raises(ParameterError):
        parse_size(text)


@pytest.mark.parametrize("text, queue", [
    ("50", Queue(slots=50)),
    ("50slots", Queue(slots=50)),
    ("1slot", Queue(slots=1)),
    ("50 pkts", Queue(slots=50)),
    ("50packets", Queue(slots=50)),
    (50, Queue(slots=50)),
    ("64KB", Queue(bytes=65536)),
    ("64KiB", Queue(bytes=65536)),
    ("30000B", Queue(bytes=30000)),
])
def test_parse_queue_slots_vs_bytes(text, queue):
    q = parse_queue(text)
    assert q == queue
    assert (q.slots is None) != (q.bytes is None)


@pytest.mark.parametrize("text", ["0", "0slots", 0, "-5", True])
def test_parse_queue_rejects(text):
    with pytest.raises(ParameterError):
        parse_queue(text)


def test_queue_exactly_one_bound():
    with pytest.raises(ParameterError):
        Queue()
    with pytest.raises(ParameterError):
        Queue(slots=5, bytes=1000)
    with pytest.raises(ParameterError):
        Queue(slots=0)


def test_queue_json_and_text():
    assert Queue(slots=50).to_json() == {"slots": 50}
    assert Queue(bytes=65536).to_json() == {"bytes": 65536}
    for q in (Queue(slots=50), Queue(bytes=65536)):
        assert Queue.from_json(q.to_json()) == q
    assert str(Queue(slots=50)) == "50 slots"
    assert str(Queue(bytes=65536)) == "64KiB"


# ---- BDP and formatters --------------------------------------------------------------------


def test_bdp_bytes():
    assert bdp_bytes(20_000_000, 50_000) == 125_000          # 20 Mbit/s x 50 ms / 8
    assert bdp_bytes(100_000_000, 100_000) == 1_250_000
    assert bdp_bytes(1, 1) == 1                               # rounded up, never 0
    assert bdp_bytes(8, 1_000_000) == 1
    assert bdp_bytes(9, 1_000_000) == 2                       # 1.125 bytes -> 2


@pytest.mark.parametrize("bps, text", [
    (20_000_000, "20M"),
    (2_500_000, "2500k"),
    (1_000_000_000, "1G"),
    (100 * 10**9, "100G"),
    (64_000, "64k"),
    (1_001_000, "1001k"),
    (1500, "1500"),
    (999, "999"),
    (1, "1"),
])
def test_format_rate_arg_round_trip(bps, text):
    assert format_rate_arg(bps) == text
    assert parse_rate(format_rate_arg(bps)) == bps


def test_human_formatters():
    assert format_rate(None) == "unlimited"
    assert format_rate(20_000_000) == "20 Mbit/s"
    assert format_rate(1_000_000_000) == "1 Gbit/s"
    assert format_rate(999) == "999 bit/s"
    assert format_delay(50_000) == "50ms"
    assert format_delay(1500) == "1.5ms"
    assert parse_delay_us(format_delay(1500)) == 1500
    assert format_size(65536) == "64KiB"
    assert format_size(1500) == "1500B"
    assert parse_size(format_size(65536)) == 65536
    assert format_probability(0.0001) == "0.01%"
    assert math.isclose(parse_probability(format_probability(0.0001)), 0.0001)
    assert format_percent(0.000046) == "0.0046 %"


@pytest.mark.parametrize("n, text", [
    (5_000_000, "5,000,000 B (4.77 MiB)"),
    (1_048_576, "1 MiB (1,048,576 B)"),
    (1_500, "1,500 B"),
    (514_399, "514,399 B (502 KiB)"),
    (1_029_471, "1,029,471 B (1,005 KiB)"),          # was "(1.01e+03 KiB)"
    (1_048_575, "1,048,575 B (1,024 KiB)"),
    (1_023_999_999, "1,023,999,999 B (977 MiB)"),
    (1_073_741_823, "1,073,741,823 B (1,024 MiB)"),   # was "(1.02e+03 MiB)"
    (1_500_000_000_100, "1,500,000,000,100 B (1,397 GiB)"),
])
def test_format_bytes_reads_without_an_exponent(n, text):
    assert format_bytes(n) == text
    assert "e+" not in format_bytes(n)


def test_counted_puts_the_noun_in_its_number():
    from controller.units import counted
    assert [counted(n, "flow") for n in (0, 1, 2)] == ["0 flows", "1 flow", "2 flows"]
    assert counted(1, "probe") == "1 probe" and counted(3, "interface") == "3 interfaces"
    assert counted(2, "BitTorrent download") == "2 BitTorrent downloads"
    assert counted(2, "proxy", "proxies") == "2 proxies"
