"""The sandboxed side of :func:`clausegate.review.document.sandbox.parse_pdf`: runs as ``python -I -c <boot>``
in a child process under an address-space cap and an alarm, reads the PDF's bytes on stdin and writes one JSON
result on stdout (``{"ok": true, "pages": [...], "notices": [...]}`` or a failure with a ``CG-PDF-*`` code,
message and hint).  The parent never imports it (it loads pypdf and PDFium).

pypdf opens, decrypts and checks the file.  Per page: the text without hidden text
(:func:`clausegate.review.document.text.page_text`: PDFium's text of a page without hidden text, else pypdf's;
hidden text is reported as ``CG-PDF-HIDDEN-TEXT``), then its quality
(:mod:`clausegate.review.document.text_quality`): a garbled page is OCR'd when tesseract can read its images, else
reported as ``CG-PDF-GARBLED-TEXT``; a page without text is OCR'd or reported as ``CG-PDF-NEEDS-OCR``.
"""

from __future__ import annotations

import importlib
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError

from clausegate.review.document import inflate_guard, registry, text_quality
from clausegate.review.document.codes import (
    CORRUPT,
    CRYPTO_MISSING,
    EMPTY,
    ENCRYPTED,
    EXIT_NO_MEMORY,
    NO_TEXT,
    NOTICE_DECRYPTED_EMPTY_PASSWORD,
    NOTICE_GARBLED_TEXT,
    NOTICE_HIDDEN_TEXT,
    NOTICE_INTEGRITY_UNCHECKED,
    NOTICE_NEEDS_OCR,
    NOTICE_OCR_USED,
    NOTICE_PAGE_UNREADABLE,
    OCR_MAX_IMAGES_PER_PAGE,
    OCR_MAX_SECONDS_PER_IMAGE,
    SETTING_MAX_CHARS,
    SETTING_MEMORY,
    SETTING_OCR,
    TESSERACT_INSTALL,
    TOO_COMPLEX,
    TOO_MUCH_TEXT,
    failure,
)
from clausegate.review.document.limits import arm, cap_memory
from clausegate.review.document.text import DEFAULT_EXTRACTOR, normalise_text, open_pdfium, page_text


class _Stop(Exception):
    """A definitive failure inside the worker, carried to the parent as a result dict."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.result = failure(code, message, hint)


def _apply_limits(memory_mb: int, timeout: float) -> None:
    cap_memory(memory_mb)
    arm(timeout)


def _worker_main(argv: list[str]) -> int:
    options = json.loads(argv[0])
    _apply_limits(options["memory_mb"], options["timeout"])
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but the result may reach the parent's stdout
    result = answer(sys.stdin.buffer.read(), options)
    try:
        out.write(json.dumps(result).encode("ascii"))
        out.flush()
    except MemoryError:
        os._exit(EXIT_NO_MEMORY)
    return 0


# Work besides parsing a pooled parser process does on the same untrusted file, under the same caps: ``options["job"]``
# names it (the parent chooses; never the file).  Writing the annotated copy reuses the warm process the parse used.
JOBS = {"annotate": ("clausegate.review.annotate.child", "pooled")}


def answer(data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The result dict for one document of ``options["format"]`` (default "pdf"), read by the parser the format
    table names (:mod:`clausegate.review.document.registry`: a .docx by :mod:`clausegate.review.document.docx`, an
    .odt by :mod:`clausegate.review.document.odt`), or a definitive failure; with ``options["job"]``, that job of
    :data:`JOBS` instead of the parse."""
    fmt = str(options.get("format") or "pdf")
    try:
        module, function = JOBS[options["job"]] if options.get("job") else registry.parser(fmt)
        extract = globals()[function] if module == __name__ else getattr(importlib.import_module(module), function)
        return extract(data, options)  # a local import: defusedxml only for the formats that need it
    except _Stop as stop:
        return stop.result
    except (MemoryError, RecursionError) as exc:
        return _too_complex(exc, options.get("memory_mb"), registry.display(fmt))


