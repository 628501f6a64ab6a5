"""Contracts at rest: uploads and Prefect's persisted results are encrypted with the at-rest key.

One sealed format for both (ASCII, so a result can sit inside Prefect's JSON result record)::

    CLAUSEGATE-SEALED/1 <key id: 16 hex>\\n<Fernet token>

* the **key** is :func:`clausegate.security.credentials.at_rest_key` (env ``CLAUSEGATE_AT_REST_KEY``, else
  the 0600 file ``at-rest.key`` in ``CLAUSEGATE_SECRETS_DIR``, created on first use by a writer);
* the **key id** is a one-way fingerprint of the key (sha256 of a label + the key, first 16 hex).  It
  tells "encrypted with another key" (``CG-AT-REST-KEY``) apart from "damaged" (``CG-AT-REST-CORRUPT``)
  and reveals nothing about the key;
* **Fernet** (AES-128-CBC + HMAC-SHA256, from ``cryptography``) authenticates what it decrypts: a
  wrong key or a modified file is an error, never garbage.

A plain PDF never starts with the header (a PDF starts with ``%PDF-``), so readers tell sealed
uploads from plain files by its first bytes: ``clausegate review FILE`` on a plain PDF still works.

:class:`SealedSerializer` (Prefect result serializer type ``clausegate-fernet``) wraps the pickle or
JSON serializer the tasks used before.  Any process that *reads* such a result (worker, gateway,
CLI) must have imported this module (it registers the type) and hold the same key.

Key mismatch policy: a **hard error**, not a cache miss.  Prefect treats a result record it cannot
load as absent (its cache lookup swallows the error and recomputes), which would silently re-pay
model calls and let two workers with different keys overwrite each other's records forever.  So the
first step of every review checks a small key-check file in the result storage
(:func:`check_result_key`) and stops the review with ``CG-AT-REST-KEY`` before any cached step runs;
reading a sealed upload or a sealed run result with another key raises the same code.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import tempfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from cryptography.fernet import Fernet, InvalidToken
from prefect._internal.schemas.validators import cast_type_names_to_serializers
from prefect.filesystems import LocalFileSystem
from prefect.results import get_result_store
from prefect.serializers import JSONSerializer, PickleSerializer, Serializer
from prefect.settings import get_current_settings
from pydantic import Field, field_validator

from clausegate.errors import ConfigurationError, DocumentError
from clausegate.review.document import codes
from clausegate.security.credentials import AT_REST_KEY_FILE, at_rest_key, secrets_dir

# Stable codes (runbook: "Contracts at rest")
KEY_MISMATCH = "CG-AT-REST-KEY"
CORRUPT = "CG-AT-REST-CORRUPT"

HEADER = b"CLAUSEGATE-SEALED/1 "
_KEY_ID_LEN = 16
_PREFIX_LEN = len(HEADER) + _KEY_ID_LEN + 1  # header + key id + "\n"
KEY_CHECK_FILE = ".clausegate-at-rest-check"  # in the result storage folder; never expires
_KEY_CHECK_PLAINTEXT = b"clausegate at-rest key check v1"

KEY_HINT = ("restore the key that encrypted it on every worker, the gateway and the CLI (environment "
            "CLAUSEGATE_AT_REST_KEY, or the file at-rest.key in the secrets folder CLAUSEGATE_SECRETS_DIR, "
            "default ~/.config/clausegate); if that key is lost, clear the result storage (PREFECT_HOME/storage: "
            "cached steps are recomputed, reviews of finished tasks are gone) and resubmit the affected uploads "
            "(runbook: 'Contracts at rest')")


class AtRestKeyError(ConfigurationError):
    """Sealed data was encrypted with another at-rest key (or no key is configured): permanent."""

    code = KEY_MISMATCH


class AtRestCorrupt(ConfigurationError):
    """Sealed data does not decrypt with the key that wrote it: truncated or modified on disk."""

    code = CORRUPT


# ---------------------------------------------------------------------------------------------
# key and format
# ---------------------------------------------------------------------------------------------
def key_id(key: str) -> str:
    return hashlib.sha256(b"clausegate-at-rest-key-id\0" + key.encode("ascii")).hexdigest()[:_KEY_ID_LEN]


def current_key_id() -> str | None:
    """The key id of this process's at-rest key (None: no key yet); compare it across machines."""
    key = _key(create=False)
    return key_id(key) if key else None


# Every seal/unseal needs the key: reading it through ``settings()`` (all CLAUSEGATE_* variables) and the file
# cost a review ~10 reads.  So the key is kept per process, and checked cheaply before each use: the variables
# that choose it are unchanged and the key file is the same file (inode, size, mtime, mode), so a rotated or
# replaced key, or a key file opened up to other users (refused on read), is read again at once.
_KEY_ENV = ("CLAUSEGATE_AT_REST_KEY", "CLAUSEGATE_SECRETS_DIR", "XDG_CONFIG_HOME", "HOME")
_key_memo: tuple[tuple, Path | None, tuple | None, str] | None = None  # (variables, key file, its stamp, key)


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_mode


