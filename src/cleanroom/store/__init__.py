"""The stores: every SQL statement in cleanroom lives in this package."""
