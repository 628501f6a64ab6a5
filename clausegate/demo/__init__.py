"""Fakes of external services that speak the real protocols on 127.0.0.1 (for tests and local runs).

``from clausegate.demo import FakeModelServer`` works; the import is lazy so that
``python -m clausegate.demo.model_server`` runs without a double import.
"""

from typing import Any

__all__ = ["DEFAULT_API_KEY", "FAULTS", "FakeModelServer", "RecordedRequest", "prompts_of"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from clausegate.demo import model_server

        return getattr(model_server, name)
    raise AttributeError(f"module 'clausegate.demo' has no attribute {name!r}")
