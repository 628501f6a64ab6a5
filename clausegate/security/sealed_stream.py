"""Seal a contract while it streams in: the at-rest format of :mod:`clausegate.security.at_rest`, chunk by chunk.

``Fernet.encrypt`` needs the whole plaintext (and makes several copies of it); an upload of 19 MB then costs the
gateway about five times that while it is sealed.  :class:`SealingWriter` writes the same bytes
(``CLAUSEGATE-SEALED/1 <key id>\\n`` + a Fernet token, readable by ``at_rest.unseal``) to a temporary file as the
plaintext arrives: AES-128-CBC and HMAC-SHA256 run incrementally and the token is base64-encoded in 3-byte
multiples, so the memory held is one chunk, whatever the size.  It also hashes the plaintext (the contract id)
and keeps its first bytes (the PDF magic check).
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.hmac import HMAC

from clausegate.security import at_rest

HEAD_BYTES = 1024  # what the PDF magic check reads (clausegate.review.document.sandbox.check_pdf_magic)


class SealingWriter:
    """A sealed temporary file (0600) in ``folder``, written chunk by chunk; :meth:`finish` then ``os.replace`` it.

    ``write`` raises ``too_large`` (an exception instance) once more than ``limit`` plaintext bytes arrived;
    :meth:`abort` (or a failed ``finish``) removes the temporary file.
    """

    def __init__(self, folder: Path, *, limit: int, too_large: Exception) -> None:
        key = at_rest._key(create=True)
        raw = base64.urlsafe_b64decode(key)
        at_rest._fernet(key)  # a malformed key fails here, with its coded error
        signing, encryption = raw[:16], raw[16:]
        iv = os.urandom(16)
        self._encryptor = Cipher(algorithms.AES(encryption), modes.CBC(iv)).encryptor()
        self._padder = padding.PKCS7(algorithms.AES.block_size).padder()
        self._hmac = HMAC(signing, hashes.SHA256())
        self._pending = b""  # token bytes not yet base64-encoded (fewer than 3)
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.head = b""
        self.limit, self.too_large = limit, too_large
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=folder, prefix=".upload-")
        self.path: Path | None = Path(name)
        self._file = os.fdopen(fd, "wb")
        try:
            self._file.write(at_rest.HEADER + at_rest.key_id(key).encode("ascii") + b"\n")
            self._token(b"\x80" + struct.pack(">Q", int(time.time())) + iv)
        except BaseException:
            self.abort()
            raise

    def _token(self, data: bytes, final: bool = False) -> None:
        """Append raw token bytes: MAC them, base64 what fills whole 3-byte groups, keep the rest."""
        if not final:
            self._hmac.update(data)
        data = self._pending + data
        cut = len(data) if final else len(data) - len(data) % 3
        self._pending = data[cut:]
        if cut:
            self._file.write(base64.urlsafe_b64encode(data[:cut]))

    def write(self, chunk: bytes) -> int:
        """Seal and write one chunk of plaintext (a file object's ``write``, for starlette's UploadFile)."""
        self.size += len(chunk)
        if self.size > self.limit:
            self.abort()
            raise self.too_large
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[: HEAD_BYTES - len(self.head)]
        self.sha256.update(chunk)
        self._token(self._encryptor.update(self._padder.update(chunk)))
        return len(chunk)

    def finish(self) -> None:
        """Close the token (padding, HMAC), fsync and close the file; then :meth:`commit` or :meth:`abort`."""
        try:
            self._token(self._encryptor.update(self._padder.finalize()) + self._encryptor.finalize())
            self._token(self._hmac.finalize(), final=True)
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
        except BaseException:
            self.abort()
            raise

    def commit(self, target: Path) -> None:
        """Move the finished file to ``target`` (atomically: same file system)."""
        assert self.path is not None and self._file.closed
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.path, target)
        self.path = None

    def abort(self) -> None:
        """Close and delete the temporary file (idempotent; a no-op once committed)."""
        if not self._file.closed:
            self._file.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None

    # What starlette's UploadFile uses of a file.  Without ``_rolled`` false it counts as on disk: its writes
    # go to a worker thread.  It seeks to 0 when the part ends (nothing is read back); close is abort.
    _rolled = True

    def seek(self, offset: int) -> int:
        return 0

    def close(self) -> None:
        self.abort()
