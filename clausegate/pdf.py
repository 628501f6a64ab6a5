"""Read a contract PDF into per-page text, treating the file as untrusted input.

Public API
----------
``fingerprint(path, *, max_bytes=50 MB) -> ContractSource``
    Hash the file (sha256 = ``contract_id``); refuse missing, unreadable or too-large files.
``parse_pdf(source, *, max_chars, timeout_seconds, memory_mb, ocr) -> ParsedDocument``
    Re-read the file, check it still has the fingerprinted sha256, and extract each page's text
    with pypdf **in a child process** (``python -I``, minimal environment) that runs under an
    address-space cap (``RLIMIT_AS`` = ``memory_mb``) and a wall-clock timeout, in its own
    process group that is killed on timeout.  A hostile file can therefore cost at most
    ``timeout_seconds`` and ``memory_mb``; it cannot crash or hang the caller.

Every failure is a :class:`~clausegate.errors.DocumentError` whose ``code`` is one of the
``CG-PDF-*`` constants below, with a message (what failed, why) and a hint (what to do).
Soft problems (a page without a text layer, OCR used, an empty password) come back as
:class:`~clausegate.schemas.Notice` entries on the document, never silently.

Text is normalised lightly: NULs removed, CR/CRLF turned into LF, other control characters
(except tab and LF) replaced by a space, lone surrogates replaced by U+FFFD.  Line breaks are
kept; otherwise the text is pypdf's ``extract_text()`` of the page.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from clausegate.errors import ConfigurationError, DocumentError
from clausegate.schemas import ContractSource, Notice, Page, ParsedDocument

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------
# Stable codes (documented in the runbook; never rename)
# ---------------------------------------------------------------------------------------------
NOT_FOUND = "CG-PDF-NOT-FOUND"
UNREADABLE = "CG-PDF-UNREADABLE"
TOO_LARGE = "CG-PDF-TOO-LARGE"
CHANGED = "CG-PDF-CHANGED"
NOT_PDF = "CG-PDF-NOT-PDF"
CORRUPT = "CG-PDF-CORRUPT"
ENCRYPTED = "CG-PDF-ENCRYPTED"
CRYPTO_MISSING = "CG-PDF-CRYPTO-MISSING"
EMPTY = "CG-PDF-EMPTY"
NO_TEXT = "CG-PDF-NO-TEXT"
TOO_MUCH_TEXT = "CG-PDF-TOO-MUCH-TEXT"
TIMEOUT = "CG-PDF-TIMEOUT"
TOO_COMPLEX = "CG-PDF-TOO-COMPLEX"
WORKER_FAILED = "CG-PDF-WORKER-FAILED"

ERROR_CODES = (
    NOT_FOUND, UNREADABLE, TOO_LARGE, CHANGED, NOT_PDF, CORRUPT, ENCRYPTED, CRYPTO_MISSING,
    EMPTY, NO_TEXT, TOO_MUCH_TEXT, TIMEOUT, TOO_COMPLEX, WORKER_FAILED,
)

# Notice codes (warnings attached to a successfully parsed document)
NOTICE_DECRYPTED_EMPTY_PASSWORD = "CG-PDF-DECRYPTED-EMPTY-PASSWORD"
NOTICE_NEEDS_OCR = "CG-PDF-NEEDS-OCR"
NOTICE_OCR_USED = "CG-PDF-OCR-USED"
NOTICE_PAGE_UNREADABLE = "CG-PDF-PAGE-UNREADABLE"

NOTICE_CODES = (NOTICE_DECRYPTED_EMPTY_PASSWORD, NOTICE_NEEDS_OCR, NOTICE_OCR_USED, NOTICE_PAGE_UNREADABLE)

DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_CHARS = 500_000
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MEMORY_MB = 1024
MIN_MEMORY_MB = 128

# Where users raise the limits (named in hints; keep in sync with clausegate/playbook.py).
SETTING_MAX_CHARS = "the playbook's `steps.parse.max_chars`"
SETTING_MAX_FILE = "the playbook's `steps.parse.max_file_mb`"
SETTING_TIMEOUT = "the playbook's `steps.parse.timeout_seconds`"
SETTING_MEMORY = "the playbook's `steps.parse.memory_mb`"
SETTING_OCR = "the playbook's `steps.parse.ocr`"

TESSERACT_INSTALL = "install it with `apt-get install tesseract-ocr` (macOS: `brew install tesseract`)"
OCR_MAX_IMAGES_PER_PAGE = 8
OCR_MAX_SECONDS_PER_IMAGE = 120.0

_MAGIC = b"%PDF-"
_MAGIC_WINDOW = 1024
_EXIT_NO_MEMORY = 86  # the worker's exit status when it ran out of memory and could not report it
_STDERR_TAIL = 2000


class PdfWorkerError(DocumentError):
    """The parser process could not be started or answered garbage: an environment fault, retryable."""

    code = WORKER_FAILED
    transient = True


# ---------------------------------------------------------------------------------------------
# fingerprint
# ---------------------------------------------------------------------------------------------
def fingerprint(path: str | Path, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ContractSource:
    """Hash the contract file: ``contract_id`` = sha256 of its bytes.

    Raises ``CG-PDF-NOT-FOUND`` (missing / not a file), ``CG-PDF-UNREADABLE`` (permissions, I/O)
    or ``CG-PDF-TOO-LARGE`` (more than ``max_bytes``).
    """
    p = Path(path).expanduser()
    st = _stat(p)
    if st.st_size > max_bytes:
        raise _too_large(p.name, st.st_size, max_bytes)
    digest = hashlib.sha256()
    size = 0
    try:
        with p.open("rb") as fh:
            while chunk := fh.read(1024 * 1024):
                size += len(chunk)
                if size > max_bytes:  # the file grew while we read it
                    raise _too_large(p.name, size, max_bytes)
                digest.update(chunk)
    except OSError as exc:
        raise _unreadable(p, exc) from exc
    return ContractSource(path=str(p.absolute()), contract_id=digest.hexdigest(), size_bytes=size, filename=p.name)


def _stat(p: Path) -> os.stat_result:
    try:
        st = p.stat()
    except FileNotFoundError:
        raise DocumentError(
            f"contract file '{p}' does not exist.",
            hint=f"check the path (relative paths are resolved from {Path.cwd()}); "
            "quote paths that contain spaces.",
            code=NOT_FOUND,
        ) from None
    except OSError as exc:
        raise _unreadable(p, exc) from exc
    if stat.S_ISDIR(st.st_mode):
        raise DocumentError(
            f"'{p}' is a folder, not a contract file.",
            hint="pass the path of one PDF file inside it (batch runs take folders, single reviews do not).",
            code=NOT_FOUND,
        )
    if not stat.S_ISREG(st.st_mode):
        raise DocumentError(
            f"'{p}' is not a regular file (a device, pipe or socket).",
            hint="save the contract as a file and pass that file's path.",
            code=NOT_FOUND,
        )
    return st


def _unreadable(p: Path, exc: OSError) -> DocumentError:
    return DocumentError(
        f"contract file '{p}' cannot be read: {exc.strerror or exc}.",
        hint="check the file's permissions (the reviewing user needs read access) and that the disk or "
        "network share is available, then rerun.",
        code=UNREADABLE,
    )


def _too_large(name: str, size: int, limit: int) -> DocumentError:
    return DocumentError(
        f"'{name}' is {size / 1048576:.1f} MB, over the {limit / 1048576:.1f} MB limit for contract files.",
        hint=f"ask the sender for a smaller export (e.g. without scanned images) or raise {SETTING_MAX_FILE}.",
        code=TOO_LARGE,
    )


# ---------------------------------------------------------------------------------------------
# parse_pdf (parent side)
# ---------------------------------------------------------------------------------------------
def parse_pdf(
    source: ContractSource,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    memory_mb: int = DEFAULT_MEMORY_MB,
    ocr: Literal["auto", "off"] = "auto",
) -> ParsedDocument:
    """Extract per-page text from ``source`` in a sandboxed child process.

    Raises :class:`DocumentError` with one of the ``CG-PDF-*`` codes; returns a
    :class:`ParsedDocument` with 1-based pages and notices otherwise.
    """
    if ocr not in ("auto", "off"):
        raise ConfigurationError(f"parse_pdf: ocr must be 'auto' or 'off', not {ocr!r}.", hint=f"fix {SETTING_OCR}.")
    if max_chars <= 0:
        raise ConfigurationError(f"parse_pdf: max_chars must be positive, not {max_chars}.", hint=f"fix {SETTING_MAX_CHARS}.")
    if not timeout_seconds > 0:
        raise ConfigurationError(f"parse_pdf: timeout_seconds must be positive, not {timeout_seconds}.", hint=f"fix {SETTING_TIMEOUT}.")
    if memory_mb < MIN_MEMORY_MB:
        raise ConfigurationError(
            f"parse_pdf: memory_mb={memory_mb} is below the {MIN_MEMORY_MB} MB the parser process needs to start.",
            hint=f"raise {SETTING_MEMORY}.",
        )

    name = source.filename
    data = _read_verified(source)
    check_pdf_magic(name, data)

    tesseract = shutil.which("tesseract") if ocr == "auto" else None
    options = {"max_chars": max_chars, "timeout": float(timeout_seconds), "memory_mb": int(memory_mb),
               "ocr": ocr, "tesseract": tesseract}
    result = _run_worker(name, data, options)

    if not result.get("ok"):
        code = str(result.get("code") or CORRUPT)
        cls = PdfWorkerError if code == WORKER_FAILED else DocumentError
        raise cls(f"'{name}': {result.get('message', 'the PDF could not be parsed.')}", hint=str(result.get("hint", "")), code=code)

    try:
        pages = [Page(**p) for p in result["pages"]]
        notices = [Notice(**n) for n in result["notices"]]
        return ParsedDocument(contract_id=source.contract_id, filename=name, pages=pages, notices=notices)
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise PdfWorkerError(
            f"'{name}': the parser process returned an unexpected result ({type(exc).__name__}: {exc}).",
            hint="this is a ClauseGate bug or a mismatched installation; rerun, and report it with the file if it repeats.",
        ) from exc


def _read_verified(source: ContractSource) -> bytes:
    """The file's bytes, provided they still hash to ``source.contract_id``."""
    p = Path(source.path)
    st = _stat(p)
    changed = DocumentError(
        f"'{source.filename}' changed since it was fingerprinted (expected sha256 {source.contract_id[:12]}…, "
        f"{source.size_bytes} bytes; the file on disk is now different).",
        hint="fingerprint the file again and start a new review; do not edit contracts while a review is running.",
        code=CHANGED,
    )
    if st.st_size != source.size_bytes:
        raise changed
    try:
        with p.open("rb") as fh:
            data = fh.read(source.size_bytes + 1)
    except OSError as exc:
        raise _unreadable(p, exc) from exc
    if len(data) != source.size_bytes or hashlib.sha256(data).hexdigest() != source.contract_id:
        raise changed
    return data


