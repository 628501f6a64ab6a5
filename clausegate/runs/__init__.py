"""What every layer knows about a Prefect run, below all of them: run states and error codes (``states``), the
tags a run carries (``tags``), the attempt fence (``attempts``) and step timing (``timing``).  Imports nothing of
ClauseGate's but ``errors``."""
