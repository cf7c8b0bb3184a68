#!/bin/sh
# A slow service: it publishes its token, then says it is ready, a few seconds after the
# container starts. The container's own command runs at once (exec "$@").
(
  sleep 3
  mkdir -p /var/lib/svc
  echo "service-generation 1" > /var/lib/svc/token
  touch /var/lib/svc/ready
) &
exec "$@"