_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x89PNG", "a PNG image", "scan or export the contract to PDF"),
    (b"\xff\xd8\xff", "a JPEG image", "scan or export the contract to PDF"),
    (b"GIF8", "a GIF image", "export the contract to PDF"),
    (b"II*\x00", "a TIFF image", "convert the scan to PDF"),
    (b"MM\x00*", "a TIFF image", "convert the scan to PDF"),
    (b"PK\x03\x04", "a ZIP archive (Word .docx and Excel .xlsx files are ZIP archives)",
     "open it in Word (or LibreOffice) and use File > Save as PDF"),
    (b"\xd0\xcf\x11\xe0", "a legacy Microsoft Office file (.doc/.xls)", "open it and use File > Save as PDF"),
    (b"{\\rtf", "an RTF document", "open it and use File > Save as PDF"),
)


def check_pdf_magic(name: str, data: bytes) -> None:
    if _MAGIC in data[:_MAGIC_WINDOW]:
        return
    if not data:
        what, todo = "an empty file (0 bytes)", "the upload or download probably failed; fetch the PDF again"
    else:
        what, todo = "", ""
        for sig, kind, fix in _SIGNATURES:
            if data.startswith(sig):
                what, todo = kind, fix
                break
        if not what:
            head = data[:_MAGIC_WINDOW].lstrip().lower()
            if head.startswith((b"<!doctype html", b"<html")):
                what, todo = "an HTML page", "the download probably saved an error or login page; download the PDF again"
            else:
                try:
                    data[:_MAGIC_WINDOW].decode("utf-8")
                    what = "plain text"
                except UnicodeDecodeError:
                    what = "unrecognised binary data"
                todo = "export or print the contract to PDF and use that file"
    raise DocumentError(
        f"'{name}' is not a PDF: it looks like {what} (there is no '%PDF-' header in its first "
        f"{_MAGIC_WINDOW} bytes; the content is checked, not the file name's extension).",
        hint=f"{todo}.",
        code=NOT_PDF,
    )


