"""Verifiers: the checkers that turn an environment's final state into an `Outcome`."""
