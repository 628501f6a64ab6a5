"""JSON answers validated by a pydantic schema, with at most ONE repair call.

``complete_json`` returns the parsed model and every ModelResponse it paid for. Failures raise
``OutputTruncated`` (the model hit max_tokens: a repair would be truncated too) or
``InvalidOutput`` (still not valid after the repair); both carry ``responses`` for accounting.
"""

from __future__ import annotations

import re
from typing import Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from clausegate.providers.base import ModelResponse
from clausegate.providers.errors import InvalidOutput, OutputTruncated
from clausegate.review.llm.prompts import render
from clausegate.review.llm.salvage import json_objects

__all__ = ["complete_json", "parse_json_object", "repair_prompt"]

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_MAX_ECHO = 8000


class _Completes(Protocol):
    provider: str
    block_name: str

    def complete(self, system: str, user: str, *, max_tokens: int | None = ...,
                 use_fallback: bool = ...) -> ModelResponse: ...


class _Unusable(Exception):
    """The text has no JSON object, or it does not validate; ``str()`` says why, for the repair prompt."""


def complete_json(
    client: _Completes,
    system: str,
    user: str,
    schema: type[M],
    *,
    max_tokens: int | None = None,
    use_fallback: bool = False,
) -> tuple[M, list[ModelResponse]]:
    """Ask for JSON matching ``schema``; one repair call if the answer is unusable."""
    responses = [client.complete(system, user, max_tokens=max_tokens, use_fallback=use_fallback)]
    try:
        return _validated(responses[-1], schema, client, responses), responses
    except _Unusable as problem:
        prompt = repair_prompt(user, responses[-1].text, str(problem), schema)
        responses.append(client.complete(system, prompt, max_tokens=max_tokens, use_fallback=use_fallback))
    try:
        return _validated(responses[-1], schema, client, responses), responses
    except _Unusable as problem:
        raise InvalidOutput(
            f"{client.provider} model {responses[-1].model or '?'} answered twice without valid "
            f"{schema.__name__} JSON (after one repair call): {problem}",
            hint="check the prompt template's schema instructions, or use a stronger (fallback) model.",
            provider=client.provider,
            request_id=responses[-1].request_id,
            responses=responses,
        ) from None


def _validated(response: ModelResponse, schema: type[M], client: _Completes, responses: list[ModelResponse]) -> M:
    if response.truncated:
        raise OutputTruncated(
            f"{client.provider} model {response.model or '?'} stopped at the output limit "
            f"({response.output_tokens} tokens, stop reason {response.stop_reason!r}); the JSON is incomplete. "
            f"Request id {response.request_id or 'none'}.",
            hint=f"raise max_output_tokens in block '{client.block_name}' or ask for fewer items per call.",
            provider=client.provider,
            request_id=response.request_id,
            responses=responses,
        )
    data = parse_json_object(response.text)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise _Unusable(_describe(exc)) from None


def parse_json_object(text: str) -> dict:
    """The first JSON object in ``text`` (inside ```json fences if present); raises _Unusable."""
    for candidate in [*_FENCE.findall(text), text]:
        found = _first_object(candidate)
        if found is not None:
            return found
    raise _Unusable("the answer contains no JSON object")


def _first_object(text: str) -> dict | None:
    return next(json_objects(text), None)


def _describe(exc: ValidationError) -> str:
    lines = [
        f"{'.'.join(str(p) for p in error['loc']) or '(root)'}: {error['msg']}"
        for error in exc.errors(include_url=False)[:20]
    ]
    return f"{exc.error_count()} validation error(s): " + "; ".join(lines)


def repair_prompt(user: str, previous_output: str, error: str, schema: type[BaseModel]) -> str:
    """The original request, the previous answer and the error, each clearly delimited
    (``prompts/repair_answer.j2``).  The previous answer is untrusted like contract text (it can echo
    it): its tag characters are neutralised, so it cannot close its block or steer the repair."""
    previous = previous_output if len(previous_output) <= _MAX_ECHO else previous_output[:_MAX_ECHO] + "\n[...cut]"
    return render("repair_answer.j2", user=user.rstrip("\n"), previous=previous, error=error,
                  schema=schema.model_json_schema())
