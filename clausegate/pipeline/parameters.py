"""The flows' parameter types: what the Prefect UI's custom-run form shows for every parameter of every flow in
flows/ (a description, and real choices where there are some).

Each type is ``Annotated[T, described(...)]``; the flows' signatures use them (``flows/*.py``), and Prefect puts
them into the deployment's parameter schema (``prefect deploy`` -> ``parameter_schema(flow)``).  Choices:

- ``playbook``: a shipped playbook (clausegate/review/playbooks/*.yaml, a drop-down) *or* a path to a YAML
  playbook on the worker's machine (the form offers both);
- ``extractor``: ``offline`` or a model block ``<kind>/<name>`` of a kind ClauseGate knows
  (:data:`clausegate.config.MODEL_BLOCK_KINDS`); the run checks the form, the block is loaded when used.

Why ``json_schema_extra`` and not ``Field(description=...)``: Prefect builds each parameter's field with the
docstring's description (``None`` when the docstring has no ``Args:`` entry), which replaces a description set
in ``Annotated``; ``json_schema_extra`` is merged instead (tests/unit/test_flow_parameters.py checks it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from clausegate.config import MODEL_BLOCK_KINDS
from clausegate.review.playbook import builtin_playbooks

SHIPPED_PLAYBOOKS = tuple(builtin_playbooks())
MODEL_BLOCK_PATTERN = rf"^({'|'.join(sorted(MODEL_BLOCK_KINDS))})/\S+$"


def described(text: str, **constraints: Any) -> Any:
    """Field metadata Prefect's parameter schema keeps: the description (and any pydantic constraints)."""
    return Field(json_schema_extra={"description": text}, **constraints)


def _option(schema: dict[str, Any], title: str) -> WithJsonSchema:
    """How one choice of an either-or parameter is labelled in the form."""
    return WithJsonSchema({**schema, "title": title})


ShippedPlaybook = Annotated[Literal[SHIPPED_PLAYBOOKS],  # type: ignore[valid-type]  # built from the folder
                            _option({"type": "string", "enum": list(SHIPPED_PLAYBOOKS)}, "Shipped playbook")]
PlaybookFile = Annotated[str, _option({"type": "string"}, "Playbook file (YAML path on the worker's machine)")]
OfflineExtractor = Annotated[Literal["offline"],
                             _option({"type": "string", "enum": ["offline"]}, "Offline (no model, no cost)")]
ModelBlock = Annotated[str, Field(pattern=MODEL_BLOCK_PATTERN),
                       _option({"type": "string", "pattern": MODEL_BLOCK_PATTERN},
                               f"Model block ({' or '.join(f'{k}/NAME' for k in sorted(MODEL_BLOCK_KINDS))})")]

# -- contract-review and nightly-batch -----------------------------------------------------------------------
ContractSource = Annotated[str, described(
    "The contract PDF to review, one of: a path on the worker's machine (the machine that runs this flow run), "
    "e.g. /data/contracts/acme-msa.pdf or a path relative to the project folder; an http(s) link to the PDF "
    "(its host must be on the worker's CLAUSEGATE_INBOX_URL_ALLOW_LIST); or an inbox task id (the task_id an "
    "inbox submission returned, i.e. an earlier review's run id) to review that contract again.")]
Playbook = Annotated[ShippedPlaybook | PlaybookFile, described(
    "Which categories to look for, which need a person's decision, and the step settings: one of the shipped "
    f"playbooks ({', '.join(SHIPPED_PLAYBOOKS)}; `clausegate playbooks` lists them) or the path of a YAML "
    "playbook on the worker's machine.")]
Extractor = Annotated[OfflineExtractor | ModelBlock | None, described(
    "How clauses are extracted: 'offline' (the built-in model, no cost) or a model block saved in Prefect "
    f"({', '.join(f'{k}/NAME' for k in sorted(MODEL_BLOCK_KINDS))}; see Blocks in the UI or `clausegate "
    "model-block`); with a model the offline extractor still runs first and only unsure categories go to the "
    "model.  Empty: the playbook's choice (steps.extract.extractor).")]
OutDir = Annotated[str, described(
    "Folder for the JSON and Markdown reports, on the worker's machine (relative paths: to the project folder).")]

BatchSource = Annotated[str, described(
    "The contracts to review: a folder on the worker's machine (searched recursively for PDFs; relative to the "
    "project folder), 'list:MANIFEST' (a file listing PDF paths) or 'python:module:factory'.")]
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
    "The crashed contract-review run to handle (a flow-run id or 'prefect.flow-run.<id>'); empty: sweep every "
    "crashed contract-review run of the last 24 hours.")]
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
