"""Gates by e-mail: each person who must decide gets their findings with signed decision links.

    EmailChannel(smtp).post(record)        # one e-mail per address, three links (approve/changes/escalate) per finding

Sent with the standard library's ``smtplib`` (STARTTLS, TLS or plain to a local relay) from a Prefect task
with retries (:data:`EMAIL_RETRY_POLICY`): an SMTP server that is down or breaks off is
``CG-EMAIL-UNREACHABLE`` (transient: retried 3 times), a refused login, sender or recipient
``CG-EMAIL-REJECTED`` (not retried). A send that finally fails is logged and recorded on the gate
(:class:`EmailRef`, the review's notice ``CG-EMAIL-UNDELIVERED``); the gate keeps waiting, and the
ladder's reminders send again. An address gets links only for the findings whose open slot it may fill
(its role's people, or the slot's assignee); the links are :mod:`clausegate.gates.email_links`. E-mail
cannot be edited once sent, so ``update`` sends nothing: the link page shows the gate's current state.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from email.message import EmailMessage
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from pydantic import BaseModel, ConfigDict

from clausegate.errors import ClauseGateError
from clausegate.gates import email_links, findings, store
from clausegate.gates.channel import reaches
from clausegate.gates.listing import WaitingGate
from clausegate.gates.model import DECISION_LABELS, DECISIONS, RECORD_PREFIX, GateRecord
from clausegate.gates.rounds import current_progress
from clausegate.review.schemas import Notice

UNREACHABLE, REJECTED, UNDELIVERED = "CG-EMAIL-UNREACHABLE", "CG-EMAIL-REJECTED", "CG-EMAIL-UNDELIVERED"
RETRY_DELAYS = [1.0, 2.0, 4.0]
log = logging.getLogger("clausegate.gates")


class EmailError(ClauseGateError):
    """The SMTP server could not take a message (``transient``: worth retrying)."""

    code = "CG-EMAIL"

    def __init__(self, message: str, *, code: str, transient: bool, hint: str = "") -> None:
        self.transient = transient
        super().__init__(message, hint=hint, code=code)

    def __reduce__(self):
        return (_rebuild, (self.message, self.code, self.transient, self.hint))


def _rebuild(message, code, transient, hint):
    return EmailError(message, code=code, transient=transient, hint=hint)


class EmailRef(BaseModel):
    """Stored on the run (``clausegate-email-<gate>``): to whom the gate's e-mails went, or why not."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    sent_to: list[str] = []
    error: str | None = None


def email_key(key: str) -> str:
    return f"{RECORD_PREFIX}email-{key}"


