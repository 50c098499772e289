"""The lab database URL ($CTL_DATABASE_URL, or `database_url` in the config file) is parsed with
clear one-line errors (a bad port or IPv6 literal was a traceback), and a URL that carries a
secret (a password in the user part, `?password=`, `?sslpassword=`, ...) is refused without
printing it: passwords come from ~/.pgpass, $PGPASSFILE or a libpq service file."""
from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import UsageError
from controller.labdb import check_url, redact
from controller.labdb.url import parse_url
from tests.support.shipped import ROOT

SECRET = "S3cr3t-Value"


@pytest.mark.parametrize("url, hosts, db", [
    ("postgresql://alice@db.lab.example/ctl?sslmode=require", (("db.lab.example", None),), "ctl"),
    ("postgres://alice@db.lab.example:6543/ctl", (("db.lab.example", 6543),), "ctl"),
    ("postgresql://alice@[2001:db8::1]:5433/ctl", (("2001:db8::1", 5433),), "ctl"),
    ("postgresql://alice@[fe80::1%25eth0]/ctl", (("fe80::1%eth0", None),), "ctl"),
    ("postgresql://alice@a.example:5432,b.example:5433/ctl", (("a.example", 5432), ("b.example", 5433)), "ctl"),
    ("postgresql://ctl@/ctl_1?host=/tmp/ctl-pg-x/sock&port=5432", (("", None),), "ctl_1"),
    ("postgresql://alice@%2Frun%2Fpostgresql/ctl", (("/run/postgresql", None),), "ctl"),
])
def test_good_urls(url, hosts, db):
    u = parse_url(url)
    assert (u.hosts, u.dbname) == (hosts, db)
    check_url(url)
    assert "?" not in redact(url)


@pytest.mark.parametrize("url, message", [
    ("postgresql://alice@db:port/ctl", "port 'port' is not a number from 1 to 65535"),
    ("postgresql://alice@db:99999/ctl", "port '99999' is not a number from 1 to 65535"),
    ("postgresql://alice@db:0/ctl", "port '0' is not a number from 1 to 65535"),
    ("postgresql://alice@db:/ctl", "port '' is not a number from 1 to 65535"),
    ("postgresql://alice@[::1/ctl", "an IPv6 address in brackets"),
    ("postgresql://alice@[not-v6]:5432/ctl", "'not-v6' is not an IPv6 address"),
    ("postgresql://alice@::1/ctl", "an IPv6 address must be written in brackets"),
    ("postgresql://alice@db/ctl?port=54x32", "port '54x32' is not a number from 1 to 65535"),
    ("postgresql://alice@db/ctl?sslmode=require#frag", "a '#'"),
    ("postgresql://alice@db", "names no database"),
    ("postgresql://alice@db/", "names no database"),
    ("postgresql://alice@bad host/ctl", "'bad host' is not a host name"),
    ("mysql://alice@db/ctl", "not a postgresql:// URL"),
    ("postgresql://alice@db/ctl\n", "a control character"),
    ("postgresql://alice@db/ctl?sslmode=%zz", "a bad %-escape"),
])
def test_bad_urls_are_one_clear_line(url, message):
    with pytest.raises(UsageError, match=message) as e:
        check_url(url)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("url", [
    f"postgresql://alice:{SECRET}@db/ctl",
    f"postgresql://alice:{SECRET}@db:5432/ctl?sslmode=require",
    f"postgresql://alice@db/ctl?password={SECRET}",
    f"postgresql://alice@db/ctl?sslmode=verify-full&sslpassword={SECRET}",
    f"postgresql://alice@db/ctl?SSLPassword={SECRET}",
    f"postgresql://alice@db/ctl?ssl%70assword={SECRET}",
    f"postgresql://alice@db/ctl?oauth_client_secret={SECRET}",
    f"postgresql://alice:{SECRET}@db:bad/ctl",          # a bad port too: the secret is still not shown
    f"postgresql://alice:{SECRET}@[::1/ctl",
])
def test_a_secret_in_the_url_is_refused_without_printing_it(url):
    with pytest.raises(UsageError, match="holds a password.*a password in the URL is not allowed") as e:
        check_url(url)
    assert SECRET not in str(e.value) and ".pgpass" in str(e.value)


@pytest.mark.parametrize("url", [f"postgresql://alice@db/ctl?sslpassword={SECRET}", "postgresql://alice@db:x/ctl",
                                 "postgresql://alice@[::1/ctl"])
def test_the_cli_says_it_in_one_line_exit_2(url, tmp_path):
    for env in ({"CTL_DATABASE_URL": url}, {"CTL_CONFIG": str(tmp_path / "c.yaml")}):
        (tmp_path / "c.yaml").write_text(f"database_url: '{url}'\n")
        p = subprocess.run([sys.executable, "-m", "controller", "rack", "reservations", "lab-a"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin", "CTL_STATE_DIR": str(tmp_path / "state"), **env})
        assert p.returncode == 2, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
        assert SECRET not in p.stderr and SECRET not in p.stdout


def test_redact_never_fails_and_never_shows_a_secret():
    assert redact(f"postgresql://alice:{SECRET}@[::1/ctl") == "postgresql://(a URL that does not parse)"
    assert redact("postgresql://ctl@/ctl_1?host=/tmp/s&port=5432") == "postgresql://ctl@/tmp/s:5432/ctl_1"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_parsed_or_refused_with_a_usage_error(text):
    for url in (text, "postgresql://" + text):
        try:
            parse_url(url)
        except UsageError:
            pass
        assert redact(url).startswith(("postgresql://", "postgres://", "(not a postgresql:// URL)"))
