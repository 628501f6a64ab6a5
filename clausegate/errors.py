"""ClauseGate's few, user-facing error types, and the one registry of its ``CG-*`` codes.

Every error carries a stable ``code``, a message that says what failed and why, and a ``hint`` that
says what to do next.  ``transient`` tells retry policies whether trying again can help; permanent
errors never retry.

:data:`CODES` lists every code ClauseGate raises, logs or writes into a state message, report or
notice: what it means and the docs/runbook.md section that says what to do.  A code's constant lives
in one module (its "home", e.g. ``clausegate.review.document.codes``); other modules import it.
tests/unit/test_error_codes.py checks the source, this registry and the runbook's code index agree.
"""

from __future__ import annotations

from typing import NamedTuple


class ClauseGateError(Exception):
    """Base class: ``code`` is stable and documented; ``hint`` is the next step."""

    code: str = "CG-ERROR"
    transient: bool = False

    def __init__(self, message: str, *, hint: str = "", code: str | None = None) -> None:
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        return f"{text} Next step: {self.hint}" if self.hint else text

    def __reduce__(self):  # keep code/hint when pickled into Prefect results
        return (_rebuild, (type(self), self.message, self.hint, self.code))

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


def _rebuild(cls, message, hint, code):
    return cls(message, hint=hint, code=code)


class DocumentError(ClauseGateError):
    """The contract file cannot be read as a usable PDF (permanent: fix the input)."""

    code = "CG-PDF"


class PlaybookError(ClauseGateError):
    """A review playbook is missing or invalid (permanent: fix the YAML)."""

    code = "CG-PLAYBOOK-INVALID"


class StepInputError(ClauseGateError):
    """A step's input lacks a field it depends on: the step stops, nothing downstream runs."""

    code = "CG-STEP-INPUT"

    def __init__(self, step: str, field: str, detail: str) -> None:
        self.step = step
        self.field = field
        self.detail = detail
        super().__init__(
            f"step '{step}' cannot run: input field '{field}' {detail}.",
            hint=f"inspect the output of the step before '{step}'; rerun after fixing it "
            "(finished steps come from cache).",
        )

    def __reduce__(self):
        return (StepInputError, (self.step, self.field, self.detail))


class ConfigurationError(ClauseGateError):
    """A setting, block or provider name is wrong (permanent)."""

    code = "CG-CONFIG"


class ReportWriteError(ClauseGateError):
    """The report could not be written to the output folder."""

    code = "CG-REPORT-WRITE"


class BudgetExceeded(ClauseGateError):
    """A model call would exceed a token or € budget: the step degrades to the offline extractor."""

    code = "CG-BUDGET-EXCEEDED"


class GateError(ClauseGateError):
    """A review that needs a person could not wait for one in a deployed run: the run fails.

    ``CG-GATE-CANNOT-SUSPEND``: Prefect refused to suspend the run (e.g. it was started as a
    subflow); ``CG-GATE-NO-ANSWER``: it was resumed without an answer.  Never a silent
    ``pending_decision``/Completed: a gated contract ends with a decision, ``needs_legal`` or a
    failed/cancelled run (docs/security.md, "A gate cannot be skipped")."""

    code = "CG-GATE-CANNOT-SUSPEND"


# ---------------------------------------------------------------------------------------------- registry
class Code(NamedTuple):
    meaning: str
    section: str  # docs/runbook.md section number ("" = none: the message says what to do)


