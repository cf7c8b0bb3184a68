"""``cleanroom run`` and ``cleanroom soak``: placeholders until the harness loop lands."""


def run() -> None:
    """Run windows of rollouts and isolation tests."""
    raise NotImplementedError


def soak() -> None:
    """Run the harness loop for hours with the soak trial counts."""
    raise NotImplementedError
