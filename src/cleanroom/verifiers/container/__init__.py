"""Container reward verifier: Harbor-layout tasks verified in `shared`, `cleared` or `sealed` mode.

The pure core (task model, reward parsing, tamper classification, the verdict) has no
Docker in it; `docker_runtime` and `overlay` are the only modules that touch the daemon or
the host's view of a container, and `verify` strings the steps together.
"""