CODES: dict[str, Code] = {
    # base codes of the error classes (a more specific code is used wherever one exists)
    "CG-ERROR": Code("a ClauseGate error without a more specific code", ""),
    "CG-INTERNAL": Code("a step stopped on an unexpected exception (a bug: report it with the run log)", ""),
    "CG-CONFIG": Code("a setting, block or provider name is wrong (the message names it)", "7"),
    "CG-PLAYBOOK-INVALID": Code("a playbook is missing or invalid (the message names the field)", "14"),
    "CG-STEP-INPUT": Code("a step's input lacks a field it depends on; nothing downstream ran", ""),
    "CG-REPORT-WRITE": Code("the report could not be written to the output folder", ""),
    # the contract file (clausegate/review/document/codes.py)
    "CG-PDF": Code("the contract file cannot be read as a usable PDF", "6"),
    "CG-PDF-NOT-FOUND": Code("the contract file does not exist", "6"),
    "CG-PDF-UNREADABLE": Code("the contract file cannot be read (permissions, I/O error)", "6"),
    "CG-PDF-TOO-LARGE": Code("the file is over steps.parse.max_file_mb", "6"),
    "CG-PDF-CHANGED": Code("the file was replaced while it was being reviewed", "6"),
    "CG-PDF-NOT-PDF": Code("the bytes are not a PDF, .docx or UTF-8 text, whatever the file name says", "6"),
    "CG-PDF-CORRUPT": Code("the PDF is truncated or damaged", "6"),
    "CG-PDF-ENCRYPTED": Code("the PDF needs a password (or an encryption pypdf cannot read)", "6"),
    "CG-PDF-CRYPTO-MISSING": Code("the PDF is AES-encrypted and the cryptography package is missing", "6"),
    "CG-PDF-EMPTY": Code("the PDF has no pages", "6"),
    "CG-PDF-NO-TEXT": Code("no text layer and no OCR (a scan with OCR off or tesseract missing)", "6"),
    "CG-PDF-TOO-MUCH-TEXT": Code("the text is over steps.parse.max_chars", "6"),
    "CG-PDF-TIMEOUT": Code("parsing took longer than steps.parse.timeout_seconds", "6"),
    "CG-PDF-TOO-COMPLEX": Code("the parser process ran out of memory or was killed", "6"),
    "CG-PDF-WORKER-FAILED": Code("the sandboxed parser process could not start (transient)", "6"),
    "CG-PDF-DECRYPTED-EMPTY-PASSWORD": Code("notice: opened with the empty password (restrictions only)", "6"),
    "CG-PDF-NEEDS-OCR": Code("notice: pages without text were skipped (OCR off or unavailable)", "6"),
    "CG-PDF-OCR-USED": Code("notice: pages were read with OCR", "6"),
    "CG-PDF-PAGE-UNREADABLE": Code("notice: a page could not be read and was skipped", "6"),
    "CG-PDF-HIDDEN-TEXT": Code("integrity: text a reader cannot see was left out; a person decides", "6"),
    "CG-PDF-GARBLED-TEXT": Code("integrity: a page's text does not read as words; a person decides", "6"),
    "CG-PDF-INTEGRITY-UNCHECKED": Code("integrity: the hidden-text check failed on a page; a person decides", "6"),
    # Word .docx and plain-text contracts (clausegate/review/document/codes.py; formats.py, docx*.py, plain_text.py)
    "CG-DOCX-MACROS": Code("a macro-enabled Word document (.docm, a VBA project): refused, macros never run", "6"),
    "CG-DOCX-LEGACY-DOC": Code("a legacy binary Word .doc: refused; save it as .docx or PDF", "6"),
    "CG-DOCX-ENCRYPTED": Code("a password-protected .docx: refused; remove the password and resubmit", "6"),
    "CG-ANNOTATE-FAILED": Code("the annotated copy could not be written (its child crashed, hit a cap or timed out); "
                               "the review and its report are complete", "6"),
    "CG-DOCX-ZIP-BOMB": Code("the .docx inflates past the size or ratio caps: refused before reading", "6"),
    "CG-DOCX-XML-UNSAFE": Code("a .docx part declares a DTD or entities (entity expansion): refused", "6"),
    "CG-DOCX-CORRUPT": Code("not a readable .docx (broken ZIP, malformed XML, no main document part)", "6"),
    "CG-DOCX-EMPTY": Code("the .docx body has no text", "6"),
    "CG-DOCX-TOO-MUCH-TEXT": Code("the .docx is over steps.parse.max_chars or 50,000 paragraphs", "6"),
    "CG-DOCX-TIMEOUT": Code("parsing the .docx took longer than steps.parse.timeout_seconds", "6"),
    "CG-DOCX-TOO-COMPLEX": Code("the parser process ran out of memory or was killed on a .docx", "6"),
    "CG-DOCX-HIDDEN-TEXT": Code("integrity: hidden .docx text (vanish, background colour, tiny) left out; a person "
                                "decides", "6"),
    "CG-DOCX-UNREAD-PART": Code("integrity: a part Word shows (an altChunk import) was not read; a person decides",
                                "6"),
    "CG-DOCX-TRACKED-CHANGES": Code("notice: pending tracked changes, reviewed as accepted and listed", "6"),
    "CG-DOCX-COMMENTS": Code("notice: comments in the .docx, listed with their anchored text", "6"),
    "CG-TEXT-EMPTY": Code("a plain-text contract with no text", "6"),
    "CG-TEXT-TOO-MUCH-TEXT": Code("a plain-text contract over steps.parse.max_chars", "6"),
    # OpenDocument .odt contracts (clausegate/review/document/odt.py; the row in registry.py)
    "CG-ODT-ENCRYPTED": Code("a password-protected .odt (manifest encryption-data): refused; remove the password", "6"),
    "CG-ODT-ZIP-BOMB": Code("the .odt inflates past the size or ratio caps: refused before reading", "6"),
    "CG-ODT-XML-UNSAFE": Code("an .odt part declares a DTD or entities (entity expansion): refused", "6"),
    "CG-ODT-CORRUPT": Code("not a readable .odt (broken ZIP, malformed XML, no content.xml, an entry twice)", "6"),
    "CG-ODT-EMPTY": Code("the .odt body has no text", "6"),
    "CG-ODT-TOO-MUCH-TEXT": Code("the .odt is over steps.parse.max_chars or 50,000 paragraphs", "6"),
    "CG-ODT-TIMEOUT": Code("parsing the .odt took longer than steps.parse.timeout_seconds", "6"),
    "CG-ODT-TOO-COMPLEX": Code("the parser process ran out of memory or was killed on an .odt", "6"),
    "CG-ODT-HIDDEN-TEXT": Code("integrity: hidden .odt text (display none, hidden paragraph or section, background "
                               "colour, tiny) left out; a person decides", "6"),
    # model providers (clausegate/providers/errors.py) and the model path (clausegate/pipeline/cascade.py)
    "CG-MODEL": Code("a model provider call failed", "14"),
    "CG-MODEL-RATE-LIMIT": Code("the provider answered 429 (rate limit); retried after Retry-After", "4"),
    "CG-MODEL-QUOTA": Code("the provider account is out of credit or quota; waiting does not help", "4"),
    "CG-MODEL-OVERLOADED": Code("the provider is overloaded (529/503); retried", "4"),
    "CG-MODEL-SERVER": Code("the provider answered a 5xx; retried", "14"),
    "CG-MODEL-TIMEOUT": Code("no answer within the block's read timeout; retried", "14"),
    "CG-MODEL-UNREACHABLE": Code("the provider could not be reached (DNS, connection refused/reset)", "14"),
    "CG-MODEL-CIRCUIT-OPEN": Code("calls to that endpoint are skipped until the circuit breaker's cool-down", "14"),
    "CG-MODEL-CONTEXT-TOO-LONG": Code("the prompt is over the model's context window", "14"),
    "CG-MODEL-AUTH": Code("the provider refused the API key", "14"),
    "CG-MODEL-NOT-FOUND": Code("the provider does not know the model or endpoint", "14"),
    "CG-MODEL-BAD-REQUEST": Code("the provider refused the request as malformed", "14"),
    "CG-MODEL-TRUNCATED": Code("the answer was cut at the output token limit", "14"),
    "CG-MODEL-OUTPUT-LIMIT": Code("the provider refused the output budget (max_tokens); asked again with less", "14"),
    "CG-MODEL-BAD-OUTPUT": Code("the answer is not the JSON asked for, even after one repair call", "14"),
    "CG-MODEL-PARTIAL": Code("a paid model answer was used in part: its complete, valid items are kept", "14"),
    "CG-MODEL-DEGRADED": Code("a model step failed: the review uses the offline result alone", "14"),
    "CG-MODEL-STEP-TIMEOUT": Code("a model step was cut by its Prefect step timeout", "14"),
    "CG-MODEL-STEP-FAILED": Code("a model step failed after its retries", "14"),
    "CG-MODEL-DISPUTED": Code("the model gave no or other text for an offline finding it may not clear; in a gated "
                              "or high-risk category a person decides", "14"),
    "CG-MODEL-CLEARED": Code("notice: the model took a low-confidence finding off the gate, with its reason "
                             "(listed under 'Cleared by the model')", "14"),
    "CG-MODEL-NOT-COUNTED": Code("notice: a model clause the offline reading is far against: listed, not counted",
                                 "14"),
    "CG-TEXT-INSTRUCTIONS": Code("warning: the contract holds text addressed to a model or reviewer; no model answer "
                                 "may clear a gate", "14"),
    "CG-TEXT-LANGUAGE": Code("warning: the contract is not in English; no clause is reported missing and a person "
                             "reviews it (Language gate)", "14"),
    "CG-MODEL-CLAUSE-INVALID": Code("warning: a model clause that is not a valid object was dropped", "14"),
    "CG-MODEL-QUOTE-EMPTY": Code("warning: a model clause with an empty quote was dropped", "14"),
    "CG-MODEL-QUOTE-TOO-SHORT": Code("warning: a model quote under the category's minimum words was dropped", "14"),
    "CG-MODEL-UNGROUNDED": Code("warning: a model clause not found in the prompt's passages was dropped", "14"),
    "CG-MODEL-SUMMARY-PATH": Code("notice: over the context window even shrunk; the model got a key-terms summary",
                                  "14"),
    "CG-BUDGET-EXCEEDED": Code("a model call would exceed a budget: the step used the offline extractor", "7"),
    "CG-GENERATE-SKIPPED": Code("no generation model configured: no redlines suggested", "7"),
    # human gates and Slack (clausegate/gates/, clausegate/slack.py, clausegate/ops/alerts.py)
    "CG-SLACK": Code("a Slack call failed", "5"),
    "CG-SLACK-REJECTED": Code("Slack refused the call (token, scope, channel); not retried", "5"),
    "CG-SLACK-UNREACHABLE": Code("Slack could not be reached; retried", "5"),
    "CG-SLACK-UNAVAILABLE": Code("Slack answered a 5xx, an error or not JSON; retried", "5"),
    "CG-SLACK-RATELIMITED": Code("Slack rate-limited the call; retried after Retry-After", "4"),
    "CG-SLACK-UNDELIVERED": Code("notice: the gate message was not posted; answer with the CLI or UI", "1"),
    "CG-SLACK-NOT-UPDATED": Code("notice: the gate's Slack message still shows its buttons", "5"),
    "CG-SLACK-OPEN-REVIEWERS": Code("warning at `clausegate up`: a real workspace's block names no reviewers", "5"),
    "CG-GATEWAY-ANSWER-RECOVERED": Code("a Slack answer a stopped gateway acknowledged is applied at its next start",
                                        "5"),
    "CG-GATE-DECIDERS-IN-SLACK-BLOCK": Code("warning at `clausegate up`: who decides still lives in the Slack block",
                                            "5"),
    # gates by e-mail (clausegate/gates/email_channel.py, email_links.py; the gateway's /gates/email pages)
    "CG-EMAIL": Code("an SMTP send failed", "5"),
    "CG-EMAIL-UNREACHABLE": Code("the SMTP server could not be reached or broke off; retried, the gate waits", "5"),
    "CG-EMAIL-REJECTED": Code("the SMTP server refused the login, sender or recipients; not retried", "5"),
    "CG-EMAIL-UNDELIVERED": Code("notice: the gate e-mails were not sent; answer in Slack, the CLI or the UI", "5"),
    "CG-EMAIL-LINK-FORGED": Code("a decision link not signed by ClauseGate: refused", "5"),
    "CG-EMAIL-LINK-EXPIRED": Code("a decision link past its time: refused", "5"),
    "CG-EMAIL-LINK-REPLAYED": Code("a decision link used a second time: refused", "5"),
    "CG-EMAIL-LINK-REUSED": Code("a finding already answered with another of the person's links: refused", "5"),
    "CG-EMAIL-LINK-WRONG-PERSON": Code("the link's address may not decide that finding (now): refused", "5"),
    # any gate channel without codes of its own (clausegate/gates/channel.py); the message names the channel
    "CG-CHANNEL-UNDELIVERED": Code("notice: a channel's gate question was not delivered; answer through another", "5"),
    "CG-CHANNEL-NOT-UPDATED": Code("notice: a channel's view of the gate still asks after the decision", "5"),
    # a gate's signed link to the annotated copy (clausegate/gates/annotated_links.py, GET /annotated/{token})
    "CG-ANNOTATED-LINK-FORGED": Code("a link to an annotated copy not signed by ClauseGate (or changed): 403", "5"),
    "CG-ANNOTATED-LINK-EXPIRED": Code("a link to an annotated copy past its time: 410", "5"),
    "CG-ANNOTATED-LINK-GONE": Code("the copy a valid link names is not in the reports folder (retention, another "
                                   "out_dir): 404", "5"),
    "CG-ALERT-NO-CHANNEL": Code("the failure-alert threshold was crossed but the block has no alert_channel", "5"),
    "CG-GATE-NO-DEPLOYMENT": Code("a review needs a person but was not started from a deployment", "12"),
    "CG-GATE-CANNOT-SUSPEND": Code("Prefect refused to suspend the run (e.g. a subflow): the run fails", "12"),
    "CG-GATE-NO-ANSWER": Code("the run was resumed without an answer: the run fails", "12"),
    "CG-GATE-NO-DECISION": Code("a run completed although its review still needs a decision", "12"),
    "CG-GATE-DEFERRED": Code("notice: the batch review needs a person; it is asked in a run of its own", "8"),
    "CG-GATE-ESCALATED": Code("notice: the gate was escalated to legal (by a person or the SLA)", "1"),
    "CG-GATE-CHANGE-ANSWER": Code("an answer on a tracked change is not accept, reject or counter with a text", "12"),
    "CG-GATE-ESCALATION-UNDELIVERED": Code("an escalation was applied but the escalation channel was not told", "5"),
    # the nightly batch and flow-run outcomes (clausegate/batch/, clausegate/runs/states.py)
    "CG-BATCH-SOURCE": Code("the batch's source folder or python:module:factory cannot be loaded", "8"),
    "CG-BATCH-NO-DEPLOYMENT": Code("contract-review is not deployed on this server", "8"),
    "CG-BATCH-SUBMIT": Code("creating one contract's run failed; the batch went on", "8"),
    "CG-BATCH-TIMEOUT": Code("the batch stopped waiting (timeout_minutes); the runs keep going", "8"),
    "CG-RUN-CRASHED": Code("the run's process died (worker killed, OOM, no heartbeat)", "3"),
    "CG-RUN-CANCELLED": Code("someone cancelled the run", "8"),
    "CG-RUN-FAILED": Code("the run failed without a ClauseGate code (an unexpected exception)", "8"),
    "CG-RUN-REQUEUED": Code("a crashed run was requeued once by the dead-letters deployment", "10"),
    "CG-RUN-REQUEUING": Code("a crashed run's hung process is being stopped before its requeue", "12"),
    "CG-RUN-STUCK": Code("a run a crash left Pending or Late was found by the stuck-run sweep and crashed for its "
                         "requeue", "10"),
    "CG-RUN-DEAD-LETTER": Code("a run crashed again after its one requeue (or could not be stopped)", "10"),
    "CG-RUN-GATE-RESTORED": Code("a run waiting at a gate was marked crashed; its gate was put back", "1"),
    "CG-RUN-STALE-ATTEMPT": Code("a stale flow-run process stopped without touching its run", "12"),
    # the local stack (clausegate/stack/) and the scale-out script (tools/scaleout_postgres.py)
    "CG-STACK-PORT-IN-USE": Code("a port the stack needs is taken", "9"),
    "CG-STACK-RUNNING": Code("a stack from this folder is already up", "9"),
    "CG-STACK-START": Code("the server or a process did not start or become healthy", "9"),
    "CG-STACK-DEPLOY": Code("prefect deploy failed", "9"),
    "CG-STACK-CONFIG": Code("creating pool, queues, limits or automations failed (or a bad stack setting)", "9"),
    "CG-STACK-DATABASE": Code("the embedded PostgreSQL of `clausegate up` did not start", "9"),
    "CG-STACK-NO-SERVER": Code("CLI: a command that needs a real Prefect server found none (no URL, no stack up)", "9"),
    "CG-STACK-CREDENTIAL": Code("CLI: the local stack's Prefect API refused this command: its API credential is "
                                "missing here or is not the stack's", "9"),
    "CG-STACK-AUTH": Code("the Prefect API answered a request without the credential (scale-out check)", "11"),
    "CG-SCALEOUT-NO-POSTGRES": Code("scale-out: a PostgreSQL program was not found (docs/operations.md)", "9"),
    "CG-SCALEOUT-NO-USER": Code("scale-out: the PostgreSQL user could not be created (docs/operations.md)", "9"),
    "CG-SCALEOUT-POSTGRES": Code("scale-out: a PostgreSQL command failed (docs/operations.md)", "9"),
    "CG-SCALEOUT-BATCH": Code("scale-out: the nightly batch on PostgreSQL did not complete (docs/operations.md)", "9"),
    # the inbox API and the gateway (clausegate/inbox/, clausegate/gateway/, clausegate/audit.py)
    "CG-SOURCE-URL": Code("a review's source URL is not on the allow-list, not a PDF or could not be fetched", "10"),
    "CG-SOURCE-TASK": Code("a review's source names an inbox task with no stored contract on this worker", "10"),
    "CG-INBOX": Code("an inbox request failed", "10"),
    "CG-INBOX-AUTH": Code("401: no, malformed, unknown or revoked API key", "10"),
    "CG-INBOX-NOT-FOUND": Code("404: no such task for this key's sender", "10"),
    "CG-INBOX-BAD-REQUEST": Code("422: a field is wrong (the message names it)", "10"),
    "CG-INBOX-REVISES": Code("422: `revises` names no task of this sender (send the task_id of the earlier version)",
                             "10"),
    "CG-INBOX-NOT-PDF": Code("415: not a PDF, nor a .docx/.txt/.md/.eml whose content matches its name", "10"),
    "CG-INBOX-TOO-LARGE": Code("413: over CLAUSEGATE_INBOX_MAX_UPLOAD_MB (an .eml: _MAX_MESSAGE_MB; or one attachment)",
                               "10"),
    "CG-INBOX-SOURCE": Code("422: a path or URL source that is not allowed or could not be read", "10"),
    "CG-FETCH-REFUSED": Code("the checked fetcher refused or could not fetch a URL (the inbox answers CG-INBOX-SOURCE)",
                             "10"),
    "CG-FETCH-TOO-LARGE": Code("a fetched URL went over the size cap (the inbox answers CG-INBOX-TOO-LARGE)", "10"),
    "CG-INBOX-RATE-LIMIT": Code("429: the sender is over its submissions per minute", "10"),
    "CG-INBOX-CONFLICT": Code("409: the task's state or an earlier idempotency key forbids it", "10"),
    "CG-INBOX-UNAVAILABLE": Code("503: the Prefect API did not answer or contract-review is not deployed", "10"),
    "CG-INBOX-CANCELLED": Code("state message: the task was cancelled through the inbox", "10"),
    "CG-INBOX-NOT-DOCX": Code("415: a file named .docx that is not a Word OOXML package (e.g. a legacy .doc)", "10"),
    "CG-INBOX-NOT-TEXT": Code("415: a file named .txt/.md that is not UTF-8 text", "10"),
    "CG-INBOX-EML-MALFORMED": Code("422: an .eml with malformed headers or MIME structure (or a part of one)", "10"),
    "CG-INBOX-EML-TOO-COMPLEX": Code("422: reading the .eml hit its sandboxed child's time or memory cap", "10"),
    "CG-INBOX-EML-NO-CONTRACT": Code("422: an .eml with no document to review and no contract language", "10"),
    "CG-INBOX-EML-TOO-MANY-ATTACHMENTS": Code("an .eml part past CLAUSEGATE_INBOX_MAX_ATTACHMENTS was not taken",
                                              "10"),
    "CG-INBOX-EML-TOO-DEEP": Code("an attached message nested too deep was not opened", "10"),
    "CG-REVIEW-INPUT": Code("`clausegate review -` / `--text`: no text, or input that is no text, PDF or .docx",
                            "10"),
    "CG-GATEWAY-TOO-LARGE": Code("413: a request body over its route's limit", "10"),
    "CG-AUDIT-WRITE": Code("an action happened but its audit event could not be posted", "10"),
    # contracts at rest (clausegate/security/at_rest.py, clausegate/ops/retention*.py)
    "CG-AT-REST-KEY": Code("data was encrypted with another at-rest key than this process has", "13"),
    "CG-AT-REST-CORRUPT": Code("a sealed upload or result is truncated or modified", "13"),
    "CG-RETENTION-IN-USE-UNKNOWN": Code("retention could not ask Prefect what is in use: nothing deleted", "13"),
    "CG-RETENTION-DELETE": Code("retention could not delete some expired files", "13"),
    # a contract's versions (clausegate/review/versions/signing.py, `clausegate versions sign`)
    "CG-VERSIONS-UNDECIDED": Code("a version with a gate no person has decided cannot be signed", ""),
    "CG-VERSIONS-UNKNOWN": Code("`versions sign` names no review (or several) in the reports folder", ""),
    "CG-VERSIONS-NOT-RECORDED": Code("a signature could not be written to the audit log: nothing recorded", ""),
}


def describe(code: str) -> str:
    """One line for ``code``: its meaning and runbook section (an unknown code says so)."""
    entry = CODES.get(code)
    if entry is None:
        return f"{code}: not a ClauseGate code"
    where = f" (docs/runbook.md section {entry.section})" if entry.section else ""
    return f"{code}: {entry.meaning}{where}"
