"""cleanroom inside other harnesses: `harbor` (needs the ``harbor`` extra) and the
harness-neutral part it uses, `acted_on`."""
