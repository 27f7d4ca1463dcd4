#!/usr/bin/env bash
# The end-to-end tests (make test-e2e): every e2e package against siem labs,
# then the suites that hold in both layouts once more against wazuh labs (a
# stock Wazuh 4.x host, SIEMCTL_E2E_PROFILE=wazuh): health, upgrade and
# rollback (the kill-9 matrix, the automatic rollback), agents, alerts,
# services, snapshot.
#
# The work is split into four lanes that run at the same time, each on its own
# port range (SIEMCTL_E2E_PORT_SHIFT 0, 1000, 2000 and 3000; distributed labs use
# their own loopback addresses 127.0.0.11-31 and ports 20000+), so the waits of
# one lab (a unit starting, a cluster turning green, a watch window) overlap
# with the work of another. Each lane runs 30-45 min on a 2-core machine:
#   lane 1: siem, every package but the upgrade suite (and the faults made by hand)
#   lane 2: siem, the faults made by hand (internal/ops/diagnose), then the upgrade
#           suite but the watch window and the rolls (the
#           longest single command: 38-51 min)
#   lane 3: the distributed lab's test (wazuh; one lab for every check and
#           fault), then the rolling upgrade and the rolling rollback of
#           distributed labs through ansible/ (siem); then the wazuh pass of
#           health, agents, alerts, services and snapshot (shift 3000)
#   lane 4: the watch window (mostly waiting for its windows to end); then the
#           wazuh pass of the upgrade suite
# SIEMCTL_E2E_LANES=1 runs the same commands one after the other.
# Each lane's output is prefixed with its name; the last line gives each lane's
# exit code and minutes; the exit code is non-zero when any command failed.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TIMEOUT=${E2E_TIMEOUT:-75m}
LANES=${SIEMCTL_E2E_LANES:-4}
UPGRADE=./internal/cmd/upgrade
WATCH='TestE2EWatch'
DISTRIBUTED='TestE2EDistributed'
ROLLING='TestE2ERolling'
BYHAND='TestE2EFaultsByHand'
WAZUH_PKGS=${E2E_WAZUH_PKGS:-"./internal/cmd/agents ./internal/cmd/alerts ./internal/cmd/services ./internal/cmd/snapshot"}
# Siem-only: the snapshot-mode data safety run, the watch window, the guided
# budget, the alert-flow run and the 10,000-agent upgrade test siemctl's own logic, which the profile
# does not change. The real releases' upgrade (4.12.0 -> 4.14.4) runs in both
# layouts (the wazuh lab serves its Filebeat module tarballs itself).
WAZUH_SKIP=${E2E_WAZUH_SKIP:-'TestE2EDataSafety|TestE2EWatch|TestE2EGuidedBudget|TestE2ENoAlertLost|TestE2ERolling|TestE2EAgentUpgradeScale'}

export SIEMCTL_IT_REQUIRED=1 SIEMCTL_E2E_BIN=${SIEMCTL_E2E_BIN:-$PWD/bin}

others=$($GO list -tags e2e ./... | sed "s|^github.com/siemctl/siemctl|.|" | grep -vx "$UPGRADE")

gotest() { $GO test -tags e2e -count=1 -p 1 -timeout "$TIMEOUT" "$@"; }

wazuh() { SIEMCTL_E2E_PROFILE=wazuh gotest -run 'E2E' -skip "$WAZUH_SKIP" "$@"; }

lane1() {
	export SIEMCTL_E2E_PORT_SHIFT=0
	local rc=0
	# shellcheck disable=SC2086
	gotest -run 'E2E' -skip "$DISTRIBUTED|$BYHAND" $others || rc=1
	return $rc
}

lane2() {
	export SIEMCTL_E2E_PORT_SHIFT=1000
	local rc=0
	gotest -run "$BYHAND" ./internal/ops/diagnose || rc=1
	gotest -run 'E2E' -skip "$WATCH|$ROLLING" "$UPGRADE" || rc=1
	return $rc
}

lane3() {
	export SIEMCTL_E2E_PORT_SHIFT=0
	local rc=0
	# The distributed lab (3 indexer nodes, 2 managers, a dashboard) in the wazuh layout.
	SIEMCTL_E2E_PROFILE=wazuh gotest -run "$DISTRIBUTED" ./lab/cmd/siemlab || rc=1
	# The rolling upgrade and the rolling rollback: each its own distributed lab (siem), one
	# after the other.
	gotest -run "$ROLLING" "$UPGRADE" || rc=1
	# shellcheck disable=SC2086
	SIEMCTL_E2E_PORT_SHIFT=3000 wazuh ./internal/cmd/health $WAZUH_PKGS || rc=1
	return $rc
}

lane4() {
	export SIEMCTL_E2E_PORT_SHIFT=2000
	local rc=0
	gotest -run "$WATCH" "$UPGRADE" || rc=1
	wazuh "$UPGRADE" || rc=1
	return $rc
}

prefix() { sed -u "s/^/[$1] /"; }

# Every lane's output is also kept here, so that the end of the run can name
# what failed: a CI log is often read from its tail only.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# failures prints each failed test of a lane's log with up to three of its
# messages (the indented file.go:N lines after "--- FAIL" that read like an
# error, else the last one), at most 25 lines a lane.
failures() {
	awk -v lane="$1" '
		function flush(   k, shown) {
			if (name == "") return
			print "[" lane "] FAILED " name
			for (k = 1; k <= n && shown < 3; k++)
				if (tolower(msg[k]) ~ /want|got|error|fail|timed out|timeout|exit|expected|missing/) { print "[" lane "]     " msg[k]; shown++ }
			if (!shown && n) print "[" lane "]     " msg[n]
			name = ""; n = 0
		}
		/^ *--- FAIL: / { flush(); name = $0; sub(/^ *--- FAIL: /, "", name); next }
		name != "" && /^ +[A-Za-z0-9_]+\.go:[0-9]+: / {
			m = $0; sub(/^ +/, "", m)
			if (length(m) > 200) m = substr(m, 1, 200) "..."
			msg[++n] = m; next
		}
		/^(FAIL|ok|panic:)/ { flush() }
		/^panic: / || /^FAIL\t/ { print "[" lane "] " $0 }
		END { flush() }
	' "$logs/$1" | head -25
}

# runlane N: lane N with its output prefixed and kept in its log, its minutes in
# laneN.min.
runlane() {
	local t0=$SECONDS rc
	"lane$1" 2>&1 | tee "$logs/lane$1" | prefix "lane$1"
	rc=${PIPESTATUS[0]}
	echo $(((SECONDS - t0) / 60)) >"$logs/lane$1.min"
	return "$rc"
}

start=$(date +%s)
rcs=()
if [ "$LANES" = 1 ]; then
	for n in 1 2 3 4; do
		runlane "$n"
		rcs+=($?)
	done
else
	pids=()
	for n in 1 2 3 4; do
		runlane "$n" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p"
		rcs+=($?)
	done
fi
summary="e2e:"
for n in 1 2 3 4; do
	[ "${rcs[$((n - 1))]}" = 0 ] || failures "lane$n"
	summary+=" lane$n exit ${rcs[$((n - 1))]} ($(cat "$logs/lane$n.min" 2>/dev/null || echo '?') min),"
done
echo "$summary $(( ($(date +%s) - start) / 60 )) min"
[ "${rcs[*]}" = "0 0 0 0" ]