def _too_complex(exc: BaseException, memory_mb: int | None = None, what: str = "PDF") -> dict[str, Any]:
    cap = f"{memory_mb} MB " if memory_mb else ""
    why = {
        "MemoryError": f"reading it needs more memory than the parser's {cap}memory cap",
        "RecursionError": "its objects are nested too deeply",
    }.get(type(exc).__name__, f"a safety limit was reached ({exc})")
    return failure(
        TOO_COMPLEX,
        f"the {what} is too complex to parse safely: {why}.",
        f"if the contract is legitimate, raise {SETTING_MEMORY}; otherwise ask the sender for a simpler export "
        "(e.g. 'print to PDF').",
    )


def extract_pdf(data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    deadline = started + float(options["timeout"])

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns a lot about harmless quirks

    notices: list[dict[str, Any]] = []

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        encrypted = reader.is_encrypted
    except LimitReachedError as exc:
        return _too_complex(exc)
    except DependencyError as exc:
        raise _dependency(exc) from None
    except NotImplementedError as exc:
        raise _unsupported_encryption(exc) from None
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # anything pypdf raises on a broken file means "corrupt"
        raise _corrupt(exc) from None

    if encrypted:
        try:
            outcome = reader.decrypt("")
        except DependencyError as exc:
            raise _dependency(exc) from None
        except NotImplementedError as exc:
            raise _unsupported_encryption(exc) from None
        except (MemoryError, RecursionError):
            raise
        except Exception as exc:  # anything pypdf raises here means "corrupt"
            raise _corrupt(exc) from None
        if not outcome:  # PasswordType.NOT_DECRYPTED == 0
            raise _Stop(
                ENCRYPTED,
                "the PDF is password-protected (encrypted with a user password), so its text cannot be read.",
                "ask the sender for an unprotected copy (or remove the password yourself and upload that copy).",
            )
        notices.append(_notice(NOTICE_DECRYPTED_EMPTY_PASSWORD, None, "the PDF is encrypted but opens with an empty "
                               "password (it only restricts printing/editing); it was decrypted and parsed normally."))

    try:
        page_count = len(reader.pages)
    except LimitReachedError as exc:
        return _too_complex(exc)
    except FileNotDecryptedError:
        raise _Stop(ENCRYPTED, "the PDF is encrypted and could not be decrypted.",
                    "ask the sender for an unprotected copy.") from None
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # anything pypdf raises here means "corrupt"
        raise _corrupt(exc) from None
    if page_count == 0:
        raise _Stop(EMPTY, "the PDF has no pages (its page tree is empty), so there is nothing to review.",
                    "check that the right file was sent; ask the sender for the complete contract.")

    tesseract = options.get("tesseract") if options.get("ocr") == "auto" else None
    document = open_pdfium(data, options.get("extractor", DEFAULT_EXTRACTOR), page_count)
    try:
        return _read_pages(reader, document, page_count, tesseract, options, deadline, notices)
    except LimitReachedError as exc:
        return _too_complex(exc)
    finally:
        if document is not None:
            document.close()


def _read_pages(reader: Any, document: Any, page_count: int, tesseract: str | None, options: dict[str, Any],
                deadline: float, notices: list[dict[str, Any]]) -> dict[str, Any]:
    max_chars = int(options["max_chars"])
    pages: list[dict[str, Any]] = []
    unreadable = total = 0
    for number in range(1, page_count + 1):
        entry = _read_page(reader, document, number, tesseract, options.get("ocr"), deadline, notices)
        if entry is None:
            unreadable += 1
            pages.append({"number": number, "text": "", "needs_ocr": False, "ocr_used": False})
            continue
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


def _notice(code: str, page: int | None, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "page": page}


def _read_page(reader: Any, document: Any, number: int, tesseract: str | None, ocr: str | None, deadline: float,
               notices: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One page's entry (visible text, OCR'd if needed), its notices appended; None if it cannot be read."""
    entry: dict[str, Any] = {"number": number, "text": "", "needs_ocr": False, "ocr_used": False}
    hidden = None
    try:
        page = reader.pages[number - 1]
        inflate_guard.check_page(page, reader, number)  # before PDFium (which inflates without limits) loads it
        try:
            raw, hidden = page_text(page, reader, number, document)
        except (MemoryError, RecursionError, LimitReachedError):
            raise
        except Exception as exc:  # the check failed, not necessarily the page: read it as before
            raw = page.extract_text() or ""
            notices.append(_notice(NOTICE_INTEGRITY_UNCHECKED, number, f"page {number} could not be checked for "
                                   f"hidden text ({_describe(exc)}); read it in the PDF itself before relying on "
                                   "this review."))
        text = normalise_text(raw)
    except (MemoryError, RecursionError, LimitReachedError):
        raise
    except Exception as exc:  # one bad page should not hide the others
        notices.append(_notice(NOTICE_PAGE_UNREADABLE, number, f"page {number} could not be read ({_describe(exc)}); "
                               "its text is missing from the review."))
        return None
    if hidden is not None:
        chars = len(" ".join(hidden.text.split()))
        notices.append(_notice(NOTICE_HIDDEN_TEXT, number, f"“{hidden.excerpt}” is hidden text on page {number}: "
                               f"{', '.join(hidden.reasons)} ({hidden.pieces} piece(s), {chars} characters). A reader "
                               "of the PDF does not see it; it was left out of the reviewed text. Ask the sender why "
                               "it is there."))
    if not text.strip():
        entry["needs_ocr"] = True
        ocr_text, reason = _ocr_page(page, tesseract, ocr, deadline)
        if ocr_text:
            entry.update(text=ocr_text, ocr_used=True)
            notices.append(_notice(NOTICE_OCR_USED, number, f"page {number} has no text layer; its text was "
                                   "recognised with tesseract OCR and may contain recognition errors."))
        else:
            notices.append(_notice(NOTICE_NEEDS_OCR, number, f"page {number} has no text layer (a scanned image or "
                                   f"a blank page) and was not OCR'd: {reason}. "
                                   "Its content is missing from the review."))
        return entry
    entry["text"] = text
    quality = text_quality.assess(raw)
    if quality.chars < text_quality.MIN_CHARS:
        return entry
    try:
        fonts = text_quality.suspicious_fonts(page)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # font evidence is optional
        fonts = []
    if not text_quality.garbled(quality, fonts):
        return entry
    why = quality.describe() + (f"; fonts without a Unicode map: {', '.join(fonts[:3])}" if fonts else "")
    ocr_text, reason = _ocr_page(page, tesseract, ocr, deadline)
    ocr_quality = text_quality.assess(ocr_text)
    # OCR replaces the layer only if it read the page (not just a logo): readable and about as long.
    if ocr_text and not text_quality.garbled(ocr_quality) and ocr_quality.chars * 2 >= quality.chars:
        entry.update(text=ocr_text, ocr_used=True)
        notices.append(_notice(NOTICE_OCR_USED, number, f"page {number}'s text layer is garbled ({why}); its text "
                               "was recognised with tesseract OCR instead and may contain recognition errors."))
        return entry
    if ocr_text:
        reason = "OCR of its images did not read the page either (no or too little readable text)"
    notices.append(_notice(NOTICE_GARBLED_TEXT, number,
                           f"page {number}'s text does not read as (English) words ({why}): "
                           f"what ClauseGate reviewed is probably not what the page shows, and it was not OCR'd: "
                           f"{reason}. Read the page in the PDF itself before relying on this review."))
    return entry


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
    except Exception as exc:  # e.g. pypdf needs Pillow to decode images
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
            except Exception as exc:  # any failure to run it is one more OCR problem
                problems.append(_describe(exc))
                continue
            if done.returncode != 0:
                stderr = _last_line(done.stderr.decode("utf-8", "replace"))
                problems.append(f"tesseract failed: {stderr or done.returncode}")
                continue
            texts.append(normalise_text(done.stdout.decode("utf-8", "replace")).strip())
    text = "\n".join(t for t in texts if t)
    if text:
        return text, ""
    if problems:
        return "", "OCR failed (" + "; ".join(dict.fromkeys(problems)) + ")"
    return "", f"tesseract found no text in its {len(images)} image(s)"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


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


def _unsupported_encryption(exc: BaseException) -> _Stop:
    return _Stop(ENCRYPTED, f"the PDF uses an encryption scheme pypdf does not support ({exc}).",
                 "ask the sender for an unprotected copy (no password, no encryption).")


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


if __name__ == "__main__":  # manual use: python -I -m clausegate.review.document.worker '<options json>' < file.pdf
    sys.exit(_worker_main(sys.argv[1:]))
