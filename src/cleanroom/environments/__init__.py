"""Desktop environments on Linux: one Xvfb display, Unix user, D-Bus session, AT-SPI bus,
LibreOffice profile and browser profile per environment, run as a pool by a supervisor.

Its parts: `x11` (display, input, screen, clipboard, AT-SPI), `session` (account, login
session, sandbox, programs), `containers` (programs in containers), `pool` (each
environment, the pool, its supervisor and clean-up), `policy` (what a policy may do, in
Python and over HTTP), `leaky_setups` (pools with one protection removed on purpose) and
`errors` (the pool's named failures).

The pool's public surface is `Pool` (in-process), `PolicyHandle` (what a policy may do,
in Python or over HTTP) and `PoolProcess` (the detached supervisor behind ``cleanroom
envs``).
"""
