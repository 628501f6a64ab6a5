"""Key terms offline: dates, durations, jurisdictions, and what a contract states about its term and renewal."""
