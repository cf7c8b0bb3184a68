"""The policy interface: the actions a policy may take, the handle in Python and the same
interface over HTTP."""