def _key(create: bool) -> str | None:
    global _key_memo
    variables = tuple(os.environ.get(name) for name in _KEY_ENV)
    memo = _key_memo
    if memo is not None and memo[0] == variables and (memo[1] is None or _stamp(memo[1]) == memo[2]):
        return memo[3]
    explicit = bool(variables[0])  # empty: ignored, as Settings does
    path = None if explicit else secrets_dir() / AT_REST_KEY_FILE
    before = None if path is None else _stamp(path)
    key = at_rest_key(create=create)
    if key is not None:
        stamp = None if path is None else (before if before is not None else _stamp(path))
        if path is None or (stamp is not None and _stamp(path) == stamp):  # not replaced while it was read
            _key_memo = (variables, path, stamp, key)
    return key


@lru_cache(maxsize=4)
def _fernet(key: str):
    try:
        return Fernet(key.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raise ConfigurationError(
            "the at-rest key is not a valid Fernet key (32 url-safe base64-encoded bytes)",
            hint="fix CLAUSEGATE_AT_REST_KEY (generate one with `python -c \"from cryptography.fernet import "
                 "Fernet; print(Fernet.generate_key().decode())\"`) or remove it to use the key file",
            code=KEY_MISMATCH) from None


def is_sealed(blob: bytes) -> bool:
    return blob[: len(HEADER)] == HEADER


def sealed_size(plain_size: int) -> int:
    """The exact size of ``seal(data)`` for ``len(data) == plain_size`` (Fernet's padding is fixed)."""
    raw = 1 + 8 + 16 + (plain_size // 16 + 1) * 16 + 32  # version, time, IV, AES-CBC blocks, HMAC
    return _PREFIX_LEN + 4 * math.ceil(raw / 3)


def seal(data: bytes) -> bytes:
    """Encrypt ``data`` with the at-rest key (created on first use)."""
    key = _key(create=True)
    return HEADER + key_id(key).encode("ascii") + b"\n" + _fernet(key).encrypt(data)


def sealed_key_id(blob: bytes) -> str | None:
    if not is_sealed(blob) or len(blob) < _PREFIX_LEN:
        return None
    return blob[len(HEADER): len(HEADER) + _KEY_ID_LEN].decode("ascii", "replace")


def unseal(blob: bytes, *, what: str) -> bytes:
    """Decrypt a sealed blob; a plain one is returned as it is.  ``what`` names it in errors."""
    if not is_sealed(blob):
        return blob
    stored = sealed_key_id(blob)
    if stored is None or blob[_PREFIX_LEN - 1: _PREFIX_LEN] != b"\n":
        raise AtRestCorrupt(f"{what} is damaged (its encryption header is cut off)",
                            hint="restore it from a backup or resubmit the contract")
    key = _key(create=False)
    if key is None:
        raise AtRestKeyError(f"{what} is encrypted (at-rest key id {stored}), but no at-rest key is configured "
                             "in this process", hint=KEY_HINT)
    current = key_id(key)
    if current != stored:
        raise AtRestKeyError(f"{what} was encrypted with another at-rest key (key id {stored}; this process has "
                             f"key id {current})", hint=KEY_HINT)
    try:
        return _fernet(key).decrypt(blob[_PREFIX_LEN:])
    except InvalidToken:
        raise AtRestCorrupt(f"{what} does not decrypt with the key that encrypted it (key id {stored}): it was "
                            "truncated or modified on disk", hint="restore it from a backup or resubmit the contract; "
                            "for a persisted result, delete the record (the step is recomputed)") from None


# ---------------------------------------------------------------------------------------------
# Prefect result serializer
# ---------------------------------------------------------------------------------------------
class SealedSerializer(Serializer):
    """Prefect result serializer ``clausegate-fernet``: the wrapped serializer's bytes, sealed."""

    type: str = Field(default="clausegate-fernet", frozen=True)
    serializer: Serializer = Field(default_factory=PickleSerializer)
    what: ClassVar[str] = "a persisted Prefect result (a cached review step or a run's review)"

    @field_validator("serializer", mode="before")
    @classmethod
    def _cast(cls, value: Any) -> Any:
        return cast_type_names_to_serializers(value)

    def dumps(self, obj: Any) -> bytes:
        return seal(self.serializer.dumps(obj))

    def loads(self, blob: bytes) -> Any:
        if not is_sealed(blob):
            raise AtRestCorrupt(f"{self.what} is marked encrypted but is not",
                                hint="delete the record (the step is recomputed)")
        return self.serializer.loads(unseal(blob, what=self.what))


#: The tasks' results (pickled, as before) and the contract-review run's review (JSON, as before).
SEALED_PICKLE = SealedSerializer(serializer=PickleSerializer())
SEALED_JSON = SealedSerializer(serializer=JSONSerializer())


# ---------------------------------------------------------------------------------------------
# key check against the result storage
# ---------------------------------------------------------------------------------------------
def result_storage_dir() -> Path | None:
    """The local folder Prefect persists results to in this context (None: not a local folder)."""
    try:
        storage = get_result_store().result_storage
    except Exception:  # outside a run context / no server default: the local setting
        storage = None
    if storage is None:
        return Path(get_current_settings().results.local_storage_path).expanduser()
    if isinstance(storage, LocalFileSystem):
        return Path(storage.basepath or ".").expanduser()
    return None


def check_result_key(storage: Path | None = None) -> None:
    """Stop with ``CG-AT-REST-KEY`` when the result storage was sealed with another key.

    The first check writes a small sealed file into the storage folder; every later check must be
    able to decrypt it.  Remote result storage (not a local folder) is not checked here.
    """
    folder = storage if storage is not None else result_storage_dir()
    if folder is None:
        return
    path = folder / KEY_CHECK_FILE
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{KEY_CHECK_FILE}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(seal(_KEY_CHECK_PLAINTEXT))
            try:
                os.link(tmp, path)  # atomic and exclusive: a reader never sees a half-written file
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links: atomic, last writer wins
                os.replace(tmp, path)
                tmp = None
            return
        except FileExistsError:  # another process won the race: check against its file
            blob = path.read_bytes()
        finally:
            if tmp is not None:
                os.unlink(tmp)
    stored = sealed_key_id(blob)
    key = _key(create=False)  # never create a new key next to data sealed with an existing one
    if key is None:
        raise AtRestKeyError(f"persisted results are encrypted (at-rest key id {stored}), but this process has no "
                             "at-rest key; the review stops here instead of recomputing every cached step",
                             hint=KEY_HINT)
    if stored is not None and stored != key_id(key):
        raise AtRestKeyError(
            f"persisted results were encrypted with another at-rest key (key id {stored}; this process has key id "
            f"{key_id(key)}); the review stops here instead of silently recomputing (and re-paying) every cached step",
            hint=KEY_HINT)
    if unseal(blob, what="the result storage's key check file") != _KEY_CHECK_PLAINTEXT:
        raise AtRestCorrupt("the result storage's key check file has unexpected content",
                            hint=f"delete {KEY_CHECK_FILE} in the result storage folder if the key is right")


# ---------------------------------------------------------------------------------------------
# sealed contract files (uploads)
# ---------------------------------------------------------------------------------------------
def write_sealed(path: Path, data: bytes) -> None:
    """Write ``seal(data)`` to ``path`` atomically (temp file in the same folder, fsync, rename), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = seal(data)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_current_sealed_copy(path: Path, plain_size: int) -> bool:
    """``path`` holds a sealed copy of ``plain_size`` bytes, sealed with the current key."""
    try:
        if path.stat().st_size != sealed_size(plain_size):
            return False
        with path.open("rb") as fh:
            head = fh.read(_PREFIX_LEN)
    except OSError:
        return False
    key = _key(create=True)
    return sealed_key_id(head) == key_id(key)


def file_is_sealed(path: str | Path) -> bool:
    try:
        with Path(path).open("rb") as fh:
            return is_sealed(fh.read(len(HEADER)))
    except OSError:  # missing, a folder, unreadable: the PDF reader reports it with its own code
        return False


def read_sealed_file(path: str | Path, *, max_plain_bytes: int) -> bytes:
    """The decrypted bytes of a sealed contract file (refused above ``max_plain_bytes``)."""
    p = Path(path)
    name = p.name
    try:
        size = p.stat().st_size
        if size > sealed_size(max_plain_bytes):
            raise DocumentError(f"'{name}' is over the {max_plain_bytes / 1048576:.1f} MB limit for contract files.",
                                hint="ask the sender for a smaller export or raise the playbook's "
                                     "`steps.parse.max_file_mb`.", code=codes.TOO_LARGE)
        blob = p.read_bytes()
    except OSError as exc:
        raise DocumentError(f"contract file '{name}' cannot be read: {exc.strerror or exc}.",
                            hint="check the file's permissions and that the disk is available, then rerun.",
                            code=codes.UNREADABLE) from exc
    return unseal(blob, what=f"the stored contract '{name}'")


@contextlib.contextmanager
def plaintext_path(path: str | Path, *, max_plain_bytes: int) -> Iterator[Path | None]:
    """For a sealed contract file: a path to its decrypted bytes, valid inside the ``with``; else None.

    Linux: an anonymous in-memory file (``memfd_create``), opened by path as ``/proc/self/fd/N``,
    so the plaintext never reaches a disk.  Elsewhere: a 0600 file in a private temporary folder,
    deleted on exit.
    """
    if not file_is_sealed(path):
        yield None
        return
    data = read_sealed_file(path, max_plain_bytes=max_plain_bytes)
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        fd = os.memfd_create("clausegate-contract", getattr(os, "MFD_CLOEXEC", 0))
        try:
            _write_all(fd, data)
            yield Path(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="clausegate-contract-") as folder:
        os.chmod(folder, 0o700)
        target = Path(folder) / Path(path).name
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        yield target


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
