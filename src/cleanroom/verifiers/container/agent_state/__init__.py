"""The agent's state on its way to the verifier, all of it hostile input: tar archives
checked and filtered (`state_archive`), where its links lead in the verifier's container
(`links`), and Harbor's artifacts with their manifest (`artifacts`)."""
