"""Review playbooks: which clause categories to look for, which need a person, how each step runs.

A playbook is YAML validated by pydantic (unknown keys are errors, so a typo fails fast and
names the field).  Built-in playbooks live in ``clausegate/review/playbooks/``; any other value of
``--playbook`` is read as a path to a YAML file.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from clausegate.errors import PlaybookError
from clausegate.review.categories import CATEGORIES, canonical
from clausegate.review.custom_categories import CustomCategory
from clausegate.review.ladder import LADDER_HELP, Ladder
from clausegate.review.positions import Position

BUILTIN_DIR = Path(__file__).parent / "playbooks"

CategoryName = Annotated[str, Field(description="one of CUAD's 41 category names")]
GateableName = Annotated[str, Field(description="one of CUAD's 41 category names, or the name of one of the "
                                                "playbook's custom_categories")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _canonical_category(value: str) -> str:
    try:
        return canonical(value)
    except KeyError:
        raise ValueError(f"unknown clause category {_clipped(repr(value))}{_closest(value)}; "
                         f"{_LIST_THEM}") from None


_LIST_THEM = "`clausegate playbooks --categories` lists CUAD's names"


def _closest(value: str) -> str:
    """`` (did you mean 'X'?)`` for the nearest CUAD name, or nothing."""
    lower = {name.lower(): name for name in CATEGORIES}
    near = difflib.get_close_matches(value.strip().lower(), list(lower), n=1, cutoff=0.75)
    return f" (did you mean {lower[near[0]]!r}?)" if near else ""


def _cuad_or_custom(value: str) -> str:
    """A CUAD name made canonical; any other name is kept as written, for ``Playbook`` to check against its
    ``custom_categories`` (a name that is neither is refused there, with the same clear error)."""
    try:
        return canonical(value)
    except KeyError:
        return value


class StepPolicy(_Strict):
    """How Prefect runs one step: timeout and retries."""

    timeout_seconds: float = Field(300, gt=0)
    retries: int = Field(0, ge=0, le=10)
    retry_delay_seconds: list[float] = Field(default_factory=lambda: [2.0, 4.0, 8.0])


class ParseSettings(StepPolicy):
    max_chars: int = Field(500_000, gt=0, description="refuse documents with more extracted text")
    max_file_mb: float = Field(50, gt=0)
    memory_mb: int = Field(1024, ge=128, description="address-space cap of the parser process")
    ocr: Literal["auto", "off"] = "auto"


class ExtractSettings(StepPolicy):
    extractor: str = Field("offline", description="'offline', or a model block 'anthropic-model/NAME' / "
                                                  "'openai-compatible-model/NAME'")
    min_confidence: float = Field(
        0.0, ge=0, le=1, description="drop clauses below this confidence, except in gated and high-risk categories "
                    "(only a person's decision clears those)")
    cascade_margin: float = Field(
        2.0, ge=0, le=20,
        description="log-odds one model answer moves the offline evidence (clausegate.review.llm.merge): a category "
                    "whose best offline score is above this many log-odds under its threshold is sent to the model; "
                    "an offline finding under this many over it is low-confidence (a model may clear it)")
    max_output_tokens: int = Field(8192, gt=0, description="the answer's output budget: a second reader answers for "
                                   "every candidate category (bench/cascade.py: 2048 cut half the answers); a "
                                   "provider that refuses it is asked again with what it allows")
    key_terms: Literal["missing", "always", "never"] = Field("missing", description=(
        "the model reads an English contract's key terms when the offline reader missed one ('missing'; it confirms "
        "the others), 'always' or 'never'; a contract in another language: always"))


class GenerateSettings(StepPolicy):
    provider: str | None = Field(None, description="model block for redlines/questions, e.g. "
                                                   "'openai-compatible-model/codex'; empty: skip")
    max_output_tokens: int = Field(1024, gt=0)


class Steps(_Strict):
    parse: ParseSettings = ParseSettings(timeout_seconds=120)
    prefilter: StepPolicy = StepPolicy(timeout_seconds=120)
    extract: ExtractSettings = ExtractSettings(retries=3)
    generate: GenerateSettings = GenerateSettings(retries=3)
    report: StepPolicy = StepPolicy(timeout_seconds=60)


ModelReview = Literal["low_confidence", "never"]
_MODEL_REVIEW = ("'low_confidence': a model's reasoned answer may take a low-confidence finding off the gate under the "
                 "guards of clausegate.review.llm.merge; 'never': every finding a model disputes goes to a person")


class Gate(_Strict):
    category: GateableName
    sla_hours: float = Field(24, gt=0, description="the SLA: escalate when nobody decided within it (the ladder)")
    reason: str = ""
    model_review: ModelReview | None = Field(None, description=_MODEL_REVIEW + "; empty: the playbook's model_review")
    roles: list[str] = Field(default_factory=list, description="roles that must each decide this category's findings "
                             "(e.g. [legal, finance]; people: the Deciders block); empty: one decision for the gate")
    ladder: Ladder = Field(default_factory=list, description=LADDER_HELP)

    @field_validator("roles")
    @classmethod
    def _role_names(cls, values: list[str]) -> list[str]:
        bad = [v for v in values if not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", v)]
        if bad:
            raise ValueError(f"role names are lowercase words (legal, finance): {_clipped(repr(bad))}")
        return list(dict.fromkeys(values))

    @field_validator("category")
    @classmethod
    def _known(cls, value: str) -> str:
        return _cuad_or_custom(value)


class Budgets(_Strict):
    per_run_eur: float = Field(0.50, ge=0)
    per_period_eur: float = Field(40.0, ge=0)
    period: Literal["day", "month", "year"] = "year"
    max_tokens_per_run: int = Field(200_000, ge=0)


class CacheSettings(_Strict):
    expiration_days: float = Field(30, gt=0)


class RetentionSettings(_Strict):
    """How long this playbook's reports and cached step results are kept on disk.

    The scheduled ``retention`` flow deletes them when they are older than ``days`` (or than
    ``CLAUSEGATE_RETENTION_DAYS``, default 30, whichever is shorter); uploads follow
    ``CLAUSEGATE_RETENTION_DAYS`` (an upload can serve several playbooks).  Empty: that setting alone.
    """

    days: float | None = Field(None, gt=0, description="keep this playbook's reports and cached results at most "
                               "this many days (also caps cache.expiration_days); empty: CLAUSEGATE_RETENTION_DAYS")


class Playbook(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str = ""
    categories: list[CategoryName] = Field(min_length=1)
    high_risk: list[GateableName] = []
    gates: list[Gate] = []
    steps: Steps = Steps()
    budgets: Budgets = Budgets()
    cache: CacheSettings = CacheSettings()
    retention: RetentionSettings = RetentionSettings()
    positions: list[Position] = Field(default_factory=list, description="the team's standard per category "
                                      "(clausegate/review/positions.py)")
    custom_categories: list[CustomCategory] = Field(
        default_factory=list, description="clause types the team defines by a question and 3-10 example clauses "
                                          "(clausegate.review.custom_categories); not CUAD names")
    model_review: ModelReview = Field("low_confidence", description=_MODEL_REVIEW)
    possible_findings: Literal["gate", "note"] = Field(
        "gate", description="a 'possible' finding (scored near the threshold) in a gated category: 'gate' suspends "
                            "the run for a person; 'note' lists it for a person in the report and the gate message "
                            "without suspending (docs/quality.md shows what that costs in recall)")

    @field_validator("categories", "high_risk", mode="before")
    @classmethod
    def _expand_all(cls, value):
        if value == "all":
            return list(CATEGORIES)
        return value

    @field_validator("categories")
    @classmethod
    def _canonical(cls, values: list[str]) -> list[str]:
        names = [_canonical_category(v) for v in values]
        return list(dict.fromkeys(names))

    @field_validator("high_risk")
    @classmethod
    def _canonical_or_custom(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(_cuad_or_custom(v) for v in values))

    @model_validator(mode="after")
    def _gates_and_risks_are_reviewed(self) -> Playbook:
        """``high_risk`` and ``gates`` name reviewed CUAD categories or the playbook's custom ones; ``positions``
        CUAD ones only.  A name that is neither CUAD's nor a custom category's is refused as unknown."""
        custom = set(self.custom_names)
        for field_name, names in (("high_risk", self.high_risk), ("gates", [g.category for g in self.gates])):
            unknown = [n for n in names if n not in CATEGORIES and n not in custom]
            if unknown:
                raise ValueError(
                    f"{field_name}: unknown clause category {_clipped(repr(unknown[0]))}{_closest(unknown[0])} "
                    "(neither one of CUAD's names nor a name in custom_categories: "
                    f"{_clipped(sorted(custom)) if custom else 'none defined'}); {_LIST_THEM}")
        wanted = set(self.categories) | custom
        for field_name, names in (("high_risk", self.high_risk), ("gates", [g.category for g in self.gates]),
                                  ("positions", [p.category for p in self.positions])):
            stray = [n for n in names if n not in wanted]
            if stray:
                raise ValueError(f"{field_name} names categories not in 'categories': {stray}")
        named = [p.category for p in self.positions]
        twice = sorted({n for n in named if named.count(n) > 1})
        if twice:
            raise ValueError(f"positions gives more than one position for {twice}")
        return self

    @model_validator(mode="after")
    def _custom_names_are_new(self) -> Playbook:
        names = [c.name.lower() for c in self.custom_categories]
        clash = [c.name for c in self.custom_categories if c.name.lower() in {n.lower() for n in CATEGORIES}]
        if clash or len(set(names)) != len(names):
            raise ValueError(f"custom_categories must have new, distinct names (CUAD has {clash})" if clash
                             else "custom_categories names repeat")
        return self

    @property
    def custom_names(self) -> list[str]:
        """The names of the playbook's own clause types (``custom_categories``), in order."""
        return [c.name for c in self.custom_categories]

    def model_may_clear(self, category: str) -> bool:
        """Whether a model's answer may take a low-confidence finding of ``category`` off the gate."""
        own = next((g.model_review for g in self.gates if g.category == category and g.model_review), None)
        return (own or self.model_review) != "never"

    @property
    def gated_categories(self) -> list[str]:
        return [g.category for g in self.gates]

    @property
    def position_gated(self) -> list[str]:
        """Categories a position may send to the gate (``gate_on``), beyond ``gates``."""
        return [p.category for p in self.positions if p.gate_on and p.category not in self.gated_categories]


