#!/bin/sh
# Measures a siemctl binary's `rules check` against the real Wazuh v4.9.0
# ruleset and local files (read from ../shared/reference/wazuh-real, never
# copied) and against the seeded defects of testdata/seeded:
#   false problems on the stock ruleset, real local files refused (exit 3),
#   seeded defects missed (no finding of the right severity on the right line;
#   with --codes also the right code), and findings on lines without a
#   seeded defect (testdata/seeded/clean-dialect has none).
# Usage (from the module root): internal/rules/testdata/measure-rules.sh BIN [--codes]
set -eu
bin=$1
codes=${2:-}
real=../shared/reference/wazuh-real
seeded=internal/rules/testdata/seeded
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/real"
tar -xzf "$real/wazuh-v4.9.0/ruleset.tar.gz" -C "$work/real"

check() { # install_dir, then args
	inst=$1
	shift
	SIEMCTL_MANAGER_INSTALL_DIR=$inst "$bin" --config /dev/null -o json rules check "$@" 2>/dev/null || true
}
count() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d.get("problems") or []))'; }

# 1. The stock ruleset checked as the stock ruleset (old binaries: as a local dir).
if "$bin" rules check --help 2>/dev/null | grep -q -- --as-stock; then
	stock=$(check "$work/real" --as-stock --dir "$work/real/ruleset" | count)
else
	stock=$(check "$work/real" --dir "$work/real/ruleset" | count)
fi

# 2. Real local files against the real stock ruleset.
refused=0
n=0
local_case() { # name, etc dir
	n=$((n + 1))
	if ! SIEMCTL_MANAGER_INSTALL_DIR="$work/real" "$bin" --config /dev/null rules check --dir "$2" >/dev/null 2>&1; then
		refused=$((refused + 1))
		echo "refused: $1" >&2
	fi
}
mkdir -p "$work/l/pkg/rules" "$work/l/pkg/decoders"
cp "$work/real/etc/local_rules.xml" "$work/l/pkg/rules/"
cp "$work/real/etc/local_decoder.xml" "$work/l/pkg/decoders/"
local_case package-defaults "$work/l/pkg"
for d in b2-custom-example b3-overwrite-5710 b4-sibling-decoders b5-decoder-syntax-examples b7-sysmon-child-rule; do
	cp -r "$real/docs-examples/$d" "$work/l/$d"
	local_case "$d" "$work/l/$d"
done
mkdir -p "$work/l/b6/decoders"
cp "$work/real/ruleset/decoders/0310-ssh_decoders.xml" "$work/l/b6/decoders/"
printf '<ossec_config>\n  <ruleset>\n    <decoder_exclude>ruleset/decoders/0310-ssh_decoders.xml</decoder_exclude>\n  </ruleset>\n</ossec_config>\n' >"$work/l/b6/ossec.conf"
local_case b6-copied-ssh-decoders "$work/l/b6"

# 3. Seeded defects against the small stand-in stock ruleset.
mkdir -p "$work/seedinst"
cp -r "$seeded/_stock" "$work/seedinst/ruleset"
missed=0
total=0
extra=0
for d in "$seeded"/*/; do
	name=$(basename "$d")
	case $name in _*) continue ;; esac
	out=$(check "$work/seedinst" --dir "$d")
	extra=$((extra + $(printf '%s' "$out" | python3 -c '
import json,sys
want=set(l.split()[0] for l in open(sys.argv[1]) if l.strip())
d=json.loads(sys.stdin.read() or "{}")
print(sum(1 for p in d.get("problems") or [] if "%s:%d" % (p["file"], p["line"]) not in want))' "$d/want")))
	while read -r where sev code; do
		[ -n "$where" ] || continue
		total=$((total + 1))
		if ! printf '%s' "$out" | python3 -c '
import json,sys
where,sev,code,codes=sys.argv[1:]
f,l=where.rsplit(":",1)
d=json.loads(sys.stdin.read() or "{}")
ok=any(p["file"]==f and p["line"]==int(l) and p["severity"]==sev and (codes!="--codes" or (p.get("code") or "-")==code) for p in d.get("problems") or [])
sys.exit(0 if ok else 1)' "$where" "$sev" "$code" "$codes"; then
			missed=$((missed + 1))
			echo "missed: $name $where $sev $code" >&2
		fi
	done <"$d/want"
done
echo "false problems on the v4.9.0 stock ruleset: $stock"
echo "real local files refused (exit 3): $refused of $n"
echo "seeded defects missed: $missed of $total"
echo "findings on lines without a seeded defect: $extra"
