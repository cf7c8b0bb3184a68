"""The verify server: leases, a form and a frame counter that never trust the agent.

The harness holds the key and creates a lease per rollout; the agent only ever sees the
lease's form and frame pages. Everything a submission is attributed to comes from the
lease, never from the request, and every token inside a submission is recorded with the
environment it names, so a token delivered across environments shows up in the audit.
"""
