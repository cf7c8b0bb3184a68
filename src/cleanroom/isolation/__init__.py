"""Isolation on the environment pool: the contract every check implements (`battery`), the
checks and their one table (`checks`), the controls that prove them (`controls`) and the canary's
watcher and parked console (`canary`)."""
