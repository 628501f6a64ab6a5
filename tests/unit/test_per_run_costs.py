"""No per-run costs: the at-rest key is read once per process (until it changes), and
Prefect's API clients share one *verified* TLS context per CA file (never an insecure one)."""

from __future__ import annotations

import os
import shutil
import ssl

import certifi
import pytest
from cryptography.fernet import Fernet
from prefect.client import orchestration
from prefect.client.orchestration import SyncPrefectClient

from clausegate.errors import ConfigurationError
from clausegate.pipeline.tls import share_api_tls_context
from clausegate.security import at_rest


@pytest.fixture
def key_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))
    monkeypatch.delenv("CLAUSEGATE_AT_REST_KEY", raising=False)
    return tmp_path / "secrets"


@pytest.fixture
def key_reads(monkeypatch):
    reads = []
    real = at_rest.at_rest_key

    def counting(*, create=True):
        reads.append(create)
        return real(create=create)

    monkeypatch.setattr(at_rest, "at_rest_key", counting)
    return reads


def _replace_key(folder, key: str) -> None:
    tmp = folder / "at-rest.key.new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    os.replace(tmp, folder / "at-rest.key")


def test_the_key_is_read_once_until_it_is_rotated(key_folder, key_reads):
    blobs = [at_rest.seal(b"x") for _ in range(10)]
    assert [at_rest.unseal(b, what="t") for b in blobs] == [b"x"] * 10
    assert len(key_reads) == 1  # was one read (all CLAUSEGATE_* settings + the file) per seal and unseal
    old = at_rest.current_key_id()

    _replace_key(key_folder, Fernet.generate_key().decode())  # rotation: a new file in place
    assert at_rest.current_key_id() != old
    with pytest.raises(at_rest.AtRestKeyError):
        at_rest.unseal(blobs[0], what="t")
    assert len(key_reads) == 2


def test_the_environment_key_wins_and_a_change_is_seen(key_folder, key_reads, monkeypatch):
    file_key_id = at_rest.current_key_id() or at_rest.key_id(at_rest._key(create=True))
    env_key = Fernet.generate_key().decode()
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", env_key)
    assert at_rest.current_key_id() == at_rest.key_id(env_key) != file_key_id
    monkeypatch.delenv("CLAUSEGATE_AT_REST_KEY")
    assert at_rest.current_key_id() == file_key_id


def test_a_key_file_opened_to_others_is_refused_again(key_folder):
    at_rest.seal(b"x")
    os.chmod(key_folder / "at-rest.key", 0o644)
    with pytest.raises(ConfigurationError, match="readable by other users"):
        at_rest.seal(b"x")


def test_api_clients_share_one_verified_context_and_never_an_insecure_one(tmp_path):
    share_api_tls_context()
    shim = orchestration.ssl
    bundle = tmp_path / "ca.pem"
    shutil.copyfile(certifi.where(), bundle)

    shared = shim.create_default_context(cafile=str(bundle))
    assert shim.create_default_context(cafile=str(bundle)) is shared
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname

    insecure = shim.create_default_context()  # Prefect's PREFECT_API_TLS_INSECURE_SKIP_VERIFY path
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    assert shim.create_default_context() is not insecure
    assert shim.create_default_context(cafile=str(bundle)) is shared and shared.verify_mode == ssl.CERT_REQUIRED

    shared.check_hostname = False  # somebody weakened the shared one: it is replaced, not handed out
    again = shim.create_default_context(cafile=str(bundle))
    assert again is not shared and again.check_hostname and again.verify_mode == ssl.CERT_REQUIRED

    shutil.copyfile(certifi.where(), tmp_path / "ca2.pem")
    os.replace(tmp_path / "ca2.pem", bundle)  # the CA file changed: a new context
    assert shim.create_default_context(cafile=str(bundle)) is not again


def test_prefect_clients_use_the_shared_context():
    share_api_tls_context()
    contexts = []
    for _ in range(2):
        client = SyncPrefectClient("https://prefect.invalid/api")
        contexts.append(client._client._transport._pool._ssl_context)
    assert contexts[0] is contexts[1]
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname
