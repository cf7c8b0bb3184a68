"""The pure core of a verification: what a run observed, turned into an `Outcome`.

`reward` (reward files with Harbor's meaning), `tamper` (what the agent's filesystem
changes mean), `witness` (the runner witness's lines), `multi_step` (a multi-step task's
score) and `verdict` (the one place an outcome is made, from `verdict.VerifierFacts`).
Nothing here touches Docker, a file or a clock.
"""
