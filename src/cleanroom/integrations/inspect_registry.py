"""What cleanroom registers with inspect_ai, loaded through its ``inspect_ai`` entry point
(``cleanroom = "cleanroom.integrations.inspect_registry"``): the task
``cleanroom/harbor_sealed``, the scorer ``cleanroom/sealed_harbor_scorer`` and the
``cleanroom`` sandbox. Importing the modules registers them."""

from cleanroom.integrations.inspect_sandbox import CleanroomSandbox
from cleanroom.integrations.inspect_scorer import harbor_sealed, sealed_harbor_scorer

__all__ = ["CleanroomSandbox", "harbor_sealed", "sealed_harbor_scorer"]
