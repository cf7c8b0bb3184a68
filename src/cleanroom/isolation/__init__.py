"""Isolation checks that run on the environment pool: the canary and the positive control."""
