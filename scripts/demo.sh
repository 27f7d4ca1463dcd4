#!/usr/bin/env bash
# make demo: build, bring up the lab, run siemctl health against it.
set -euo pipefail
dir=${1:-$PWD/.lab/demo}
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
mkdir -p "$(dirname "$dir")"
if [ -f "$dir/lab.json" ]; then
  echo "lab already at $dir (make demo-down to remove it)" >&2
else
  bin/siemlab up --dir "$dir"
fi
# shellcheck disable=SC1091
. "$dir/env"
echo
echo "\$ siemctl health"
bin/siemctl health || true
echo
echo "The lab keeps running. Try:"
echo "  . $dir/env && bin/siemctl health --deep"
echo "  bin/siemlab fault --dir $dir allocation-primaries && bin/siemctl health"
echo "  make demo-down"
