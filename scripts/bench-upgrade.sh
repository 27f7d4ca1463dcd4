#!/usr/bin/env bash
# bench-upgrade.sh: upgrade + rollback of a loaded lab in each indexer.data_safety mode, at a small
# and a large volume, with events arriving all the time; prints per mode and volume the data size,
# upgrade and rollback wall time, the time the indexer was down, siemctl's own share, the space
# the data safety used, events lost and duplicated, and the ratio of each volume to the first. A
# measurement, not a test: it fails only when a step of it fails. Run as root (the lab needs it),
# after `make build`.
#
#   make bench-upgrade                  # small 50MiB/50 days, large 1GiB over the same 50 days
#   BENCH_VOLUMES="small:50MiB:50 large:1GiB:50 many:1GiB:1000" scripts/bench-upgrade.sh
#   BENCH_VOLUMES="small:20MiB:20 large:200MiB:200" BENCH_MODES="snapshot" scripts/bench-upgrade.sh
#   BENCH_VOLUMES="small:50MiB:50 large:1GiB:50 cluster" scripts/bench-upgrade.sh   # + the rolling upgrade
#   BENCH_VOLUMES=cluster scripts/bench-upgrade.sh                                  # the rolling upgrade only
#
# The default pair changes the data volume only (the same 50 daily indices, 20x the data): the
# ratio the upgrade's goal is about. The optional third volume, many:1GiB:1000, adds 1,000 daily
# indices: the shard-count effect (every primary comes back from disk after the restart; the
# steps that wait for them get timeout_per_primary for each).
#
# Environment: BENCH_BIN (default bin/), BENCH_DIR (work directory, traversable by others: default a new 0711 dir under $TMPDIR or /tmp, kept:
# results.tsv, the logs and per upgrade TAG-upgrade.recovery: the indexer's primaries and active
# recoveries every 5 s), BENCH_PORT_OFFSET (default SIEMCTL_E2E_PORT_SHIFT + 70),
# BENCH_VOLUMES ("name:size:days ..."; the volumes grow on one lab, so list them smallest first;
# the name "cluster" alone is the distributed lab's rolling upgrade: scripts/bench-upgrade-cluster.sh,
# after the others, its own lab at BENCH_CLUSTER_OFFSET, default the same offset),
# BENCH_MODES (default "snapshot copy command"), BENCH_RATE (events per second, default 5),
# BENCH_HEAP (the lab indexer's heap, default 2g: a thousand indices do not fit 512m),
# BENCH_REPEAT (upgrade + rollback cycles per volume and mode, default 2: the mode column reads
# MODE#N; cycle 1 is a site's first upgrade at that volume, whose snapshot copies all the data
# new since the last one, cycle 2 the next upgrade, whose snapshot copies only new segments).
#
# Before each siemctl cycle, the bare upgrade of the same data: the spec's steps by hand's minimum
# (bare_upgrade below), then the lab put back at the old version; `siemlab bench floor`
# prints per volume the floor (siemctl against bare) and growth lines and the security plugin's
# first-load retries. Its tables: bare.tsv, retries.tsv.
#
# The lab is downed at the end, also on failure or interrupt. The machine's other load shows in
# the figures: they are wall-clock times of one run each.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-$ROOT/bin}
SIEMCTL=$BIN/siemctl
SIEMLAB=$BIN/siemlab
OFFSET=${BENCH_PORT_OFFSET:-$((${SIEMCTL_E2E_PORT_SHIFT:-0} + 70))}
VOLUMES=${BENCH_VOLUMES:-"small:50MiB:50 large:1GiB:50"}
CLUSTER=
case " $VOLUMES " in *" cluster "*) CLUSTER=1 VOLUMES=$(tr ' ' '\n' <<<"$VOLUMES" | grep -vx cluster | tr '\n' ' ' | sed 's/ *$//') ;; esac
MODES=${BENCH_MODES:-"snapshot copy command"}
RATE=${BENCH_RATE:-5}
REPEAT=${BENCH_REPEAT:-2}
HEAP=${BENCH_HEAP:-2g}
FLOW_PID=
SAMPLE_PID=

log() { printf '%s bench-upgrade: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() {
	log "FAILED: $*"
	exit 1
}

for b in "$SIEMCTL" "$SIEMLAB"; do
	[ -x "$b" ] || die "$b missing: run make build first"
done
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
[ "$(id -u)" = 0 ] || die "run as root (the lab runs a private systemd and dpkg root)"

