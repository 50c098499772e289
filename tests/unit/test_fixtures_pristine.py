"""The recorded fixtures are real tool output: they must stay byte-for-byte as recorded."""
import hashlib
from tests.support.shipped import ROOT, TESTS

HERE = TESTS / "fixtures"
SHARED = ROOT.parent / "shared" / "fixtures"


def _manifest() -> dict[str, str]:
    out = {}
    for line in (HERE / "recorded.sha256").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        out[name.removeprefix("./")] = digest
    return out


def test_every_recorded_fixture_matches_its_checksum():
    manifest = _manifest()
    assert len(manifest) > 40
    on_disk = {str(p.relative_to(HERE / "recorded")) for p in (HERE / "recorded").rglob("*") if p.is_file()}
    assert on_disk == set(manifest), "fixture files added or removed"
    for name, digest in manifest.items():
        data = (HERE / "recorded" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
        # Where the shared originals sit next to the checkout, the copies must equal them too
        # (a CI clone may not have ../shared; the checksums above still pin every byte).
        if SHARED.is_dir():
            assert data == (SHARED / name).read_bytes(), name
