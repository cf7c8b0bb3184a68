"""Container reward verifier: Harbor-layout tasks verified in `shared`, `cleared` or `sealed` mode.

The packages, by job:

- `task`: loading a task folder into its typed model (``task.toml``, Harbor's field table,
  the compose file).
- `runtime`: where verification runs (`runtime.VerificationRuntime`) and its Docker
  implementation, the only code that talks to the daemon.
- `run`: a verification run as steps over a frozen context, each returning a typed result
  (the compose services and the healthcheck among them).
- `agent_state`: the agent's state on its way to the verifier (archives, links, artifacts).
- `decision`: the pure core that turns what a run observed into an `Outcome` (reward
  parsing, tamper classification, the runner witness, multi-step scores, the verdict).

`modes` says what each mode does, `verify_options` what runs and how, `verify` strings the
steps together, and `side_by_side` runs many verifications in one bounded pool.

The floors, top to bottom (``[tool.importlinter]`` in ``pyproject.toml`` holds them):
`verify` and `side_by_side`, `run`, `runtime`, `agent_state`, `decision`, `task`, `modes`.
"""
