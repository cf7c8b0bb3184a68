"""The pure core: tokens, outcomes, isolation rows, the published-number rule. No I/O."""
