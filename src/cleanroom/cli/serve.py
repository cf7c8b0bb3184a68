"""``cleanroom serve``: placeholder until the verify server lands."""


def serve() -> None:
    """Run the verify server."""
    raise NotImplementedError
