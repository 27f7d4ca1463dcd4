#!/usr/bin/env bash
# bench-upgrade-cluster.sh WORK: bench-upgrade.sh's cluster volume (BENCH_VOLUMES="... cluster"):
# the rolling upgrade of siemlab's distributed lab (three indexer nodes, the manager master and a
# worker, a dashboard) through ansible/upgrade.yml, against the plain restarts its turns contain.
# Run as root, after `make build`; bench-upgrade.sh calls it with its work directory.
#
#   1. siemlab up --topology distributed in WORK/cluster (port offset BENCH_CLUSTER_OFFSET, default
#      SIEMCTL_E2E_PORT_SHIFT + 70; no `siemlab load`: it fills single labs only);
#   2. the floor of each host, one at a time: its component restarted alone (`siemctl services
#      restart`) and timed until it is back: an indexer node listed again in the cluster's nodes by
#      another node (then green, not timed, before the next), a manager's API login answering, the
#      dashboard answering;
#   3. the roll: ansible-playbook -i WORK/cluster/inventory.ini ansible/upgrade.yml to 4.10.0,
#      timed, with `siemlab flow send` (BENCH_RATE events/s) and, where siemlab has it, `siemlab flow
#      probe` (one search a second through any indexer node) running from 10 s before to 10 s after;
#   4. the record's turns (started → finished per entry), siemctl's own work (the sum over every
#      run the roll left on every host of `upgrade status -o json RUN`'s time.siemctl_own_work_s:
#      the wall time of its steps minus their waits on components), the flow's events lost and
#      duplicated, the probe's share of searches answered with every shard.
# It writes WORK/cluster.tsv (what, name, value) and prints the cluster lines of
# `siemlab bench cluster` (lab/bench). The lab is downed at the end, also on failure.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-$ROOT/bin}
SIEMCTL=$BIN/siemctl
SIEMLAB=$BIN/siemlab
WORK=${1:?usage: bench-upgrade-cluster.sh WORK}
OFFSET=${BENCH_CLUSTER_OFFSET:-$((${SIEMCTL_E2E_PORT_SHIFT:-0} + 70))}
RATE=${BENCH_RATE:-5}
TO=${BENCH_CLUSTER_TARGET:-4.10.0}
# The wazuh layout: the search probe searches wazuh-alerts-* (in the siem layout it would find no index).
PROFILE=${BENCH_CLUSTER_PROFILE:-wazuh}
D=$WORK/cluster
TSV=$WORK/cluster.tsv
FLOW_PID= PROBE_PID=

