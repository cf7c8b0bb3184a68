"""Desktop environments on Linux: one Xvfb display, Unix user, D-Bus session, AT-SPI bus,
LibreOffice profile and browser profile per environment, run as a pool by a supervisor.

The pool's public surface is `Pool` (in-process), `PolicyHandle` (what a policy may do,
in Python or over HTTP) and `PoolProcess` (the detached supervisor behind ``cleanroom
envs``).
"""
