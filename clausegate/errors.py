"""ClauseGate's few, user-facing error types.

Every error carries a stable ``code`` (listed in the runbook), a message that says what
failed and why, and a ``hint`` that says what to do next.  ``transient`` tells retry
policies whether trying again can help; permanent errors never retry.
"""

from __future__ import annotations


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
