#!/usr/bin/env bash
# Install what siemctl's build, tests and lab need on a Debian 12 host (run by
# `make test`, `make demo` and `make dist`; also usable before make exists:
# it installs make). Idempotent and quiet when everything is present.
# Assumed: Debian (apt-get), root or sudo, Go >= 1.26.8 on PATH.
set -euo pipefail

installed() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null | grep -qx installed; }

# A Java 17 runtime where the lab looks for one: JAVA_HOME, else any home
# under /usr/lib/jvm whose release file says 17 (any architecture).
have_java17() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && grep -qs '^JAVA_VERSION="17[."]' "$JAVA_HOME/release"; then
    return 0
  fi
  local r
  for r in /usr/lib/jvm/*/release; do
    [ -x "$(dirname "$r")/bin/java" ] && grep -qs '^JAVA_VERSION="17[."]' "$r" && return 0
  done
  return 1
}

command -v apt-get >/dev/null || { echo "install-deps: apt-get is required (a Debian or Ubuntu host)" >&2; exit 1; }
need=()
command -v make >/dev/null || need+=(make)
[ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)   # Go module proxy, Maven Central over TLS
command -v dpkg-scanpackages >/dev/null || need+=(dpkg-dev)
have_java17 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
command -v logger >/dev/null || need+=(bsdutils)
command -v unshare >/dev/null || need+=(util-linux)
command -v setpriv >/dev/null || need+=(util-linux)
command -v openssl >/dev/null || need+=(openssl)
# go test -race needs cgo: a C compiler and the C library headers (gcc only
# recommends libc6-dev, so a --no-install-recommends gcc lacks them).
command -v gcc >/dev/null || need+=(gcc)
installed libc6-dev || need+=(libc6-dev)
[ -x /lib/systemd/systemd ] || need+=(systemd)
command -v ssh-keygen >/dev/null || need+=(openssh-client)   # upgrade report --sign-key tests
command -v chromium >/dev/null || need+=(chromium)           # the upgrade report rendered in e2e
command -v rpm >/dev/null || need+=(rpm)                     # make dist: the .rpm contents are checked
command -v ansible-playbook >/dev/null || need+=(ansible-core)  # the distributed roll through ansible/*.yml
command -v curl >/dev/null || need+=(curl)                   # e2e tests follow the curl fixes siemctl prints

if [ ${#need[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: missing ${need[*]}: run as root (apt-get install ${need[*]})" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "install-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
