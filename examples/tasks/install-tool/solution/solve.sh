#!/bin/bash
set -euo pipefail
dpkg -i /opt/packages/greet_1.0_all.deb
sed -i 's/^greeting=.*/greeting=bonjour/' /etc/greet/greet.conf
