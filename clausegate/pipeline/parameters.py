"""The flows' parameter types: what the Prefect UI's custom-run form shows for every parameter of every flow in
flows/ (a description, and real choices where there are some).

Each type is ``Annotated[T, described(...)]``; the flows' signatures use them (``flows/*.py``), and Prefect puts
them into the deployment's parameter schema (``prefect deploy`` -> ``parameter_schema(flow)``).  Choices:

- ``playbook``: a shipped playbook (clausegate/review/playbooks/*.yaml, a drop-down) *or* a name or a path to a YAML
  playbook on the worker's machine (typed);
- ``extractor``: ``offline`` or a saved model block (a drop-down; `clausegate up` and `clausegate model-block` fill
  it with the blocks on the server: :func:`offer_model_blocks`) *or* a model block ``<kind>/<name>`` of a kind
  ClauseGate knows (:data:`clausegate.config.MODEL_BLOCK_KINDS`), typed; the run checks it (``CG-CONFIG``), the
  block is loaded when used.

Each either-or is an ``anyOf`` of one *object* (``{"name": <choice>}``, the drop-down) and one *string* (typed),
never two strings: the Prefect UI picks the tab of an ``anyOf`` by the value's JSON type, so of two string
alternatives the second flips back to the first at the first key typed.  API callers keep sending
plain strings; the flow gets a plain string either way.

Why ``json_schema_extra`` and not ``Field(description=...)``: Prefect builds each parameter's field with the
docstring's description (``None`` when the docstring has no ``Args:`` entry), which replaces a description set
in ``Annotated``; ``json_schema_extra`` is merged instead (tests/unit/test_flow_parameters.py checks it).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from clausegate.config import MODEL_BLOCK_KINDS
from clausegate.errors import ConfigurationError
from clausegate.review.playbook import builtin_playbooks

SHIPPED_PLAYBOOKS = tuple(builtin_playbooks())
MODEL_BLOCK_PATTERN = rf"^({'|'.join(sorted(MODEL_BLOCK_KINDS))})/\S+$"
MODEL_BLOCK_FORMS = " or ".join(f"{k}/NAME" for k in sorted(MODEL_BLOCK_KINDS))
EXTRACTOR_DROP_DOWN = "Offline or a saved model block"


def described(text: str, **constraints: Any) -> Any:
    """Field metadata Prefect's parameter schema keeps: the description (and any pydantic constraints)."""
    return Field(json_schema_extra={"description": text}, **constraints)


def _option(schema: dict[str, Any], title: str) -> dict[str, Any]:
    """How one choice of an either-or parameter is labelled in the form."""
    return {**schema, "title": title}


def _drop_down(title: str, choices: list[str]) -> dict[str, Any]:
    """The drop-down alternative of an either-or parameter: an object with one enum field, ``name``."""
    return _option({"type": "object", "properties": {"name": {"type": "string", "title": "name", "enum": choices}},
                    "required": ["name"]}, title)


class Choice(BaseModel):
    """A value picked from a drop-down in the UI form: ``{"name": ...}``."""

    model_config = ConfigDict(extra="forbid")
    name: str


def _playbook(value: Choice | str) -> str:
    return value.name if isinstance(value, Choice) else value


def check_extractor(value: Choice | str | None) -> str | None:
    """``offline``, a model block ``<kind>/<name>`` of a known kind, or ``None`` (the playbook's); else CG-CONFIG."""
    name = value.name if isinstance(value, Choice) else value
    if name is None or name == "offline" or re.fullmatch(MODEL_BLOCK_PATTERN, name):
        return name
    raise ValueError(f"[{ConfigurationError.code}] extractor {name!r} is neither 'offline' nor a model block "
                     f"({MODEL_BLOCK_FORMS}). Next step: pick one in the form, or save the block "
                     "(`clausegate model-block`, or Blocks in the UI) and give its KIND/NAME.")


def offer_model_blocks(schema: dict[str, Any], blocks: list[str]) -> dict[str, Any]:
    """A deployment's parameter schema whose ``extractor`` drop-down offers ``offline`` and ``blocks``
    (``<kind>/<name>`` of the model blocks saved on its server); unchanged without that parameter."""
    prop = schema.get("properties", {}).get("extractor")
    if not prop or not prop.get("anyOf"):
        return schema
    options = [_drop_down(EXTRACTOR_DROP_DOWN, ["offline", *sorted(blocks)]) if o.get("type") == "object" else o
               for o in prop["anyOf"]]
    return {**schema, "properties": {**schema["properties"], "extractor": {**prop, "anyOf": options}}}


PlaybookChoice = Annotated[Choice | str, AfterValidator(_playbook), WithJsonSchema({"anyOf": [
    _drop_down("Shipped playbook", list(SHIPPED_PLAYBOOKS)),
    _option({"type": "string"}, "Playbook name or file (YAML path on the worker's machine)")]})]
ExtractorChoice = Annotated[Choice | str | None, AfterValidator(check_extractor), WithJsonSchema({"anyOf": [
    _drop_down(EXTRACTOR_DROP_DOWN, ["offline"]),
    _option({"type": "string"}, f"Model block by name ({MODEL_BLOCK_FORMS})"),
    _option({"type": "null"}, "The playbook's choice")]})]

