"""Red team for the container verifier: forging attacks × verifier modes, with a verdict."""
