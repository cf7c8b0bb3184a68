#!/usr/bin/env bash
# Build the local base image from Debian packages alone: debootstrap a minimal bookworm
# into a folder, add the host's CA bundle (so pip and curl inside trust the same
# certificates as the host), and import the folder as an image.
set -euo pipefail
image="${1:-cleanroom/base:bookworm}"
mirror="${2:-http://deb.debian.org/debian}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

debootstrap --variant=minbase \
  --include=python3,python3-pytest,python3-venv,ca-certificates,procps,curl,coreutils,git \
  bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  echo "build-base-image: debootstrap failed" >&2
  exit 1
}
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*

ca=/etc/ssl/certs/ca-certificates.crt
tar -C "$work/rootfs" -c . | docker import \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV PIP_CERT=$ca" --change "ENV SSL_CERT_FILE=$ca" --change "ENV REQUESTS_CA_BUNDLE=$ca" \
  --change "ENV LANG=C.UTF-8" \
  --change 'CMD ["/bin/bash"]' \
  - "$image" >/dev/null
echo "built $image"