# -- contract-review and nightly-batch -----------------------------------------------------------------------
ContractSource = Annotated[str, described(
    "The contract to review (a PDF, a Word .docx or a UTF-8 text: its bytes decide, not its name), one of: a path "
    "on the worker's machine (the machine that runs this flow run), e.g. /data/contracts/acme-msa.pdf or a path "
    "relative to the project folder; an http(s) link to the contract "
    "(its host must be on the worker's CLAUSEGATE_INBOX_URL_ALLOW_LIST); or an inbox task id (the task_id an "
    "inbox submission returned, i.e. an earlier review's run id) to review that contract again.")]
Playbook = Annotated[PlaybookChoice, described(
    "Which categories to look for, which need a person's decision, and the step settings: one of the shipped "
    f"playbooks ({', '.join(SHIPPED_PLAYBOOKS)}; `clausegate playbooks` lists them) or the path of a YAML "
    "playbook on the worker's machine.")]
Extractor = Annotated[ExtractorChoice, described(
    "How clauses are extracted: 'offline' (the built-in model, no cost) or a model block saved in Prefect "
    f"({', '.join(f'{k}/NAME' for k in sorted(MODEL_BLOCK_KINDS))}; see Blocks in the UI or `clausegate "
    "model-block`); with a model the offline extractor still runs first and only unsure categories go to the "
    "model.  Empty: the playbook's choice (steps.extract.extractor).")]
OutDir = Annotated[str, described(
    "Folder for the JSON and Markdown reports, on the worker's machine (relative paths: to the project folder).")]
Revises = Annotated[str | None, described(
    "The earlier version this contract revises: its review id (the contract-review run id; the inbox's task id) or "
    "the earlier contract's file on the worker's machine.  The report then says what changed clause by clause, and "
    "a decision on a clause whose text and playbook are unchanged is carried with its receipt (a file: compared "
    "only).  Empty: none.")]

BatchSource = Annotated[str, described(
    "The contracts to review: a folder on the worker's machine (searched recursively for PDFs and .docx files; "
    "relative to the project folder), 'list:MANIFEST' (a file listing contract paths, text files too) or "
    "'python:module:factory'.")]
WorkQueue = Annotated[Literal["high", "normal", "low"], described(
    "Work queue of the contract-review runs sent for contracts that need a person's decision.")]
MaxInFlight = Annotated[int, described("Contracts reviewed at once in each batch run.")]
MaxParallelRuns = Annotated[int, described(
    "Batch runs to spread a large batch over (this run plus chunk runs on any worker); deployment runs only.")]
RetryFailed = Annotated[bool, described("Review again contracts whose last review failed.")]
Limit = Annotated[int | None, described("Review at most this many new contracts (empty: all).")]
TimeoutMinutes = Annotated[float, described("Stop sending new contracts after this many minutes.")]
PollSeconds = Annotated[float, described("How often to check on the contract-review runs the batch sent.")]
ReviewDeployment = Annotated[str | None, described(
    "The contract-review deployment (flow/deployment) that asks a person; empty: such contracts stay "
    "pending_decision.")]

# -- operations flows ----------------------------------------------------------------------------------------
CrashedRunId = Annotated[str | None, described(
    "The crashed contract-review run to handle (a flow-run id or 'prefect.flow-run.<id>'); empty: the stuck-run "
    "sweep (runs left Pending, Running without a heartbeat, Late or Cancelled mid-requeue, and missed crashes).")]
SlackBlock = Annotated[str | None, described(
    "Name of the SlackSettings block to post with; empty: $CLAUSEGATE_SLACK_BLOCK or 'clausegate'.")]
ThresholdPct = Annotated[float, described("Alert when more than this percentage of reviews in the window failed.")]
WindowMinutes = Annotated[float, described("Look at reviews that finished in the last this many minutes.")]
MinRuns = Annotated[int, described("Alert only when at least this many reviews finished in the window.")]
CooldownMinutes = Annotated[float, described("After an alert, stay quiet for this many minutes.")]
FlowName = Annotated[str, described("The flow whose runs are counted (and the nightly batch's reviews).")]
RetentionDays = Annotated[float | None, described(
    "Delete what is older than this many days; empty: $CLAUSEGATE_RETENTION_DAYS or 30.")]
UploadsDirs = Annotated[list[str] | None, described("Upload folders to sweep; empty: the inbox's uploads/ folder.")]
ReportsDirs = Annotated[list[str] | None, described(
    "Report folders to sweep; empty: the inbox's reports/ folder and the project's reports/ folder.")]
ResultsDir = Annotated[str | None, described("Prefect result storage to sweep; empty: PREFECT_HOME/storage.")]
DryRun = Annotated[bool, described("Only count (and report) what would be done; change nothing.")]
StatsDays = Annotated[float, described(
    "The gates opened in this many days before the run are counted (7: the past week).", gt=0)]
ReminderContract = Annotated[str, described("The contract's sha256 (the review's contract_id) the deadline is of.")]
ReminderFile = Annotated[str, described("The contract's file name, as the reminder names it to its owner.")]
ReminderDeadline = Annotated[str, described("The renewal notice deadline being reminded of (ISO date, YYYY-MM-DD).")]
ReminderTermEnd = Annotated[str | None, described("The end of the current term (ISO date); empty when not stated.")]
ReminderOwner = Annotated[str | None, described(
    "Who is reminded: the inbox sender who submitted the contract; empty: the Slack block's channel only.")]
ReminderExplanation = Annotated[str, described("How the deadline was computed (term end minus the notice period).")]
