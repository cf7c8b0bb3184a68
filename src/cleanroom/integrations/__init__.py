"""cleanroom where rewards are consumed: the public API for a container or a Harbor
environment an agent already acted in (`container`, `environment`), and the thin
adapters over it for the harnesses, trainers and evaluators that take rewards in their
own shapes (Harbor's verifier hook, TRL, verifiers, verl, inspect_ai)."""
