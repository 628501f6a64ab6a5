"""clausegate.review.document.sandbox on real files: every error code, the sandbox (timeout, memory cap, crashes),
OCR plumbing, the shipped samples and (when ../shared is present) real CUAD PDFs."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pypdf import PdfReader

from clausegate.errors import ConfigurationError, DocumentError
from clausegate.review.document import child, codes, sandbox
from clausegate.review.document.sandbox import fingerprint, parse_pdf
from clausegate.review.document.worker import normalise_text
from clausegate.review.schemas import ParsedDocument
from tests.support import pdf_factory as factory

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
CUAD_DIR = Path(os.environ.get("CLAUSEGATE_CUAD_DIR", ROOT.parent / "shared" / "data" / "cuad"))


def parse(path: Path, **kwargs) -> ParsedDocument:
    return parse_pdf(fingerprint(path), **kwargs)


def expect_error(path: Path, code: str, **kwargs) -> DocumentError:
    with pytest.raises(DocumentError) as info:
        parse(path, **kwargs)
    error = info.value
    assert error.code == code, str(error)
    assert error.message and error.hint, "every error says what failed and what to do"
    assert path.name in error.message, "the message names the file"
    assert str(error).startswith(f"[{code}]") and "Next step:" in str(error)
    return error


def _script(path: Path, body: str) -> Path:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def fake_tesseract(monkeypatch, tmp_path):
    """A `tesseract` on PATH that 'recognises' a fixed line and logs each call."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    calls = tmp_path / "tesseract-calls.log"
    _script(bin_dir / "tesseract", f"""#!/bin/sh
# usage: tesseract <image> stdout
test -s "$1" || {{ echo "cannot read image $1" >&2; exit 1; }}
echo "$1" >> "{calls}"
echo "GOVERNING LAW This Agreement is governed by the laws of Delaware."
""")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return calls


# --------------------------------------------------------------------------------- fingerprint
def test_fingerprint_hashes_the_bytes(tmp_path):
    path = factory.make_text_pdf(tmp_path / "Master Services Agreement (v2).pdf", ["Hello"])
    source = fingerprint(path)
    data = path.read_bytes()
    assert source.contract_id == hashlib.sha256(data).hexdigest()
    assert source.size_bytes == len(data)
    assert source.filename == "Master Services Agreement (v2).pdf"
    assert Path(source.path).is_absolute() and Path(source.path) == path.absolute()
    assert fingerprint(str(path)) == source


def test_fingerprint_missing_file(tmp_path):
    with pytest.raises(DocumentError) as info:
        fingerprint(tmp_path / "nope.pdf")
    assert info.value.code == "CG-PDF-NOT-FOUND"
    assert "nope.pdf" in info.value.message and "does not exist" in info.value.message
    assert "check the path" in info.value.hint


def test_fingerprint_folder_is_not_a_file(tmp_path):
    with pytest.raises(DocumentError) as info:
        fingerprint(tmp_path)
    assert info.value.code == "CG-PDF-NOT-FOUND" and "folder" in info.value.message


def test_fingerprint_refuses_files_over_the_size_cap(tmp_path):
    path = factory.make_huge_text_pdf(tmp_path / "big.pdf", pages=3)
    with pytest.raises(DocumentError) as info:
        fingerprint(path, max_bytes=1000)
    error = info.value
    assert error.code == "CG-PDF-TOO-LARGE"
    assert "MB" in error.message and "limit" in error.message
    assert "max_file_mb" in error.hint
    assert codes.DEFAULT_MAX_FILE_BYTES == 50 * 1024 * 1024
    assert fingerprint(path).size_bytes > 1000  # the default cap accepts it


def test_fingerprint_unreadable_file(tmp_path, monkeypatch):
    path = factory.make_text_pdf(tmp_path / "locked.pdf", ["x"])
    path.chmod(0)
    if os.geteuid() == 0:  # root reads anything: simulate the denial instead
        def deny(self, *args, **kwargs):
            raise PermissionError(13, "Permission denied", str(self))

        monkeypatch.setattr(Path, "open", deny)
    with pytest.raises(DocumentError) as info:
        fingerprint(path)
    assert info.value.code == "CG-PDF-UNREADABLE"
    assert "Permission denied" in info.value.message and "permission" in info.value.hint


