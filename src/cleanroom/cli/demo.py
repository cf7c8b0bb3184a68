"""``cleanroom demo``: placeholder."""


def demo() -> None:
    """Run the demo."""
    raise NotImplementedError