def _run_worker(name: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """Run the sandboxed worker on ``data``; map every way it can end to a result dict."""
    timeout = float(options["timeout"])
    cmd = [sys.executable, "-I", "-c", _WORKER_BOOT, _PACKAGE_PARENT, json.dumps(options)]
    env = _worker_env()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, close_fds=True, env=env,
        )
    except OSError as exc:
        raise PdfWorkerError(
            f"'{name}': the PDF parser process could not be started ({exc}).",
            hint="the machine may be out of processes or memory; retry later.",
        ) from exc
    try:
        try:
            out, err = proc.communicate(input=data, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise DocumentError(
                f"'{name}': parsing stopped after {timeout:g} s, the time cap for one contract "
                "(the PDF is very large or built to be slow to read).",
                hint=f"if the contract is legitimate and long, raise {SETTING_TIMEOUT}; otherwise ask the sender "
                "for a simpler export (e.g. 'print to PDF').",
                code=TIMEOUT,
            ) from None
    finally:
        if proc.returncode is None:  # an exception (e.g. cancellation) interrupted us: leave no child behind
            _kill_group(proc)
            proc.wait()
    elapsed = time.monotonic() - started
    tail = err[-_STDERR_TAIL:].decode("utf-8", "replace")
    if tail.strip():
        log.debug("pdf worker stderr for %s: %s", name, tail)

    if proc.returncode == 0:
        try:
            result = json.loads(out)
            if isinstance(result, dict):
                return result
        except ValueError:
            pass
        return _failure(WORKER_FAILED, f"the PDF parser process returned unreadable output ({len(out)} bytes).",
                        "this is a ClauseGate bug or a broken installation; rerun, and report it if it repeats.")
    rc = proc.returncode
    if rc == -signal.SIGALRM or rc == -getattr(signal, "SIGXCPU", -999):
        return _failure(TIMEOUT, f"parsing stopped after {elapsed:.1f} s, the time cap for one contract.",
                        f"raise {SETTING_TIMEOUT} if the contract is legitimate and long.")
    if rc == _EXIT_NO_MEMORY or rc < 0:
        how = "ran out of memory" if rc == _EXIT_NO_MEMORY else f"was killed by signal {-rc} ({_signame(-rc)})"
        return _failure(
            TOO_COMPLEX,
            f"the PDF parser process {how}: the PDF needs more than the {options['memory_mb']} MB memory cap "
            "or is built to exhaust the parser.",
            f"if the contract is legitimate, raise {SETTING_MEMORY}; otherwise ask the sender for a simpler "
            "export (e.g. 'print to PDF').",
        )
    return _failure(
        WORKER_FAILED,
        f"the PDF parser process failed with exit status {rc}: {_last_line(tail) or 'no error output'}.",
        "check that pypdf is installed in the same environment as ClauseGate; rerun, and report it if it repeats.",
    )


# The worker runs the same clausegate source as the caller (even when clausegate is importable only
# through the caller's sys.path), in isolated mode (-I: no PYTHON* variables, no user site, no cwd).
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
_WORKER_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from clausegate.pdf import _worker_main; sys.exit(_worker_main(sys.argv[2:]))"
)
# The worker handles hostile input: it gets only the variables it needs, never API keys or tokens.
_WORKER_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "HOME", "TESSDATA_PREFIX", "SYSTEMROOT")