log() { printf '%s bench-upgrade: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() {
	log "FAILED (cluster): $*"
	exit 1
}
cleanup() {
	[ -z "$PROBE_PID" ] || kill "$PROBE_PID" 2>/dev/null
	[ -z "$FLOW_PID" ] || kill "$FLOW_PID" 2>/dev/null
	wait 2>/dev/null
	[ ! -d "$D" ] || "$SIEMLAB" down --dir "$D" >"$WORK/cluster-down.log" 2>&1 || log "siemlab down --dir $D failed: see $WORK/cluster-down.log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
command -v ansible-playbook >/dev/null || die "ansible-playbook is needed (scripts/install-deps.sh installs ansible-core)"

log "cluster: distributed lab in $D, port offset $OFFSET"
"$SIEMLAB" up --topology distributed --profile "$PROFILE" --dir "$D" --port-offset "$OFFSET" >"$WORK/cluster-up.log" 2>&1 || die "siemlab up --topology distributed: see $WORK/cluster-up.log"

# on HOST CMD...: CMD in the host's environment (its env file, as the inventory's siemlab_env).
on() { (
	set -a
	# shellcheck disable=SC1090
	. "$D/hosts/$1/env"
	set +a
	shift
	NO_COLOR=1 "$@"
); }
# conf HOST KEY: the host's configuration value (read once per host below: the waits poll with it).
declare -A CONF
conf() { jq -r --arg k "$2" '.[] | select(.key == $k) | .value' <<<"${CONF[$1]}"; }
hosts() { awk -v g="[$1]" '/^\[/ { in_g = ($0 == g); next } in_g && NF && $1 !~ /^#/ { print $1 }' "$D/inventory.ini"; }
address() { awk -v h="$1" '$1 == h { for (i = 2; i <= NF; i++) if ($i ~ /^address=/) { sub(/^address=/, "", $i); print $i } }' "$D/inventory.ini"; }
secret() { cat "$D/hosts/$1/secrets/$2" 2>/dev/null || cat "$D/secrets/$2"; }
INDEXERS=$(hosts indexer) MANAGERS=$(hosts manager) DASHBOARDS=$(hosts dashboard)
[ -n "$INDEXERS" ] && [ -n "$MANAGERS" ] || die "no indexer or manager hosts in $D/inventory.ini"
for h in $INDEXERS $MANAGERS $DASHBOARDS; do
	CONF[$h]=$(on "$h" "$SIEMCTL" config view -o json) || die "siemctl config view on $h"
done

# ix HOST PATH: GET on HOST's indexer node as its configured user (the password through curl's stdin config).
ix() {
	local url ca
	url=$(conf "$1" indexer.url) ca=$(conf "$1" indexer.ca_file)
	curl -s --max-time 4 --cacert "$ca" -K- "$url$2" <<<"user = \"$(conf "$1" indexer.username):$(secret "$1" indexer)\""
}
wait_for() { # WHAT LIMIT_S CMD...: poll CMD every 0.25 s; prints the seconds it took
	local what=$1 limit=$2 t0
	t0=$(date +%s.%N)
	shift 2
	until "$@" >/dev/null 2>&1; do
		awk -v a="$t0" -v b="$(date +%s.%N)" -v l="$limit" 'BEGIN { exit !(b - a < l) }' || { log "cluster: $what not back after ${limit}s"; return 1; }
		sleep 0.25
	done
}
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

printf 'what\tname\tvalue\n' >"$TSV"

# Floors. An indexer node is back when another node lists its address in _cat/nodes.
listed() { ix "$1" '/_cat/nodes?h=ip' | awk '{ print $1 }' | grep -qx "$2"; }
green() { ix "$1" '/_cluster/health?wait_for_status=green&timeout=2s' | grep -q '"status":"green"'; }
api_login() {
	local url user ca
	url=$(conf "$1" manager.api_url) user=$(conf "$1" manager.username) ca=$(conf "$1" manager.ca_file)
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 4 --cacert "$ca" -X POST -K- "$url/security/user/authenticate" <<<"user = \"$user:$(secret "$1" manager)\"")" = 200 ]
}
dash_answers() {
	local c
	c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 4 --cacert "$(conf "$1" dashboard.ca_file)" "$(conf "$1" dashboard.url)/")
	[ "$c" != 000 ] && [ "$c" -lt 500 ]
}
other_indexer() { for h in $INDEXERS; do [ "$h" = "$1" ] || { echo "$h"; return; }; done; }
floor() { # HOST COMPONENT READY-CMD...
	local h=$1 c=$2 t0
	shift 2
	t0=$(date +%s.%N)
	on "$h" "$SIEMCTL" services restart "$c" --yes >>"$WORK/cluster-floors.log" 2>&1 || on "$h" "$SIEMCTL" services status "$c" >>"$WORK/cluster-floors.log" 2>&1 || return
	wait_for "$h $c" 600 "$@" || return
	printf 'floor\t%s\t%s\n' "$h" "$(secs "$t0")" >>"$TSV"
	log "cluster: floor $h ($c restarted alone) $(tail -1 "$TSV" | cut -f3)s"
}
first=$(echo "$INDEXERS" | head -1)
wait_for "the cluster green" 600 green "$first" || die "the distributed lab is not green"
for h in $INDEXERS; do
	o=$(other_indexer "$h")
	floor "$h" indexer listed "$o" "$(address "$h")" || die "restart of the indexer on $h: see $WORK/cluster-floors.log"
	wait_for "the cluster green after $h" 600 green "$o" || die "the cluster is not green after $h's restart"
done
for h in $MANAGERS; do floor "$h" manager api_login "$h" || die "restart of the manager on $h: see $WORK/cluster-floors.log"; done
for h in $DASHBOARDS; do floor "$h" dashboard dash_answers "$h" || die "restart of the dashboard on $h: see $WORK/cluster-floors.log"; done

