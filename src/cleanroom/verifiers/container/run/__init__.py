"""A verification run as steps over a frozen context (`context.RunContext`) and the
resources that vary (`context.Resources`), each step returning a typed result:
cleanroom's own rollout (`own_rollout`), a container another harness started
(`existing_container`), the verification they share (`verification`: `in_place` for
``shared`` and ``cleared``, `sealed` for ``sealed`` and a separate verifier), and the
pieces those use (`commands`, `freeze`, `state_export`, `artifact_export`, `witness_folder`,
`recording`)."""
