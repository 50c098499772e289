"""A local InfluxDB 2.x server that ctl starts and sets up (virtual rack, tests).

The binary is built once by `scripts/build-influxdb.sh` into the state dir. Data, the
generated admin token and the server log live in `<state>/influxdb/<name>/`; the token
file is mode 0600 and is what the inventory's `token: {file: ...}` reference points to.
"""
from __future__ import annotations

import json
import re
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from controller.safefs import create_private, private_dir, read_private
from controller.errors import LabError
from controller.settings import state_dir

INFLUXD_VERSION = "2.7.12"

# The token file holds one token on one line, as ctl writes it (the rule of the lab's other secrets,
# controller/lab/rack.py): anything else at the inventory's `token.file` is not taken for a token.
_TOKEN_LINE = re.compile(rb"[\x21-\x7e]{1,256}\n?")


def influxd_binary() -> Path:
    return state_dir() / "bin" / "influxd"


@dataclass
class InfluxServer:
    url: str
    org: str
    bucket: str
    data_dir: Path
    token_file: Path

    @property
    def bind(self) -> str:
        u = urlparse(self.url)
        return f"{u.hostname}:{u.port or 8086}"

    def health(self, timeout: float = 1.0) -> bool:
        try:
            with urllib.request.urlopen(self.url.rstrip("/") + "/health", timeout=timeout) as r:
                return json.load(r).get("status") == "pass"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def _request(self, method: str, path: str, body: dict | None = None, token: str | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url.rstrip("/") + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Token {token}")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as exc:
            raise LabError(f"InfluxDB {method} {path}: HTTP {exc.code} {exc.read()[:200]!r}") from None
        except (OSError, urllib.error.URLError) as exc:
            raise LabError(f"InfluxDB {method} {path}: {exc}") from None

    def start(self) -> subprocess.Popen:
        binary = influxd_binary()
        if not binary.exists():
            raise LabError(f"{binary} is missing: run scripts/setup.sh (it builds InfluxDB {INFLUXD_VERSION})")
        for sub in ("engine", "home"):
            (self.data_dir / sub).mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / "influxd.log", "ab")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(self.data_dir / "home"), "LC_ALL": "C"}
        argv = [str(binary), "run", "--http-bind-address", self.bind,
                "--bolt-path", str(self.data_dir / "influxd.bolt"),
                "--sqlite-path", str(self.data_dir / "influxd.sqlite"),
                "--engine-path", str(self.data_dir / "engine"),
                "--reporting-disabled", "--log-level", "warn"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise LabError(f"influxd exited at once (status {proc.returncode}); see {self.data_dir / 'influxd.log'}")
            if self.health(0.5):
                break
            time.sleep(0.1)
        else:
            proc.terminate()
            raise LabError(f"influxd did not become healthy on {self.url}; see {self.data_dir / 'influxd.log'}")
        (self.data_dir / "influxd.pid").write_text(str(proc.pid))
        return proc

    def setup(self) -> str:
        """One-time onboarding (org, bucket, admin token); returns the token."""
        allowed = self._request("GET", "/api/v2/setup").get("allowed")
        if allowed:
            # The token file is only ever created (never over a file, never through a symlink), and
            # before the server is onboarded: an existing token line is the token; anything else is
            # refused with the file left byte for byte and the server not set up.
            private_dir(self.token_file.parent, "InfluxDB token directory", 0o700)
            token = secrets.token_urlsafe(32)
            if not create_private(self.token_file, token + "\n", "InfluxDB token file"):
                token = self._existing_token()
            self._request("POST", "/api/v2/setup", {
                "username": "ctl", "password": secrets.token_urlsafe(24), "org": self.org,
                "bucket": self.bucket, "token": token, "retentionPeriodSeconds": 0})
            return token
        if not self.token_file.exists():
            raise LabError(f"InfluxDB at {self.url} is already set up but its token file {self.token_file} is "
                           "missing; remove its data dir to start afresh")
        token = self._existing_token()
        self.ensure_bucket(token)
        return token

    def _existing_token(self) -> str:
        """The token in the token file, read without following a link; a file that is not one token line
        (a config file named by mistake) is a one-line error naming it, never the token."""
        data = read_private(self.token_file, "InfluxDB token file", 4096)
        if not _TOKEN_LINE.fullmatch(data):
            raise LabError(f"InfluxDB token: {self.token_file} exists and is not a token (one line, one token): "
                           "left as it is; write the token alone on its first line, or point the inventory's "
                           "influxdb.token.file at a file that does not exist yet for ctl to create")
        return data.decode("ascii").strip()

    def ensure_bucket(self, token: str) -> None:
        orgs = self._request("GET", f"/api/v2/orgs?org={self.org}", token=token).get("orgs", [])
        if not orgs:
            raise LabError(f"InfluxDB org {self.org!r} does not exist at {self.url}")
        buckets = self._request("GET", f"/api/v2/buckets?name={self.bucket}&orgID={orgs[0]['id']}",
                                token=token).get("buckets", [])
        if not buckets:
            self._request("POST", "/api/v2/buckets", {"name": self.bucket, "orgID": orgs[0]["id"],
                                                      "retentionRules": []}, token=token)

    def pid(self) -> int | None:
        try:
            return int((self.data_dir / "influxd.pid").read_text())
        except (OSError, ValueError):
            return None