def send(smtp, to: list[str], subject: str, body: str) -> None:
    """One message over SMTP; raises EmailError (transient or not)."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = smtp.sender, ", ".join(to), subject
    message.set_content(body)
    try:
        if smtp.security == "tls":
            server = smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=smtp.timeout_seconds,
                                      context=ssl.create_default_context())
        else:
            server = smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout_seconds)
        with server:
            if smtp.security == "starttls":
                server.starttls(context=ssl.create_default_context())
            if smtp.username:
                server.login(smtp.username, smtp.password.get_secret_value() if smtp.password else "")
            server.send_message(message)
    except (smtplib.SMTPAuthenticationError, smtplib.SMTPSenderRefused, smtplib.SMTPRecipientsRefused,
            smtplib.SMTPNotSupportedError) as exc:
        raise EmailError(f"the SMTP server {smtp.host}:{smtp.port} refused the message: {exc}", code=REJECTED,
                         transient=False, hint="check the SmtpSettings block: login, sender, the addresses in the "
                                               "Deciders block (docs/slack.md)") from None
    except (OSError, smtplib.SMTPException) as exc:  # refused connection, timeout, a server that broke off
        raise EmailError(f"the SMTP server {smtp.host}:{smtp.port} is unreachable: {exc}", code=UNREACHABLE,
                         transient=True, hint="the task retries; check the server and the block's host/port") from None


def _transient(task, task_run, state) -> bool:
    try:
        state.result()
    except Exception as exc:
        return bool(getattr(exc, "transient", False))
    return False


EMAIL_RETRY_POLICY: dict[str, Any] = {"retries": len(RETRY_DELAYS), "retry_delay_seconds": RETRY_DELAYS,
                                      "retry_condition_fn": _transient}


@task(name="send-gate-email", **EMAIL_RETRY_POLICY, cache_policy=NO_CACHE)
def send_email(smtp, to: list[str], subject: str, body: str) -> list[str]:
    send(smtp, to, subject, body)
    return to


def link_url(smtp, token: str) -> str:
    return f"{smtp.link_base_url.rstrip('/')}/gates/email/{token}"


class EmailChannel:
    """The e-mail implementation of :class:`clausegate.gates.channel.Channel`."""

    name = "email"

    def __init__(self, smtp) -> None:
        self.smtp = smtp

    def _deliver(self, to: list[str], subject: str, body: str) -> str | None:
        state = send_email(self.smtp, to, subject, body, return_state=True)
        if state.is_completed():
            return None
        error = str(state.result(raise_on_failure=False))[:500]
        log.error("%s: e-mail to %s not sent: %s", UNDELIVERED, ", ".join(to), error)
        return error

    def questions(self, record: GateRecord, prog: findings.Progress) -> dict[str, list[findings.FindingProgress]]:
        """Per address, the open findings whose slot it may fill."""
        out: dict[str, list[findings.FindingProgress]] = {}
        for fp in prog.findings:
            for role in fp.open_slots:
                if role == findings.ANY_ROLE:
                    continue
                for address in reaches(findings.slot_people(record, fp, role), "email"):
                    if fp not in out.setdefault(address.lower(), []):
                        out[address.lower()].append(fp)
        return out

    def _ask(self, record: GateRecord, prog: findings.Progress, heading: str,
             only: set[str] | None = None) -> tuple[list[str], str | None]:
        sent, errors = [], []
        for address, fps in self.questions(record, prog).items():
            if only is not None and address not in only:
                continue
            lines = [heading, "", f"Contract: {record.filename} (playbook {record.playbook}). Decide by "
                     f"{record.sla_deadline:%Y-%m-%d %H:%M} UTC. Each link opens a page that asks you to confirm.", ""]
            for fp in fps:
                f = fp.finding
                lines += [f"{f.id} · {f.category} · p. {', '.join(map(str, f.pages)) or '-'}",
                          f"  {' '.join(f.text.split())[:300]}"]
                for decision in DECISIONS:
                    token = email_links.issue(record.flow_run_id, record.key, f.id, decision, address,
                                              hours=self.smtp.link_hours)
                    lines.append(f"  {DECISION_LABELS[decision]}: {link_url(self.smtp, token)}")
                lines.append("")
            error = self._deliver([address], f"[ClauseGate] {record.filename}: your decision", "\n".join(lines))
            (errors.append(error) if error else sent.append(address))
        return sent, (errors[0] if errors else None)

    def post(self, record: GateRecord) -> EmailRef:
        prog = findings.progress(record, [])
        sent, error = self._ask(record, prog, f"{record.filename} needs your decision on these findings.")
        return EmailRef(ok=error is None, sent_to=sent, error=error)

    def update(self, record: GateRecord) -> None:
        return None  # a sent e-mail cannot change; the link page shows the current state

    def remind(self, gate: WaitingGate, people: list[str], percent: int) -> bool:
        with get_client(sync_client=True) as client:
            prog, _ = current_progress(client, gate.record)
        wanted = {p.lower() for p in reaches(people, "email")}
        if not wanted:
            return False
        heading = f"Reminder: {percent}% of the SLA has passed. Fresh links below."
        sent, error = self._ask(gate.record, prog, heading, only=wanted)
        return bool(sent) and error is None

    def escalate(self, gate: WaitingGate, people: list[str], note: str) -> bool:
        to = [*reaches(people, "email"), *self.smtp.escalation_to]
        if not to:
            return False
        record = gate.record
        body = "\n".join([f"{record.filename} (run {record.flow_run_id}) is late: {note}.", "",
                          *(f"{f.id} · {f.category}: {' '.join(f.text.split())[:200]}" for f in record.findings)])
        return self._deliver(sorted(set(to)), f"[ClauseGate] escalated: {record.filename}", body) is None

    def verify(self, evidence) -> str | None:
        """``evidence``: a link token; the address it proves (None when it is forged or expired)."""
        try:
            return email_links.read(str(evidence)).email
        except email_links.LinkRefused:
            return None


def ask_by_email(client, record: GateRecord, smtp, logger) -> EmailRef | None:
    """When the gate opens: e-mail its people once (the ref on the run says it was done); None without SMTP."""
    if smtp is None or not record.per_finding:
        return None
    ref = store.read_model(client, record.flow_run_id, email_key(record.key), EmailRef)
    if ref is None:
        ref = EmailChannel(smtp).post(record)
        store.write_once(client, record.flow_run_id, email_key(record.key), ref)
    if not ref.ok:
        logger.error("gate %s: %s: the gate e-mails were not all sent (%s); the gate waits: answer in Slack, or the "
                     "ladder's reminders send them again", record.key, UNDELIVERED, ref.error)
    return ref


def email_notices(record: GateRecord) -> list[Notice]:
    """The review's notice when the gate's e-mails were not all sent."""
    with get_client(sync_client=True) as client:
        ref = store.read_model(client, record.flow_run_id, email_key(record.key), EmailRef)
    if ref is None or ref.ok:
        return []
    return [Notice(code=UNDELIVERED, message=f"The gate e-mails were not all sent ({(ref.error or '')[:300]}); sent "
                                             f"to: {', '.join(ref.sent_to) or 'nobody'}.")]
