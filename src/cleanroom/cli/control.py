"""``cleanroom control``: placeholder until the positive control lands."""


def control() -> None:
    """Run the positive control."""
    raise NotImplementedError