# One attempt of a model step (one Prefect task run attempt, which ``timeout_seconds`` bounds) sends
# at most this many HTTP requests: the answer and one repair call (``providers.structured``).
REQUESTS_PER_ATTEMPT = 2


def check_step_timeouts(book: Playbook, http_timeouts: dict[str, tuple[float, float]], *,
                        extractor: str | None = None) -> None:
    """Reject a playbook whose model-step timeout cannot hold one attempt's HTTP requests.

    ``http_timeouts``: model block name -> (connect, read) seconds (``read_timeout_seconds`` of the
    block).  Prefect's ``timeout_seconds`` bounds each attempt of the step's task; one attempt sends
    up to ``REQUESTS_PER_ATTEMPT`` requests, each allowed connect + read seconds, so a shorter step
    timeout kills a call the provider may still answer (an uncoded ``TimedOut``).  ``extractor``
    overrides ``steps.extract.extractor`` (the ``--extractor`` of a review).  Raises PlaybookError
    naming the field and the figures."""
    problems = []
    steps = (("extract", book.steps.extract, extractor or book.steps.extract.extractor),
             ("generate", book.steps.generate, book.steps.generate.provider))
    for step, settings, block in steps:
        if not block or block == "offline" or block not in http_timeouts:
            continue
        connect, read = http_timeouts[block]
        needed = REQUESTS_PER_ATTEMPT * (connect + read)
        if settings.timeout_seconds < needed:
            problems.append(
                f"steps.{step}.timeout_seconds: {settings.timeout_seconds:g} s is shorter than one attempt's HTTP "
                f"time with block '{block}': {REQUESTS_PER_ATTEMPT} requests (answer + one repair) x (connect "
                f"{connect:g} s + read {read:g} s) = {needed:g} s")
    if problems:
        raise PlaybookError(
            f"playbook {book.name} is invalid: " + "; ".join(problems),
            hint="raise the named steps.<step>.timeout_seconds to at least the figure given, or lower "
                 "connect_timeout_seconds/read_timeout_seconds in the model block (not the other way round: a "
                 "longer HTTP timeout needs a longer step timeout). A provider that hangs is cut short by the "
                 "block's circuit breaker, not by the step timeout.")


