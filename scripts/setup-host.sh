#!/usr/bin/env bash
# Installs the Debian packages the test suites use when any is missing (CI and developers run as
# root on Debian). Runs before `npm test` (the `pretest` script). Idempotent and quick when all are
# present. Set SLIPWAY_SKIP_HOST_SETUP=1 to skip (a test that then misses a tool fails and names
# the package).
set -euo pipefail
[ "${SLIPWAY_SKIP_HOST_SETUP:-}" = "1" ] && exit 0

# package -> a file it installs (checked to decide whether the package is present)
declare -A probes=(
  [bubblewrap]=/usr/bin/bwrap
  [runsc]=/usr/bin/runsc
  [buildah]=/usr/bin/buildah
  [git]=/usr/bin/git
  [python3-click]=/usr/lib/python3/dist-packages/click
  [python3-dotenv]=/usr/lib/python3/dist-packages/dotenv
  [python3-pathspec]=/usr/lib/python3/dist-packages/pathspec
  [python3-httpx]=/usr/lib/python3/dist-packages/httpx
  [skopeo]=/usr/bin/skopeo
  [umoci]=/usr/bin/umoci
  [docker-registry]=/usr/bin/docker-registry
  [busybox-static]=/bin/busybox
  [btrfs-progs]=/usr/sbin/mkfs.btrfs
  [util-linux]=/usr/bin/nsenter
  [e2fsprogs]=/usr/sbin/mkfs.ext4
  [perl-base]=/usr/bin/perl
  [postgresql]=/usr/lib/postgresql
  [redis-server]=/usr/bin/redis-server
  [chromium]=/usr/bin/chromium
  [openssl]=/usr/bin/openssl
  [curl]=/usr/bin/curl
  [gcc]=/usr/bin/gcc
  [libc6-dev]=/usr/include/stdio.h
)

missing=()
for package in "${!probes[@]}"; do
  [ -e "${probes[$package]}" ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null; then
  echo "setup-host: missing Debian packages: ${missing[*]} (install them as root: apt-get install -y ${missing[*]})" >&2
  exit 0
fi
echo "setup-host: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-host: done" >&2
