"""The pool of environments: each environment, the pool that drives them, its record on
disk, generations, the watchdog, the detached supervisor and orphan clean-up."""
