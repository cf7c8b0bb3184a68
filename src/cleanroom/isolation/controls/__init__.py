"""The positive controls: the control forced inside one session, every check under each
leaky setup or fault it names, and the canary's and the token sweep's planted controls."""
