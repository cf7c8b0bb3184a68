"""The harness: jobs that tie verifiers, environments, isolation checks and the run database."""