def test_fingerprint_refuses_a_pipe(tmp_path):
    fifo = tmp_path / "contract.pdf"
    os.mkfifo(fifo)
    with pytest.raises(DocumentError) as info:
        fingerprint(fifo)  # must not block reading the pipe
    assert info.value.code == "CG-PDF-NOT-FOUND" and "not a regular file" in info.value.message


def test_worker_gets_no_secrets(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    env = child.worker_env()
    assert "ANTHROPIC_API_KEY" not in env and "SLACK_BOT_TOKEN" not in env
    assert env["OMP_THREAD_LIMIT"] == "1"


# --------------------------------------------------------------------------------- happy paths
def test_parse_multi_page_text_pdf(tmp_path):
    texts = ["MASTER AGREEMENT\nPayment is due within 30 days.", "Liability is capped at EUR 1,000,000.",
             "Governing law: the laws of England and Wales; fees €100 “net”."]
    path = factory.make_text_pdf(tmp_path / "contract.pdf", texts)
    doc = parse(path)
    assert doc.contract_id == hashlib.sha256(path.read_bytes()).hexdigest()
    assert doc.filename == "contract.pdf"
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert "Payment is due within 30 days." in doc.pages[0].text
    assert "\n" in doc.pages[0].text, "line breaks are kept"
    assert "capped at EUR 1,000,000" in doc.pages[1].text
    assert "€100 “net”" in doc.pages[2].text
    assert not any(p.needs_ocr or p.ocr_used for p in doc.pages)
    assert doc.notices == []
    assert doc.char_count == sum(len(p.text) for p in doc.pages)


def test_magic_bytes_not_extension_decide(tmp_path):
    original = factory.make_text_pdf(tmp_path / "a.pdf", ["Renamed contract"])
    renamed = tmp_path / "contract.docx"
    original.rename(renamed)
    assert "Renamed contract" in parse(renamed).pages[0].text


def test_normalise_text_is_light():
    assert normalise_text("a\x00b\r\nc\rd\te\x07f\ud800g") == "ab\nc\nd\te f\ufffdg"


# --------------------------------------------------------------------------------- input errors
@pytest.mark.parametrize(
    ("kind", "looks_like"),
    [("png", "PNG image"), ("text", "plain text"), ("docx", "ZIP archive"), ("html", "HTML page"),
     ("empty", "empty file")],
)
def test_not_a_pdf(tmp_path, kind, looks_like):
    path = factory.make_not_pdf(tmp_path / f"contract-{kind}.pdf", kind)
    error = expect_error(path, "CG-PDF-NOT-PDF")
    assert looks_like in error.message and "%PDF-" in error.message
    assert "PDF" in error.hint or "download" in error.hint


def test_truncated_pdf_is_corrupt(tmp_path):
    path = factory.make_truncated_pdf(tmp_path / "half.pdf")
    error = expect_error(path, "CG-PDF-CORRUPT")
    assert "damaged or truncated" in error.message
    assert "again" in error.hint


@pytest.mark.parametrize("algorithm", ["AES-256", "RC4-128"])
def test_password_protected_pdf(tmp_path, algorithm):
    path = factory.make_encrypted_pdf(tmp_path / "locked.pdf", algorithm=algorithm)
    error = expect_error(path, "CG-PDF-ENCRYPTED")
    assert "password" in error.message
    assert "unprotected copy" in error.hint


def test_empty_user_password_is_decrypted_with_a_notice(tmp_path):
    path = factory.make_empty_password_pdf(tmp_path / "owner-only.pdf", ["Fees are payable quarterly."])
    doc = parse(path)
    assert "Fees are payable quarterly." in doc.pages[0].text
    assert [n.code for n in doc.notices] == ["CG-PDF-DECRYPTED-EMPTY-PASSWORD"]
    assert "empty password" in doc.notices[0].message


def test_aes_without_cryptography_says_what_to_install(tmp_path, monkeypatch):
    """Run the real worker with `cryptography` made unimportable (pypdf then falls back to RC4 only)."""
    wrapper = _script(tmp_path / "python-without-cryptography", f"""#!{sys.executable} -I
import sys
sys.modules["cryptography"] = None  # any import of it now fails
code = sys.argv[sys.argv.index("-c") + 1]  # called as: <python> -I -c <boot code> <args...>
sys.argv = ["-c", *sys.argv[sys.argv.index("-c") + 2:]]
exec(code)
""")
    monkeypatch.setattr(sys, "executable", str(wrapper))
    path = factory.make_empty_password_pdf(tmp_path / "aes.pdf", algorithm="AES-256")
    error = expect_error(path, "CG-PDF-CRYPTO-MISSING")
    assert "cryptography" in error.message
    assert "pip install cryptography" in error.hint


def test_zero_page_pdf(tmp_path):
    path = factory.make_zero_page_pdf(tmp_path / "nothing.pdf")
    assert len(PdfReader(path).pages) == 0  # the factory really builds a 0-page PDF pypdf can open
    error = expect_error(path, "CG-PDF-EMPTY")
    assert "no pages" in error.message


def test_too_much_text(tmp_path):
    path = factory.make_huge_text_pdf(tmp_path / "tome.pdf", pages=10, chars_per_page=3000)
    error = expect_error(path, "CG-PDF-TOO-MUCH-TEXT", max_chars=10_000)
    assert "10,000" in error.message, "the limit is stated"
    assert re.search(r"over [\d,]+ by page \d+ of 10", error.message), "the size found is stated"
    assert "steps.parse.max_chars" in error.hint
    assert parse(path, max_chars=100_000).char_count > 10_000  # a higher limit lets it through


# --------------------------------------------------------------------------------- no text layer / OCR
def test_image_only_pdf_without_tesseract_is_no_text(tmp_path, no_tesseract):
    path = factory.make_image_pdf(tmp_path / "scan.pdf", pages=2)
    error = expect_error(path, "CG-PDF-NO-TEXT")
    assert "none of the PDF's 2 pages has a text layer" in error.message
    assert "tesseract" in error.message
    assert "apt-get install tesseract-ocr" in error.hint


def test_image_only_pdf_with_ocr_off_is_no_text(tmp_path, fake_tesseract):
    path = factory.make_image_pdf(tmp_path / "scan.pdf", pages=1)
    error = expect_error(path, "CG-PDF-NO-TEXT", ocr="off")
    assert "switched off" in error.message and "steps.parse.ocr" in error.hint
    assert not fake_tesseract.exists(), "ocr='off' never runs tesseract"


def test_page_without_text_layer_gets_a_notice(tmp_path, no_tesseract):
    path = factory.make_mixed_pdf(tmp_path / "mixed.pdf", ["Page one has text.", None, "Page three has text."])
    doc = parse(path)
    assert [(p.number, p.needs_ocr, p.ocr_used) for p in doc.pages] == [
        (1, False, False), (2, True, False), (3, False, False)]
    assert doc.pages[1].text == ""
    assert [(n.code, n.page) for n in doc.notices] == [("CG-PDF-NEEDS-OCR", 2)]
    assert "apt-get install tesseract-ocr" in doc.notices[0].message
    assert "missing from the review" in doc.notices[0].message


def test_ocr_runs_tesseract_on_page_images_and_says_so(tmp_path, fake_tesseract):
    path = factory.make_mixed_pdf(tmp_path / "mixed.pdf", ["Page one has text.", None])
    doc = parse(path)
    page = doc.pages[1]
    assert page.needs_ocr and page.ocr_used
    assert "governed by the laws of Delaware" in page.text
    assert not doc.pages[0].ocr_used
    assert [(n.code, n.page) for n in doc.notices] == [("CG-PDF-OCR-USED", 2)]
    assert "recognition errors" in doc.notices[0].message
    assert len(fake_tesseract.read_text().splitlines()) == 1, "only the page without text is OCR'd"


def test_ocr_failure_is_reported_not_silent(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "tesseract", "#!/bin/sh\necho 'Error opening data file eng.traineddata' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    doc = parse(factory.make_mixed_pdf(tmp_path / "mixed.pdf", ["Text.", None]))
    assert [(n.code, n.page) for n in doc.notices] == [("CG-PDF-NEEDS-OCR", 2)]
    assert "eng.traineddata" in doc.notices[0].message


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="real tesseract not installed")
def test_real_tesseract_reads_the_scanned_page(tmp_path):
    doc = parse(factory.make_image_pdf(tmp_path / "scan.pdf"))
    assert doc.pages[0].ocr_used and "delaware" in doc.pages[0].text.lower()


# --------------------------------------------------------------------------------- sandbox
def test_timeout_kills_the_parser_quickly(tmp_path):
    path = factory.make_slow_pdf(tmp_path / "slow.pdf", operations=300_000)  # ~30 s of pypdf work, 8 KB file
    assert path.stat().st_size < 50_000
    started = time.monotonic()
    error = expect_error(path, "CG-PDF-TIMEOUT", timeout_seconds=1)
    assert time.monotonic() - started < 5
    assert "1 s" in error.message and "timeout_seconds" in error.hint


def test_memory_cap_stops_a_memory_hungry_pdf(tmp_path):
    path = factory.make_memory_hungry_pdf(tmp_path / "bomb.pdf", megabytes=15)
    assert path.stat().st_size < 100_000
    started = time.monotonic()
    error = expect_error(path, "CG-PDF-TOO-COMPLEX", memory_mb=200, max_chars=10**9, timeout_seconds=60)
    assert time.monotonic() - started < 30
    assert "200 MB" in error.message and "memory_mb" in error.hint


# The one-shot worker's boot, and its peak RSS (VmHWM: per process image, so not the parent's) on stderr at exit.
_MEASURED_BOOT = child.ONE_SHOT_BOOT.replace(
    "sys.exit(_worker_main(sys.argv[2:]))",
    "import os\ntry:\n    _worker_main(sys.argv[2:])\nfinally:\n"
    "    os.write(2, open('/proc/self/status', 'rb').read())")


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads the worker's peak RSS from /proc")
def test_a_flate_bomb_is_refused_before_any_reader_inflates_it(tmp_path):
    bomb = factory.make_flate_bomb_pdf(tmp_path / "bomb.pdf", megabytes=2048)  # 2 MB file, 2 GB inflated
    assert bomb.stat().st_size < 3 * 1024 * 1024
    options = {"memory_mb": 1024, "timeout": 60, "max_chars": 500_000, "ocr": "off", "extractor": "pdfium"}
    done = subprocess.run([sys.executable, "-I", "-c", _MEASURED_BOOT, child.PACKAGE_PARENT, json.dumps(options)],
                          input=bomb.read_bytes(), capture_output=True, timeout=120, env=child.worker_env())
    status = dict(line.split(":", 1) for line in done.stderr.decode("utf-8", "replace").splitlines() if ":" in line)
    assert done.returncode == 0 and "VmHWM" in status, (done.returncode, done.stderr[-500:])
    peak_mb = int(status["VmHWM"].split()[0]) / 1024
    print(f"2 GB flate bomb, 1024 MB cap: parse worker peak RSS {peak_mb:.0f} MB")
    result = json.loads(done.stdout)
    assert result["code"] == "CG-PDF-TOO-COMPLEX" and "inflate to more than 16 MB" in result["message"], result
    assert peak_mb < 300, f"the parse worker peaked at {peak_mb:.0f} MB"
    # The product path (the parse pool) says the same.
    error = expect_error(bomb, "CG-PDF-TOO-COMPLEX", timeout_seconds=60)
    assert "inflate to more than 16 MB" in error.message


@pytest.mark.parametrize(
    "objects",
    [
        ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"],  # page tree cycle
        ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
         "<< /Type /Page /Parent 2 0 R /Foo " + "[" * 100_000 + "]" * 100_000 + " >>"],  # absurd nesting
    ],
    ids=["page-tree-cycle", "deep-nesting"],
)
def test_hostile_structures_fail_cleanly(tmp_path, objects):
    path = tmp_path / "hostile.pdf"
    path.write_bytes(factory.minimal_pdf(objects))
    with pytest.raises(DocumentError) as info:
        parse(path, timeout_seconds=20)
    assert info.value.code in {"CG-PDF-CORRUPT", "CG-PDF-TOO-COMPLEX"}