# The work directory holds the lab, whose indexer runs as uid 65534: it must be traversable by
# others. mktemp -d makes it 0700, so a directory made here is opened to 0711 (traversable, not
# listable); a BENCH_DIR given is checked the same way (siemlab up would refuse it).
if [ -n "${BENCH_DIR:-}" ]; then
	WORK=$BENCH_DIR
	mkdir -p "$WORK" || die "cannot create BENCH_DIR $WORK"
else
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/siemctl-bench-XXXXXX") || die "mktemp -d failed"
	chmod 0711 "$WORK" || die "chmod 0711 $WORK failed"
fi
WORK=$(cd "$WORK" && pwd)
for d in "$WORK" $(d=$WORK; while [ "$d" != / ]; do d=$(dirname "$d"); echo "$d"; done); do
	[ -n "$(find "$d" -maxdepth 0 -perm -o=x)" ] || die "$d is not traversable by others (the lab's indexer runs as uid 65534 and must reach $WORK/lab): chmod o+x $d, or set BENCH_DIR to a directory under one that is"
done
LAB=$WORK/lab
RES=$WORK/results.tsv
if [ -n "$CLUSTER" ] && [ -z "$VOLUMES" ]; then # the rolling upgrade only: no single lab
	log "work directory $WORK"
	exec "$ROOT/scripts/bench-upgrade-cluster.sh" "$WORK"
fi