# The roll, with the flow and the search probe running.
on "$first" "$SIEMCTL" indexer repository prepare --yes >"$WORK/cluster-prepare.log" 2>&1 || die "indexer repository prepare on $first: see $WORK/cluster-prepare.log"
"$SIEMLAB" flow send --dir "$D" --tag clusterroll --rate "$RATE" >"$WORK/cluster-flow.log" 2>&1 &
FLOW_PID=$!
if "$SIEMLAB" flow probe --help >/dev/null 2>&1; then
	"$SIEMLAB" flow probe --dir "$D" --json >"$WORK/cluster-probe.json" 2>"$WORK/cluster-probe.log" &
	PROBE_PID=$!
else
	log "cluster: this siemlab has no flow probe: the share of searches answered is not measured"
fi
sleep 10
mkdir -p "$WORK/ansible"
since=$(date -u +%Y%m%dT%H%M%SZ)
t0=$(date +%s.%N)
log "cluster: rolling upgrade to $TO (ansible/upgrade.yml)"
ANSIBLE_NOCOLOR=1 ANSIBLE_HOME=$WORK/ansible ANSIBLE_LOCAL_TEMP=$WORK/ansible ANSIBLE_RETRY_FILES_ENABLED=0 \
	ansible-playbook -i "$D/inventory.ini" "$ROOT/ansible/upgrade.yml" -e siemctl_target="$TO" -e siemctl_bin="$SIEMCTL" \
	>"$WORK/cluster-roll.log" 2>&1 || die "the roll: see $WORK/cluster-roll.log"
printf 'roll\t-\t%s\n' "$(secs "$t0")" >>"$TSV"
log "cluster: roll $(tail -1 "$TSV" | cut -f3)s"
sleep 10
if [ -n "$PROBE_PID" ]; then
	kill -TERM "$PROBE_PID"
	wait "$PROBE_PID"
	PROBE_PID=
	jq -r '"probe_tries\t-\t\(.tries)\nprobe_all\t-\t\(.all_shards)\nprobe_gap\t-\t\(.longest_gap_s)"' "$WORK/cluster-probe.json" >>"$TSV" ||
		log "cluster: no probe report: see $WORK/cluster-probe.log"
fi
kill -INT "$FLOW_PID"
wait "$FLOW_PID"
FLOW_PID=
"$SIEMLAB" flow check --dir "$D" --tag clusterroll --wait 4m --json 2>>"$WORK/cluster-flow.log" |
	jq -r '"events\t-\t\(.in_alerts_file)\nlost\t-\t\(.lost)\ndup\t-\t\(.duplicates)"' >>"$TSV" || log "cluster: flow check failed: see $WORK/cluster-flow.log"

# The turns (the record's entries, by the host that took each) and siemctl's own work.
on "$first" "$SIEMCTL" upgrade status --cluster -o json >"$WORK/cluster-status.json" 2>>"$WORK/cluster-roll.log"
# An entry names its node as its cluster knows it (the lab's host name) or, a dashboard, its
# URL's host (the lab host's address); every lab host has the same Identity.Host (one machine).
inventory_host() { awk -v n="$1" '$1 == n { print $1; exit } { for (i = 2; i <= NF; i++) if ($i == "address=" n) { print $1; exit } }' "$D/inventory.ini"; }
jq -r '.record.order[] | select(.started != null and .finished != null) | "\(.node) \(.started) \(.finished)"' "$WORK/cluster-status.json" |
	while read -r n s f; do
		printf 'turn\t%s\t%s\n' "$(inventory_host "$n" | grep . || echo "$n")" "$(awk -v a="$(date -d "$s" +%s.%N)" -v b="$(date -d "$f" +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
	done >>"$TSV"
grep -q '^turn' "$TSV" || log "cluster: no turns in $WORK/cluster-status.json"
own=0
for h in $INDEXERS $MANAGERS $DASHBOARDS; do
	runs=$(conf "$h" state_dir)/runs
	for r in "$runs"/*/; do
		r=$(basename "$r")
		[[ "$r" > "$since" ]] || continue
		o=$(on "$h" "$SIEMCTL" upgrade status -o json "$r" 2>/dev/null | jq -r '.time.siemctl_own_work_s // 0')
		own=$(awk -v a="$own" -v b="${o:-0}" 'BEGIN { print a + b }')
	done
done
printf 'own\t-\t%s\n' "$own" >>"$TSV"
"$SIEMLAB" bench cluster "$TSV"