def builtin_playbooks() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        location = ".".join(_clipped(x) for x in item["loc"]) or "(top level)"
        parts.append(f"{location}: {_clipped(item['msg'], 3 * _SHOWN)}")
    more = len(parts) - 5
    return "; ".join(parts[:5]) + (f"; and {more} more" if more > 0 else "")


# A playbook is a few KB of plain YAML (the built-in ones are under 4 KB): anything far larger, nested
# deeper, or using tags or aliases is refused before it is built, with one coded error and no traceback.
MAX_PLAYBOOK_BYTES = 256 * 1024
MAX_PLAYBOOK_DEPTH = 16
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SHOWN = 80  # at most this many characters of anything taken from the file appear in a message


def _clipped(text: object, limit: int = _SHOWN) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "…"


def _refuse(origin: str, why: str) -> PlaybookError:
    return PlaybookError(f"playbook {origin} is invalid: {why}",
                         hint="start from clausegate/review/playbooks/default.yaml: plain YAML mappings, lists and "
                              f"scalars, at most {MAX_PLAYBOOK_BYTES // 1024} KB and {MAX_PLAYBOOK_DEPTH} levels deep")


def _grammar_only(quoted: re.Match) -> str:
    """Keep what the YAML grammar expected (``','``, ``']'``, ``'<block end>'``); a longer quote may be the file's
    own text, which a message never repeats."""
    inner = quoted.group(0)[1:-1]
    return quoted.group(0) if len(inner) <= 3 or re.fullmatch(r"<[a-z ]+>", inner) else "'…'"


