"""The streaming sealer writes exactly the at-rest format: ``at_rest.unseal`` reads it back, same size."""

from __future__ import annotations

import hashlib
import os

import pytest

from clausegate.security import at_rest
from clausegate.security.sealed_stream import SealingWriter


@pytest.fixture(autouse=True)
def own_key(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))
    monkeypatch.delenv("CLAUSEGATE_AT_REST_KEY", raising=False)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 16, 17, 65_537, 1_000_001])
def test_a_streamed_seal_unseals_to_the_plaintext(tmp_path, size):
    data = os.urandom(size)
    writer = SealingWriter(tmp_path / "uploads", limit=size, too_large=ValueError("too large"))
    for start in range(0, size, 65_521):  # chunks that are not multiples of the AES block or of 3
        writer.write(data[start:start + 65_521])
    writer.finish()
    writer.commit(tmp_path / "uploads" / "x" / "c.pdf")
    blob = (tmp_path / "uploads" / "x" / "c.pdf").read_bytes()
    assert at_rest.unseal(blob, what="test") == data and len(blob) == at_rest.sealed_size(size)
    assert writer.sha256.hexdigest() == hashlib.sha256(data).hexdigest() and writer.head == data[:1024]
    assert [p.name for p in (tmp_path / "uploads").iterdir()] == ["x"]  # the temporary file was moved


def test_past_the_limit_the_write_fails_and_the_temporary_file_is_gone(tmp_path):
    writer = SealingWriter(tmp_path / "uploads", limit=10, too_large=ValueError("over the limit"))
    writer.write(b"%PDF-1.4\n")
    with pytest.raises(ValueError, match="over the limit"):
        writer.write(b"more bytes")
    assert list((tmp_path / "uploads").iterdir()) == []