@pytest.mark.parametrize(
    ("body", "code"),
    [("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "CG-PDF-TOO-COMPLEX"),  # e.g. the OOM killer
     ("import sys; sys.stderr.write('ImportError: no module pypdf'); sys.exit(3)", "CG-PDF-WORKER-FAILED"),
     ("print('not json')", "CG-PDF-WORKER-FAILED")],
    ids=["killed", "exit-3", "garbage-output"],
)
def test_worker_crashes_become_coded_errors(tmp_path, monkeypatch, body, code):
    fake = _script(tmp_path / "fake-python", f"#!{sys.executable} -I\n{body}\n")
    monkeypatch.setattr(sys, "executable", str(fake))
    error = expect_error(factory.make_text_pdf(tmp_path / "fine.pdf", ["ok"]), code)
    assert error.transient is (code == "CG-PDF-WORKER-FAILED")


def test_changed_file_is_refused(tmp_path):
    path = factory.make_text_pdf(tmp_path / "contract.pdf", ["Original terms."])
    source = fingerprint(path)
    factory.make_text_pdf(path, ["Edited terms, a different length."])
    with pytest.raises(DocumentError) as info:
        parse_pdf(source)
    assert info.value.code == "CG-PDF-CHANGED"
    assert "changed since it was fingerprinted" in info.value.message and "fingerprint" in info.value.hint

    # same size, one byte different: only the hash can tell
    data = bytearray(path.read_bytes())
    source = fingerprint(path)
    data[-10] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(DocumentError) as info:
        parse_pdf(source)
    assert info.value.code == "CG-PDF-CHANGED"


def test_file_deleted_after_fingerprint(tmp_path):
    path = factory.make_text_pdf(tmp_path / "gone.pdf", ["x"])
    source = fingerprint(path)
    path.unlink()
    with pytest.raises(DocumentError) as info:
        parse_pdf(source)
    assert info.value.code == "CG-PDF-NOT-FOUND"


@pytest.mark.parametrize("kwargs", [{"ocr": "always"}, {"max_chars": 0}, {"timeout_seconds": 0}, {"memory_mb": 64}])
def test_bad_settings_are_configuration_errors(tmp_path, kwargs):
    with pytest.raises(ConfigurationError):
        parse(factory.make_text_pdf(tmp_path / "a.pdf", ["x"]), **kwargs)


def test_errors_keep_code_and_hint_through_pickle():
    for error in (DocumentError("m", hint="h", code="CG-PDF-CORRUPT"), sandbox.PdfWorkerError("m", hint="h")):
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), copy.code, copy.hint, copy.transient) == (type(error), error.code, "h", error.transient)
    assert sandbox.PdfWorkerError("m").transient and not DocumentError("m").transient
    assert len(set(codes.ERROR_CODES)) == len(codes.ERROR_CODES)