def _worker_env() -> dict[str, str]:
    env = {key: os.environ[key] for key in _WORKER_ENV_KEEP if key in os.environ}
    env["OMP_THREAD_LIMIT"] = "1"  # tesseract: one thread, predictable memory
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker and any tesseract it started
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return "unknown"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _failure(code: str, message: str, hint: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message, "hint": hint}


# ---------------------------------------------------------------------------------------------
# Worker (child process side)
# ---------------------------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def normalise_text(text: str) -> str:
    """Light clean-up of extracted text: keeps line breaks, removes what breaks JSON/Markdown/files."""
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub(" ", text)
    return _SURROGATE.sub("\ufffd", text)


class _Stop(Exception):
    """A definitive failure inside the worker, carried to the parent as a result dict."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.result = _failure(code, message, hint)


def _apply_limits(memory_mb: int, timeout: float) -> None:
    try:
        import resource
    except ImportError:  # not POSIX: the parent's timeout is the only guard
        return
    cap = int(memory_mb) * 1024 * 1024
    for limit, value in ((resource.RLIMIT_AS, cap), (resource.RLIMIT_CORE, 0)):
        try:
            soft, hard = resource.getrlimit(limit)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(limit, (value, hard))
        except (ValueError, OSError):
            pass
    # Belt and braces: the worker ends itself shortly after the parent would have killed it,
    # even if the parent died.
    signal.alarm(max(1, math.ceil(timeout) + 5))


def _worker_main(argv: list[str]) -> int:
    options = json.loads(argv[0])
    _apply_limits(options["memory_mb"], options["timeout"])
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but the result may reach the parent's stdout
    try:
        data = sys.stdin.buffer.read()
        result = _extract(data, options)
    except _Stop as stop:
        result = stop.result
    except (MemoryError, RecursionError) as exc:
        result = _too_complex(exc, options.get("memory_mb"))
    try:
        out.write(json.dumps(result).encode("ascii"))
        out.flush()
    except MemoryError:
        os._exit(_EXIT_NO_MEMORY)
    return 0


def _too_complex(exc: BaseException, memory_mb: int | None = None) -> dict[str, Any]:
    cap = f"{memory_mb} MB " if memory_mb else ""
    why = {
        "MemoryError": f"reading it needs more memory than the parser's {cap}memory cap",
        "RecursionError": "its objects are nested too deeply",
    }.get(type(exc).__name__, f"a pypdf safety limit was reached ({exc})")
    return _failure(
        TOO_COMPLEX,
        f"the PDF is too complex to parse safely: {why}.",
        f"if the contract is legitimate, raise {SETTING_MEMORY}; otherwise ask the sender for a simpler export "
        "(e.g. 'print to PDF').",
    )


def _extract(data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    deadline = started + float(options["timeout"])
    max_chars = int(options["max_chars"])

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns a lot about harmless quirks

    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError

    notices: list[dict[str, Any]] = []

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        encrypted = reader.is_encrypted
    except LimitReachedError as exc:
        return _too_complex(exc)
    except DependencyError as exc:
        raise _dependency(exc) from None
    except NotImplementedError as exc:
        raise _Stop(ENCRYPTED, f"the PDF uses an encryption scheme pypdf does not support ({exc}).",
                    "ask the sender for an unprotected copy (no password, no encryption).") from None
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - anything pypdf raises on a broken file means "corrupt"
        raise _corrupt(exc) from None

    if encrypted:
        try:
            outcome = reader.decrypt("")
        except DependencyError as exc:
            raise _dependency(exc) from None
        except NotImplementedError as exc:
            raise _Stop(ENCRYPTED, f"the PDF uses an encryption scheme pypdf does not support ({exc}).",
                        "ask the sender for an unprotected copy (no password, no encryption).") from None
        except (MemoryError, RecursionError):
            raise
        except Exception as exc:  # noqa: BLE001
            raise _corrupt(exc) from None
        if not outcome:  # PasswordType.NOT_DECRYPTED == 0
            raise _Stop(
                ENCRYPTED,
                "the PDF is password-protected (encrypted with a user password), so its text cannot be read.",
                "ask the sender for an unprotected copy (or remove the password yourself and upload that copy).",
            )
        notices.append({
            "code": NOTICE_DECRYPTED_EMPTY_PASSWORD,
            "message": "the PDF is encrypted but opens with an empty password (it only restricts printing/"
                       "editing); it was decrypted and parsed normally.",
            "page": None,
        })

    try:
        page_count = len(reader.pages)
    except LimitReachedError as exc:
        return _too_complex(exc)
    except FileNotDecryptedError:
        raise _Stop(ENCRYPTED, "the PDF is encrypted and could not be decrypted.",
                    "ask the sender for an unprotected copy.") from None
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001
        raise _corrupt(exc) from None
    if page_count == 0:
        raise _Stop(EMPTY, "the PDF has no pages (its page tree is empty), so there is nothing to review.",
                    "check that the right file was sent; ask the sender for the complete contract.")

    tesseract = options.get("tesseract") if options.get("ocr") == "auto" else None
    pages: list[dict[str, Any]] = []
    unreadable = 0
    total = 0
    for number in range(1, page_count + 1):
        entry = {"number": number, "text": "", "needs_ocr": False, "ocr_used": False}
        try:
            page = reader.pages[number - 1]
            text = normalise_text(page.extract_text() or "")
        except LimitReachedError as exc:
            return _too_complex(exc)
        except (MemoryError, RecursionError):
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page should not hide the others
            unreadable += 1
            notices.append({
                "code": NOTICE_PAGE_UNREADABLE,
                "message": f"page {number} could not be read ({_describe(exc)}); its text is missing from the review.",
                "page": number,
            })
            pages.append(entry)
            continue
        if text.strip():
            entry["text"] = text
        else:
            entry["needs_ocr"] = True
            ocr_text, reason = _ocr_page(page, tesseract, options.get("ocr"), deadline)
            if ocr_text:
                entry["text"] = ocr_text
                entry["ocr_used"] = True
                notices.append({
                    "code": NOTICE_OCR_USED,
                    "message": f"page {number} has no text layer; its text was recognised with tesseract OCR "
                               "and may contain recognition errors.",
                    "page": number,
                })
            else:
                notices.append({
                    "code": NOTICE_NEEDS_OCR,
                    "message": f"page {number} has no text layer (a scanned image or a blank page) and was not "
                               f"OCR'd: {reason}. Its content is missing from the review.",
                    "page": number,
                })
        total += len(entry["text"])
        if total > max_chars:
            raise _Stop(
                TOO_MUCH_TEXT,
                f"the PDF has more than {max_chars:,} characters of text (over {total:,} by page {number} of "
                f"{page_count}), above the limit for one contract.",
                f"if this really is one contract, raise {SETTING_MAX_CHARS}; otherwise split the file and "
                "review the parts separately.",
            )
        pages.append(entry)

    if total == 0 or not any(p["text"].strip() for p in pages):
        if unreadable:
            raise _Stop(CORRUPT, f"no page of the PDF could be read as text ({unreadable} of {page_count} "
                                 "failed with errors).",
                        "open the file in a PDF viewer; if it displays, 'print to PDF' a new copy and upload that.")
        if options.get("ocr") != "auto":
            why = f"OCR is switched off ({SETTING_OCR} = 'off')"
            todo = f"set {SETTING_OCR} to 'auto' with tesseract installed, or ask the sender for a text PDF"
        elif not tesseract:
            why = "OCR is unavailable because the `tesseract` program is not installed"
            todo = f"{TESSERACT_INSTALL} and rerun, or ask the sender for a text (not scanned) PDF"
        else:
            why = "OCR found no text either"
            todo = "check the scan quality, or ask the sender for a text (not scanned) PDF"
        which = "the PDF's only page has" if page_count == 1 else f"none of the PDF's {page_count} pages has"
        raise _Stop(NO_TEXT, f"{which} a text layer (a scanned or image-only document) and {why}; "
                             "there is nothing to review.", f"{todo}.")
    return {"ok": True, "pages": pages, "notices": notices}


def _ocr_page(page: Any, tesseract: str | None, ocr: str | None, deadline: float) -> tuple[str, str]:
    """OCR the images embedded in ``page`` with tesseract; return (text, reason-if-no-text)."""
    if ocr != "auto":
        return "", f"OCR is switched off ({SETTING_OCR} = 'off')"
    if not tesseract:
        return "", f"the `tesseract` OCR program is not installed; {TESSERACT_INSTALL} to OCR such pages"
    try:
        images = list(page.images)[:OCR_MAX_IMAGES_PER_PAGE]
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. pypdf needs Pillow to decode images
        return "", f"its images could not be extracted for OCR ({_describe(exc)})"
    if not images:
        return "", "it has no embedded images to OCR (blank, or drawn as vector graphics)"
    texts: list[str] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="clausegate-ocr-") as tmp:
        for index, image in enumerate(images):
            remaining = deadline - time.monotonic() - 0.5
            if remaining <= 1:
                problems.append("the time cap was reached")
                break
            suffix = Path(getattr(image, "name", "") or "image.png").suffix or ".png"
            path = Path(tmp) / f"img{index}{suffix}"
            try:
                path.write_bytes(image.data)
                done = subprocess.run(
                    [tesseract, str(path), "stdout"], capture_output=True,
                    timeout=min(remaining, OCR_MAX_SECONDS_PER_IMAGE), check=False,
                )
            except subprocess.TimeoutExpired:
                problems.append("tesseract timed out")
                continue
            except (MemoryError, RecursionError):
                raise
            except Exception as exc:  # noqa: BLE001
                problems.append(_describe(exc))
                continue
            if done.returncode != 0:
                problems.append(f"tesseract failed: {_last_line(done.stderr.decode('utf-8', 'replace')) or done.returncode}")
                continue
            texts.append(normalise_text(done.stdout.decode("utf-8", "replace")).strip())
    text = "\n".join(t for t in texts if t)
    if text:
        return text, ""
    if problems:
        return "", "OCR failed (" + "; ".join(dict.fromkeys(problems)) + ")"
    return "", f"tesseract found no text in its {len(images)} image(s)"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _corrupt(exc: BaseException) -> _Stop:
    return _Stop(
        CORRUPT,
        f"the PDF is damaged or truncated and cannot be read, even in lenient mode ({_describe(exc)}).",
        "download or export the file again (it may be an incomplete download); if it opens in a PDF viewer, "
        "'print to PDF' a new copy and upload that.",
    )


def _dependency(exc: BaseException) -> _Stop:
    if "cryptography" in str(exc) or "AES" in str(exc):
        return _Stop(
            CRYPTO_MISSING,
            f"the PDF is AES-encrypted and decrypting it needs the `cryptography` package, which is not "
            f"installed ({exc}).",
            "install it in ClauseGate's environment (`pip install cryptography`) and rerun.",
        )
    return _Stop(CORRUPT, f"reading the PDF needs an optional package that is not installed ({exc}).",
                 "install the package named above in ClauseGate's environment and rerun.")


if __name__ == "__main__":  # manual use: python -I -m clausegate.pdf '<options json>' < file.pdf
    sys.exit(_worker_main(sys.argv[1:]))
