"""The canary environment env00: the watcher that samples it and its parked console."""
