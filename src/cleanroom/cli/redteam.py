"""``cleanroom redteam``: placeholder until the red-team matrix lands."""


def redteam() -> None:
    """Run the red-team matrix."""
    raise NotImplementedError
