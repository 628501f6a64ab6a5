"""Gates by e-mail: each person who must decide gets their findings with signed decision links.

    EmailChannel(smtp).post(record)        # one e-mail per address, three links (approve/changes/escalate) per finding

Sent with the standard library's ``smtplib`` (STARTTLS, TLS or plain to a local relay) from a Prefect task
with retries (:data:`EMAIL_RETRY_POLICY`): an SMTP server that is down or breaks off is
``CG-EMAIL-UNREACHABLE`` (transient: retried 3 times), a refused login, sender or recipient
``CG-EMAIL-REJECTED`` (not retried). A send that finally fails is logged and recorded on the gate
(:class:`EmailRef`, the review's notice ``CG-EMAIL-UNDELIVERED``); the gate keeps waiting, and the
ladder's reminders send again. An address gets links only for the findings whose open slot it may fill
(its role's people, or the slot's assignee); a one-decision gate's allowed addresses get three links for the
whole contract; the links are :mod:`clausegate.gates.email_links`. E-mail
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

from clausegate.config import SmtpSettings, load_smtp_settings
from clausegate.errors import ClauseGateError
from clausegate.gates import email_links, findings
from clausegate.gates.annotated_links import record_link
from clausegate.gates.channel import ChannelUndelivered, reaches
from clausegate.gates.listing import WaitingGate
from clausegate.gates.model import DECISION_LABELS, DECISIONS, DecisionInfo, Finding, GateRecord
from clausegate.gates.rounds import current_progress

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

    name = "email"  # the Via of its answers
    block = SmtpSettings
    routers = ("clausegate.gateway.email_links",)  # the pages behind the links
    undelivered = not_updated = UNDELIVERED  # a sent e-mail is never updated
    ref = EmailRef
    posts_when_absent = False  # no SmtpSettings block: gates are not asked by e-mail

    def __init__(self, smtp) -> None:
        self.smtp = smtp

    @classmethod
    def load(cls, block_name: str | None = None) -> EmailChannel | None:
        smtp = load_smtp_settings(block_name)
        return cls(smtp) if smtp is not None else None

    def _deliver(self, to: list[str], subject: str, body: str) -> str | None:
        state = send_email(self.smtp, to, subject, body, return_state=True)
        if state.is_completed():
            return None
        error = str(state.result(raise_on_failure=False))[:500]
        log.error("%s: e-mail to %s not sent: %s", UNDELIVERED, ", ".join(to), error)
        return error

    def questions(self, record: GateRecord, prog: findings.Progress | None) -> dict[str, list[Finding]]:
        """Per address, the findings it may answer: a per-finding gate's open slots it may fill; a one-decision
        gate's allowed addresses get its findings, answered together (links for :data:`email_links.WHOLE_GATE`)."""
        out: dict[str, list[Finding]] = {}
        if not record.per_finding:
            return {a.lower(): list(record.findings) for a in reaches(record.allowed_addresses, "email")}
        for fp in prog.findings if prog else []:
            for role in fp.open_slots:
                if role == findings.ANY_ROLE:
                    continue
                for address in reaches(findings.slot_people(record, fp, role), "email"):
                    if fp.finding not in out.setdefault(address.lower(), []):
                        out[address.lower()].append(fp.finding)
        return out

    def _links(self, record: GateRecord, finding: str, address: str) -> list[str]:
        return [f"  {DECISION_LABELS[d]}: "
                f"{link_url(self.smtp, email_links.issue(record.flow_run_id, record.key, finding, d, address, hours=self.smtp.link_hours))}"  # noqa: E501
                for d in DECISIONS]

    def _ask(self, record: GateRecord, prog: findings.Progress | None, heading: str,
             only: set[str] | None = None) -> tuple[list[str], str | None]:
        sent, errors = [], []
        for address, fs in self.questions(record, prog).items():
            if only is not None and address not in only:
                continue
            lines = [heading, "", f"Contract: {record.filename} (playbook {record.playbook}). Decide by "
                     f"{record.sla_deadline:%Y-%m-%d %H:%M} UTC. Each link opens a page that asks you to confirm.", ""]
            if link := record_link(record):  # the annotated copy: a comment or highlight on each finding
                lines += [f"The contract with each finding marked: {link}", ""]
            for f in fs:
                lines += [f"{f.id + ' · ' if f.id else ''}{f.category} · p. {', '.join(map(str, f.pages)) or '-'}",
                          f"  {' '.join(f.text.split())[:300]}"]
                if record.per_finding:
                    lines += [*self._links(record, f.id, address), ""]
            if not record.per_finding:  # one decision for the whole contract
                lines += ["", "Your decision on the whole contract:", *self._links(record, email_links.WHOLE_GATE,
                                                                                    address)]
            error = self._deliver([address], f"[ClauseGate] {record.filename}: your decision", "\n".join(lines))
            (errors.append(error) if error else sent.append(address))
        return sent, (errors[0] if errors else None)

    def post(self, record: GateRecord) -> EmailRef:
        prog = findings.progress(record, []) if record.per_finding else None
        what = "these findings" if record.per_finding else "this contract"
        sent, error = self._ask(record, prog, f"{record.filename} needs your decision on {what}.")
        return EmailRef(ok=error is None, sent_to=sent, error=error)

    def update(self, record: GateRecord) -> str | None:
        return None  # a sent e-mail cannot change; the link page shows the current state

    def remind(self, gate: WaitingGate, people: list[str], percent: int) -> bool:
        prog = None
        if gate.record.per_finding:
            with get_client(sync_client=True) as client:
                prog, _ = current_progress(client, gate.record)
        wanted = {p.lower() for p in reaches(people, "email")}
        if not wanted:
            return False
        heading = f"Reminder: {percent}% of the SLA has passed. Fresh links below."
        sent, error = self._ask(gate.record, prog, heading, only=wanted)
        return bool(sent) and error is None

    def escalate(self, record: GateRecord, people: list[str], note: str, decided: DecisionInfo | None = None) -> bool:
        to = [*reaches(people, "email"), *self.smtp.escalation_to]
        if not to:
            return False
        what = "is late" if decided is None else f"was escalated ({decided.reviewer})"
        body = "\n".join([f"{record.filename} (run {record.flow_run_id}) {what}: {note}.", "",
                          *(f"{f.id} · {f.category}: {' '.join(f.text.split())[:200]}" for f in record.findings)])
        error = self._deliver(sorted(set(to)), f"[ClauseGate] escalated: {record.filename}", body)
        if error is not None:
            raise ChannelUndelivered(f"the escalation e-mail was not sent: {error[:300]}")
        return True

    def verify(self, evidence) -> str | None:
        """``evidence``: a link token; the address it proves (None when it is forged or expired)."""
        try:
            return email_links.read(str(evidence)).email
        except email_links.LinkRefused:
            return None