cleanup() {
	[ -z "$SAMPLE_PID" ] || kill "$SAMPLE_PID" 2>/dev/null
	if [ -n "$FLOW_PID" ]; then
		kill "$FLOW_PID" 2>/dev/null
		wait "$FLOW_PID" 2>/dev/null
	fi
	if [ -d "$LAB" ]; then
		"$SIEMLAB" down --dir "$LAB" >"$WORK/down.log" 2>&1 || log "siemlab down --dir $LAB failed: see $WORK/down.log"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$WORK/hook"
# The command mode's hook pair: a plain cold copy of the data directory (what an LVM/ZFS hook
# replaces with a volume snapshot).
cat >"$WORK/hook/take" <<EOF
#!/bin/sh
set -e
rm -rf "$WORK/hook/data"
cp -a "\$SIEMCTL_DATA_DIR" "$WORK/hook/data"
echo "copied \$SIEMCTL_DATA_DIR for run \$SIEMCTL_RUN_ID"
EOF
cat >"$WORK/hook/restore" <<EOF
#!/bin/sh
set -e
[ -d "$WORK/hook/data" ]
rm -rf "\$SIEMCTL_DATA_DIR"
cp -a "$WORK/hook/data" "\$SIEMCTL_DATA_DIR"
echo "restored \$SIEMCTL_DATA_DIR"
EOF
chmod 755 "$WORK/hook/take" "$WORK/hook/restore"

log "work directory $WORK; lab port offset $OFFSET"
"$SIEMLAB" up --dir "$LAB" --port-offset "$OFFSET" --indexer-heap "$HEAP" >"$WORK/up.log" 2>&1 || die "siemlab up: see $WORK/up.log"
# shellcheck disable=SC1091
. "$LAB/env"
export NO_COLOR=1
conf() { "$SIEMCTL" config view -o json | jq -r --arg k "$1" '.[] | select(.key == $k) | .value'; }
DATA=$(conf indexer.data_dir)
URL=$(conf indexer.url)
[ -d "$DATA" ] && [ -n "$URL" ] || die "indexer.data_dir / indexer.url not found in the lab's configuration"
# prepare restarts the indexer within 3 minutes; on a loaded machine the start can take longer:
# the second try finds path.repo set and the node up, and registers the repository.
"$SIEMCTL" indexer repository prepare --yes >"$WORK/prepare.log" 2>&1 ||
	{ log "indexer repository prepare failed once (see $WORK/prepare.log): trying again in 60 s"; sleep 60
	  "$SIEMCTL" indexer repository prepare --yes >>"$WORK/prepare.log" 2>&1; } || die "indexer repository prepare: see $WORK/prepare.log"
REPO=$("$SIEMCTL" indexer repository -o json | jq -r .location)
REPO_NAME=$("$SIEMCTL" indexer repository -o json | jq -r .repository)
STATE=$(conf state_dir)
PKGS="$(conf indexer.package) $(conf manager.package) $(conf shipper.package) $(conf dashboard.package)"
API_URL=$(conf manager.api_url)
DASH_URL=$(conf dashboard.url)
OLD=$(dpkg-query -W -f='${Version}' "$(conf indexer.package)")
TARGET=$(apt-cache policy "$(conf indexer.package)" | awk '/Candidate:/ { print $2 }')
[ -n "$OLD" ] && [ -n "$TARGET" ] && [ "$OLD" != "$TARGET" ] || die "no package upgrade in the lab's repository (installed $OLD, candidate $TARGET)"
# The shipper's setup as the bare upgrade does it by hand (read here, outside the timed run).
SH_BIN=$(conf shipper.binary) SH_CFG=$(conf shipper.config_dir) SH_DATA=$(conf shipper.data_dir) SH_HOME=$(conf shipper.home_dir)
SH_TPL=$(conf shipper.template_name) SH_TPL_SRC=$(conf shipper.template_source) SH_MODULE=$(conf shipper.module_source)
BARE=$WORK/bare.tsv
printf 'volume\tmode\tbare_s\tback_copy_s\tsec_retry\n' >"$BARE"
RETRY=$WORK/retries.tsv
printf 'run\tsec_retry\n' >"$RETRY"

# ix PATH: GET on the lab's indexer (the password through curl's stdin config, never on argv).
ix() { curl -s --max-time 4 --cacert "$LAB/certs/root-ca.pem" -K- "$URL$1" <<<"user = \"admin:$(cat "$LAB/secrets/indexer")\""; }
# The indexer's log (its cluster's name): where the security plugin's first-load retry shows.
IXLOG=$(conf indexer.log_dir 2>/dev/null)
[ -n "$IXLOG" ] && [ "$IXLOG" != null ] || IXLOG=$LAB/root/var/log/siem-indexer
IXLOG=$IXLOG/$(ix '/' | jq -r .cluster_name).log
[ -f "$IXLOG" ] || die "the indexer's log $IXLOG is not there"
ix_put() { curl -s --max-time 3600 --cacert "$LAB/certs/root-ca.pem" -K- -X PUT -H 'Content-Type: application/json' -d "$2" "$URL$1" <<<"user = \"admin:$(cat "$LAB/secrets/indexer")\""; }
ix_delete() { curl -s --max-time 600 --cacert "$LAB/certs/root-ca.pem" -K- -X DELETE "$URL$1" <<<"user = \"admin:$(cat "$LAB/secrets/indexer")\""; }

# sample LOG: every 5 s while a run goes, the indexer's primaries (active, initializing,
# unassigned) and its active recoveries by type/stage, to see what the node waits for.
sample() {
	while :; do
		printf '%s %s %s\n' "$(date -u +%T)" \
			"$(ix '/_cluster/health?filter_path=status,active_primary_shards,initializing_shards,unassigned_shards')" \
			"$(ix '/_cat/recovery?active_only=true&h=type,stage' | sort | uniq -c | tr -s ' \n' ' ')"
		sleep 5
	done >>"$1" 2>/dev/null
}

bytes() { du -sb "$1" 2>/dev/null | cut -f1; }
mib() { awk -v b="${1:-0}" 'BEGIN { printf "%.0f", b / 1048576 }'; }

# run_with_flow TAG LOG CMD...: the flow runs while CMD does (10 s before and after).
run_with_flow() {
	local tag=$1 out=$2 from=$3
	shift 3
	"$SIEMLAB" flow send --dir "$LAB" --tag "$tag" --rate "$RATE" --from "$from" >>"$WORK/flow-$tag.log" 2>&1 &
	FLOW_PID=$!
	sleep 10
	local t0 t1 rc
	t0=$(date +%s.%N)
	"$@" >"$out" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	sleep 10
	kill -INT "$FLOW_PID" 2>/dev/null
	wait "$FLOW_PID" 2>/dev/null
	FLOW_PID=
	WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	return $rc
}

# down_s RUNBOOK: seconds from the indexer's stop to the first cluster health gate after it.
down_s() {
	"$SIEMCTL" upgrade status -o json "$1" | jq '.steps | to_entries
		| (map(select(.value.id == "indexer/stop" or .value.id == "stop/indexer"))[0].key) as $a
		| (map(select(.key > $a and .value.id == "indexer/health"))[0].key) as $b
		| map(select(.key >= $a and .key <= $b) | .value.duration_s) | add | . * 10 | round / 10'
}

# The bare upgrade: the spec's steps by hand's minimum, in its order: the data safety (the same
# snapshot, or a cold copy of the data directory for the copy and command modes), each component
# stopped, its target package installed, started and waited for until it answers (the indexer:
# green, as the admin user, so with security initialised), the shipper's template and setup
# (bare_shipper: the guide's Filebeat steps) before its start. No gates, no config backups, no probes.
# For putting the lab back, bare_upgrade also copies the stopped indexer's data in snapshot mode:
# that copy's time is written to $WORK/bare-excluded and not counted.
apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades -o Dpkg::Options::=--force-confold "$@"; }
wait_for() { # WHAT TIMEOUT_S CMD...: poll CMD every 0.25 s until it succeeds
	local what=$1 limit=$2 t0=$SECONDS
	shift 2
	until "$@"; do
		[ $((SECONDS - t0)) -lt "$limit" ] || { echo "bare: $what not ready after ${limit}s"; return 1; }
		sleep 0.25
	done
	echo "bare: $what ready after $((SECONDS - t0))s"
}
# (grep, not jq -e: jq 1.6 exits 0 on an empty answer)
ix_green() { ix '/_cluster/health?wait_for_status=green&timeout=2s' | grep -q '"status":"green"'; }
api_answers() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 4 --cacert "$(conf manager.ca_file)" -X POST -K- "$API_URL/security/user/authenticate" \
		<<<"user = \"$(conf manager.username):$(cat "$LAB/secrets/manager")\"")" = 200 ]
}
dash_answers() {
	local c
	c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 4 --cacert "$(conf dashboard.ca_file)" "$DASH_URL/")
	[ "$c" != 000 ] && [ "$c" -lt 500 ]
}
# bare_shipper: the guide's Filebeat steps after its package, which siemctl's shipper/template,
# shipper/pipelines and shipper/index-management do too: the target version's alerts template into
# the config directory and the indexer (PUT /_template), the shipper's own setup --pipelines and
# --index-management. (Its module where shipper.module_source is set: the lab sets none, so neither
# siemctl's shipper/module nor this installs one.)
bare_shipper() {
	local src=${SH_TPL_SRC//\{version\}/${TARGET%-*}} argv=("$SH_BIN")
	src=${src#file://}
	[ -z "$SH_MODULE" ] || [ "$SH_MODULE" = null ] || { echo "bare: shipper.module_source is set: the bare upgrade installs no module"; return 1; }
	cp "$src" "$SH_CFG/$SH_TPL-template.json" || return
	ix_put "/_template/$SH_TPL" "@$src" | grep -q '"acknowledged":true' || { echo "bare: PUT /_template/$SH_TPL not acknowledged"; return 1; }
	[ -z "$SH_HOME" ] || [ "$SH_HOME" = null ] || argv+=(--path.home "$SH_HOME")
	argv+=(--path.data "$SH_DATA" --path.config "$SH_CFG")
	"${argv[@]}" -e setup --pipelines || return
	"${argv[@]}" -e setup --index-management -E output.logstash.enabled=false
}
bare_upgrade() { # MODE TAG (set -e does not hold in a tested call: every step says its failure)
	local mode=$1 tag=$2 t c snap
	"$SIEMCTL" services stop shipper dashboard --yes || return
	if [ "$mode" = snapshot ]; then
		snap=$(ix_put "/_snapshot/$REPO_NAME/bare-$tag?wait_for_completion=true" '{"indices":"*","include_global_state":true}')
		grep -q '"state":"SUCCESS"' <<<"$snap" || return
		echo "bare: snapshot in $(jq -r '.snapshot.duration_in_millis / 1000' <<<"$snap")s"
	fi
	"$SIEMCTL" services stop manager indexer --yes || return
	rm -rf "$WORK/bare-back"
	t=$(date +%s.%N)
	cp -a "$DATA" "$WORK/bare-back" || return
	if [ "$mode" = snapshot ]; then # the copy to put the lab back is not the spec's: not counted
		awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }' >"$WORK/bare-excluded"
	else
		echo 0 >"$WORK/bare-excluded"
	fi
	for c in indexer manager shipper dashboard; do
		t=$(date +%s.%N)
		apt_install "$(conf "$c.package")=$TARGET" || return
		[ "$c" != shipper ] || bare_shipper || return
		start_units "$c" || return
		case $c in
		indexer) wait_for "indexer green as admin" 600 ix_green || return ;;
		manager) wait_for "manager API login" 300 api_answers || return ;;
		dashboard) wait_for "dashboard answer" 300 dash_answers || return ;;
		esac
		echo "bare: $c installed, started and answering in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
	done
}
# start_units COMPONENT...: siemctl services start, where a start still going at the end of the
# spec's wait (a loaded machine can take longer than 60 s to bring the JVM up) is not a failure as
# long as the units are active: the waits that follow decide.
start_units() {
	"$SIEMCTL" services start "$@" --yes && return
	"$SIEMCTL" services status "$@" >/dev/null
}
# bare_back: the lab back at the old version with the data as it was before the bare upgrade.
bare_back() { # TAG
	local p args=()
	"$SIEMCTL" services stop all --yes || return
	for p in $PKGS; do args+=("$p=$OLD"); done
	apt_install "${args[@]}" || return
	rm -rf "$DATA" && mv "$WORK/bare-back" "$DATA" || return
	start_units all || return
	wait_for "indexer green as admin" 600 ix_green || return
	wait_for "manager API login" 300 api_answers || return
	ix_delete "/_snapshot/$REPO_NAME/bare-$1" >/dev/null
	return 0
}
# sec_retry LOGSIZE [RUN]: 1 when the security plugin's first load was retried since the indexer log
# had LOGSIZE bytes (its configuration loader logged "[ERROR][o.o.s.c.ConfigurationLoaderSecurity7]
# Failure No shard available ... retrieving configuration" and tried again), or siemctl's security step
# ran the init tool more than once (RUN's journal); else 0.
sec_retry() {
	local n=0
	tail -c +"$(($1 + 1))" "$IXLOG" 2>/dev/null | grep -Eq 'o\.o\.s\.c\.(ConfigurationLoaderSecurity7|ConfigurationRepository).*(Exception|Failure)' && n=1
	if [ -n "${2:-}" ] && [ -f "$STATE/runs/$2/journal.jsonl" ]; then
		jq -r 'select(.step == "indexer/security" and .outcome.data.attempts != null) | .outcome.data.attempts' "$STATE/runs/$2/journal.jsonl" 2>/dev/null |
			awk '$1 > 1 { r = 1 } END { exit !r }' && n=1
	fi
	echo "$n"
}
logsize() { stat -c %s "$IXLOG" 2>/dev/null || echo 0; }

