"""``cleanroom verify``: placeholder until the container verifier lands."""


def verify() -> None:
    """Verify a container task."""
    raise NotImplementedError