# --------------------------------------------------------------------------------- real contracts
SAMPLE_PAGES = {
    "leadersonline-co-branding-2000.pdf": 10,
    "beyondcom-co-hosting-2000.pdf": 12,
    "healthcare-integrated-reseller-2019.pdf": 5,
}


@pytest.mark.parametrize(("name", "pages"), sorted(SAMPLE_PAGES.items()))
def test_samples_parse(name, pages):
    path = SAMPLES / name
    assert path.stat().st_size < 1_000_000
    doc = parse(path)
    assert len(doc.pages) == pages
    assert all(p.text.strip() and not p.needs_ocr for p in doc.pages)
    assert doc.notices == []
    assert name in (SAMPLES / "README.md").read_text(encoding="utf-8")


@pytest.mark.skipif(not (CUAD_DIR / "manifest.json").is_file(), reason="CUAD data (../shared/data/cuad) not present")
def test_cuad_pdf_pages_match_the_labels():
    """A real CUAD PDF (name with spaces and '&'): labelled spans are found on the page CUAD's labels name."""
    manifest = json.loads((CUAD_DIR / "manifest.json").read_text(encoding="utf-8"))
    wanted = "Monsanto Company - SECOND A&R EXCLUSIVE AGENCY AND MARKETING AGREEMENT .PDF"
    entry = next((e for e in manifest if e["filename"] == wanted), manifest[0])
    path = CUAD_DIR / entry["pdf"]
    doc = parse(path, timeout_seconds=180)  # 88 pages: ~7 s of pypdf work on an idle machine
    reader_pages = len(PdfReader(path).pages)
    assert len(doc.pages) == reader_pages > 0
    assert doc.filename == path.name

    def squash(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip()
    spans = []
    with (CUAD_DIR / "annotations.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["contract"] == entry["filename"] and row.get("pdf_page") and len(row["text"]) >= 20:
                spans.append(row)
    assert spans
    found = 0
    for row in spans:
        first, last = row["pdf_page"], row.get("pdf_page_end") or row["pdf_page"]
        page_text = squash(" ".join(doc.pages[n - 1].text for n in range(first, last + 1)))
        found += squash(row["text"])[:60] in page_text
    assert found / len(spans) >= 0.9, f"only {found}/{len(spans)} labelled spans found on their pages"
