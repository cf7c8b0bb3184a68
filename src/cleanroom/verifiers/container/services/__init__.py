"""What runs beside and before the agent: the task's compose file (`compose`, its records
in `compose_model`, its keys' values in `compose_fields`), the services started beside the
agent's container (`sidecars`), and waiting for the environment's healthcheck
(`healthcheck`)."""
