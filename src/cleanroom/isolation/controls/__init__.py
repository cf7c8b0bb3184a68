"""The controls: the positive control forced inside one session, the leaky controls (every
check under each leaky setup or fault it names), and the canary's and the token sweep's
planted controls."""
