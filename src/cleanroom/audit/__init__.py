"""Auditing a dataset of tasks: which tasks are broken, flaky, leaky or forgeable.

`jobs` finds the tasks, `probes` holds the agent scripts an audit runs, `findings` turns
what the runs gave into flags (pure), `job` runs one task's audit through the container
verifier or the OSWorld validator, `pool` runs the jobs on this machine or on a Ray
cluster, and `html` renders the results as one page. The results are written by
`cleanroom.store.auditdb` alone.
"""
