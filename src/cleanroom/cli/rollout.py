"""``cleanroom rollout``: placeholder until the smoke rollouts land."""


def rollout() -> None:
    """Run one smoke rollout."""
    raise NotImplementedError
