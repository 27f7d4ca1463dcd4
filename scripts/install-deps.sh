#!/usr/bin/env bash
# Install what siemctl's tests and lab need on a Debian host. Idempotent and
# quiet when everything is present. Downloads are cached under ~/.cache.
set -euo pipefail

need=()
command -v dpkg-scanpackages >/dev/null || need+=(dpkg-dev)
command -v dpkg-deb >/dev/null || need+=(dpkg)
command -v apt-get >/dev/null || { echo "apt-get is required (Debian/Ubuntu host)" >&2; exit 1; }
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
command -v logger >/dev/null || need+=(bsdutils)
command -v unshare >/dev/null || need+=(util-linux)
command -v setpriv >/dev/null || need+=(util-linux)
command -v openssl >/dev/null || need+=(openssl)
command -v gcc >/dev/null || need+=(gcc)   # go test -race needs cgo
[ -x /lib/systemd/systemd ] || need+=(systemd)
command -v ssh-keygen >/dev/null || need+=(openssh-client)   # upgrade report --sign-key tests
command -v chromium >/dev/null || need+=(chromium)           # the upgrade report rendered in e2e

if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