flow_check() { # TAG → "lost dup written"
	"$SIEMLAB" flow check --dir "$LAB" --tag "$1" --wait 4m --json 2>>"$WORK/flow-$1.log" | jq -r '"\(.lost) \(.duplicates) \(.in_alerts_file)"'
}

printf 'volume\tmode\tdata_MiB\tindices\tupgrade_s\trollback_s\tdown_upgrade_s\tdown_rollback_s\town_upgrade_s\town_rollback_s\tspace_MiB\tevents\tlost_after_upgrade\tlost\tduplicates\n' >"$RES"
loaded=0
for vol in $VOLUMES; do
	IFS=: read -r vname vsize vdays <<<"$vol"
	log "loading $vsize over $vdays daily indices ($vname)"
	"$SIEMLAB" load --dir "$LAB" --size "$vsize" --days "$vdays" --seed $((++loaded)) --json >"$WORK/load-$vname.json" 2>"$WORK/load-$vname.log" ||
		die "siemlab load: see $WORK/load-$vname.log"
	log "loaded: $(jq -r '"\(.docs) docs, \(.store_bytes / 1048576 | floor) MiB on disk, \(.took_ns / 1e9 | floor) s"' "$WORK/load-$vname.json")"
	for mode in $MODES; do for rep in $(seq 1 "$REPEAT"); do
		export SIEMCTL_INDEXER_DATA_SAFETY=$mode
		if [ "$mode" = command ]; then
			export SIEMCTL_INDEXER_DATA_HOOK_TAKE=$WORK/hook/take SIEMCTL_INDEXER_DATA_HOOK_RESTORE=$WORK/hook/restore
		else
			unset SIEMCTL_INDEXER_DATA_HOOK_TAKE SIEMCTL_INDEXER_DATA_HOOK_RESTORE
		fi
		tag=$(printf '%s%s%s' "${vname:0:5}" "${mode:0:4}" "$rep" | tr -cd 'a-z0-9')
		dsize=$(bytes "$DATA")
		indices=$(ix '/_cat/indices/siem-alerts-*?h=index' | wc -l)
		repo0=$(bytes "$REPO")
		log "$vname/$mode: bare upgrade ($(mib "$dsize") MiB data)"
		lsz=$(logsize)
		run_with_flow "${tag}b" "$WORK/$tag-bare.log" 1 bare_upgrade "$mode" "$tag" || die "$vname/$mode bare upgrade: see $WORK/$tag-bare.log"
		excl=$(cat "$WORK/bare-excluded")
		bare_s=$(awk -v w="$WALL" -v x="$excl" 'BEGIN { printf "%.1f", w - x }')
		sr=$(sec_retry "$lsz")
		printf '%s\t%s\t%s\t%s\t%s\n' "$vname" "$mode#$rep" "$bare_s" "$excl" "$sr" >>"$BARE"
		printf '%s\t%s\n' "bare $vname/$mode#$rep" "$sr" >>"$RETRY"
		log "$vname/$mode: bare upgrade ${bare_s}s (${excl}s copy to put the lab back not counted), security retry $sr; putting the lab back"
		bare_back "$tag" >"$WORK/$tag-bare-back.log" 2>&1 || die "$vname/$mode putting the lab back after the bare upgrade: see $WORK/$tag-bare-back.log"
		log "$vname/$mode: upgrade ($(mib "$dsize") MiB data)"
		lsz=$(logsize)
		sample "$WORK/$tag-upgrade.recovery" &
		SAMPLE_PID=$!
		run_with_flow "$tag" "$WORK/$tag-upgrade.log" 1 "$SIEMCTL" upgrade apply --to 4.10.0 --yes || die "$vname/$mode upgrade: see $WORK/$tag-upgrade.log"
		kill "$SAMPLE_PID"
		SAMPLE_PID=
		up_wall=$WALL
		up_run=$("$SIEMCTL" upgrade status -o json | jq -r .run_id)
		printf '%s\t%s\n' "siemctl $vname/$mode#$rep" "$(sec_retry "$lsz" "$up_run")" >>"$RETRY"
		case $mode in
		snapshot) space=$(($(bytes "$REPO") - repo0)) ;;
		copy) space=$(bytes "$LAB/backups/$up_run") ;;
		command) space=$(bytes "$WORK/hook/data") ;;
		esac
		read -r lost_up _ _ <<<"$(flow_check "$tag")"
		log "$vname/$mode: rollback"
		next=$(($(grep -o 'sent [0-9]*' "$WORK/flow-$tag.log" | awk '{ s += $2 } END { print s + 1 }')))
		run_with_flow "$tag" "$WORK/$tag-rollback.log" "$next" "$SIEMCTL" rollback --yes || die "$vname/$mode rollback: see $WORK/$tag-rollback.log"
		rb_wall=$WALL
		rb_run=$("$SIEMCTL" upgrade status -o json | jq -r .run_id)
		read -r lost dup written <<<"$(flow_check "$tag")"
		up_st=$("$SIEMCTL" upgrade status -o json "$up_run")
		rb_st=$("$SIEMCTL" upgrade status -o json "$rb_run")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%s\n' "$vname" "$mode#$rep" "$(mib "$dsize")" "$indices" \
			"$up_wall" "$rb_wall" "$(down_s "$up_run")" "$(down_s "$rb_run")" \
			"$(jq .time.siemctl_own_work_s <<<"$up_st")" "$(jq .time.siemctl_own_work_s <<<"$rb_st")" \
			"$(mib "$space")" "$written" "$lost_up" "$lost" "$dup" >>"$RES"
		log "$vname/$mode: $(tail -1 "$RES")"
		# what the modes keep after a rollback (the new version's data set aside, the copy, the
		# hook's copy) is not needed here: disk space for the next mode
		rm -rf "$DATA".siemctl-* "$LAB/backups/$up_run" "$WORK/hook/data"
	done; done
done

echo
column -t -s $'\t' "$RES"
echo
first=${VOLUMES%% *}
echo "ratio of each volume to the first (${first%%:*}) per mode:"
awk -F'\t' -v a="${first%%:*}" '
	NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
	$1 == a { for (i = 3; i <= 11; i++) s[$2, i] = $i; next }
	{
		line = $1 "/" a " " $2 ":"
		for (i = 3; i <= 11; i++) if (s[$2, i] + 0 > 0) line = line sprintf(" %s %.2f", h[i], $i / s[$2, i])
		print "  " line
	}' "$RES"
echo
"$SIEMLAB" bench floor "$RES" "$BARE" "$RETRY" "${first%%:*}" "$(wc -w <<<"$MODES")"
echo
echo "results: $RES (own_* = siemctl's own work: wall minus waiting on components, from upgrade status -o json)"
if [ -n "$CLUSTER" ]; then
	cleanup # the single lab down before the distributed one comes up
	trap - EXIT
	echo
	"$ROOT/scripts/bench-upgrade-cluster.sh" "$WORK" || exit
fi
