"""Where remembered model answers live (``clausegate.review.llm.answer_memory``): Prefect's result store of the
model task, so they sit beside its cached answers, sealed by the same serializer (``at_rest.SEALED_PICKLE``), on
the same storage, and expire with the playbook's cache expiry.  Outside a flow or task run nothing is remembered.

A record that cannot be read (another key, another shape, a damaged file) is a miss, never an error: the pair is
asked again and written anew."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from prefect import Task
from prefect.context import FlowRunContext, TaskRunContext
from prefect.results import ResultStore, get_result_store
from pydantic import BaseModel

from clausegate.review.llm.answer_memory import CallReceipt, PassageAnswers

logger = logging.getLogger(__name__)


class AnswerStore:
    def __init__(self, store: ResultStore, task: Task):
        self._store = store
        self._expiry = task.cache_expiration

    @classmethod
    def of(cls, task: Task) -> AnswerStore | None:
        """The store ``task`` persists its results to, inside a run; None outside one, or for a task's bare function
        (a bench calling ``.fn`` has no result settings, and must not share answers between its modes)."""
        if not isinstance(task, Task) or (FlowRunContext.get() is None and TaskRunContext.get() is None):
            return None
        return cls(get_result_store().update_for_task(task), task)

    def recall(self, keys: dict[str, str]) -> dict[str, PassageAnswers]:
        """The records under ``keys`` (name -> store key) that can be read, by name."""
        return {name: found for name, key in keys.items() if (found := self._read(key, PassageAnswers)) is not None}

    def receipts(self, calls: set[str]) -> dict[str, CallReceipt]:
        return {call: found for call in sorted(calls) if (found := self._read(call, CallReceipt)) is not None}

    def keep(self, records: dict[str, BaseModel]) -> None:
        expiration = datetime.now(UTC) + self._expiry if self._expiry else None
        for key, record in records.items():
            try:
                self._store.write(record.model_dump(mode="json"), key=key, expiration=expiration)
            except Exception as error:  # not remembered: the next version asks again, nothing else is lost
                logger.warning("could not remember a model answer (%s): %s", key, error)

    def _read(self, key: str, kind: type[BaseModel]):
        try:
            if not self._store.exists(key):
                return None
            return kind.model_validate(self._store.read(key).result)
        except Exception as error:
            logger.debug("remembered model answer %s not used: %s", key, error)
            return None


__all__ = ["AnswerStore"]