def _check_shape(text: str, origin: str) -> None:
    """Walk the YAML events (the parser is iterative, so no depth can overflow the stack): refuse deep
    nesting, tags (``!!python/object``, ``!x``) and aliases (a few lines that expand to millions of nodes)."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            where = f"line {event.start_mark.line + 1}"
            if isinstance(event, yaml.AliasEvent):
                raise _refuse(origin, f"{where}: YAML aliases (*name) are not allowed in a playbook")
            if getattr(event, "tag", None) is not None:  # the parser sets it only for a tag written in the file
                raise _refuse(origin, f"{where}: YAML tags (!…) are not allowed in a playbook")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_PLAYBOOK_DEPTH:
                    raise _refuse(origin, f"{where}: nested more than {MAX_PLAYBOOK_DEPTH} levels deep")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as exc:  # its str() quotes the file around the error: say where and what only
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = re.sub(r"'[^']*'|\"[^\"]*\"", _grammar_only, str(exc.problem or exc.context or "syntax error"))
        raise PlaybookError(f"playbook {origin} is not valid YAML{where}: {_clipped(problem)}",
                            hint="fix the YAML syntax there") from None
    except yaml.YAMLError:
        raise PlaybookError(f"playbook {origin} is not valid YAML", hint="fix the YAML syntax") from None


def parse_playbook(text: str, *, origin: str = "<string>") -> Playbook:
    if len(text) > MAX_PLAYBOOK_BYTES:
        raise _refuse(origin, f"it is larger than {MAX_PLAYBOOK_BYTES // 1024} KB")
    _check_shape(text, origin)
    try:
        data = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, RecursionError, ValueError):  # _check_shape let nothing of the kind through
        raise PlaybookError(f"playbook {origin} is not valid YAML", hint="fix the YAML syntax") from None
    if not isinstance(data, dict):
        raise PlaybookError(f"playbook {origin} must be a YAML mapping",
                            hint="start from clausegate/review/playbooks/default.yaml")
    try:
        return Playbook.model_validate(data)
    except ValidationError as exc:
        raise PlaybookError(
            f"playbook {origin} is invalid: {_describe(exc)}",
            hint="correct the named field(s); see clausegate/review/playbooks/default.yaml for a valid example",
        ) from None


@lru_cache(maxsize=32)
def load_playbook(name_or_path: str) -> Playbook:
    """Load a built-in playbook by name, or a YAML file by path."""
    builtin = BUILTIN_DIR / f"{name_or_path}.yaml"
    path = builtin if builtin.is_file() else Path(name_or_path)
    if not path.is_file():
        raise PlaybookError(
            f"playbook {name_or_path!r} not found",
            hint=f"use one of {builtin_playbooks()} or a path to a .yaml file",
        )
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_PLAYBOOK_BYTES + 1)
    except OSError as exc:
        raise PlaybookError(f"playbook {path} cannot be read: {exc.strerror or type(exc).__name__}",
                            hint="check the path and its permissions") from None
    if len(raw) > MAX_PLAYBOOK_BYTES:
        raise _refuse(str(path), f"it is larger than {MAX_PLAYBOOK_BYTES // 1024} KB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(str(path), "it is not UTF-8 text") from None
    return parse_playbook(text, origin=str(path))
