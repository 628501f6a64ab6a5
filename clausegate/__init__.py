"""ClauseGate: contract review as a Prefect flow of cached, validated steps."""

__version__ = "0.1.0"
