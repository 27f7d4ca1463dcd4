#!/usr/bin/env bash
# The end-to-end tests (make test-e2e): every e2e package against siem labs,
# then the suites that hold in both layouts once more against wazuh labs (a
# stock Wazuh 4.x host, SIEMCTL_E2E_PROFILE=wazuh): health, upgrade and
# rollback (the kill-9 matrix, the automatic rollback), agents, alerts,
# services, snapshot.
#
# The work is split into two lanes that run at the same time, each on its own
# port range (SIEMCTL_E2E_PORT_SHIFT 0 and 1000), so the waits of one lab (a
# unit starting, a cluster turning green) overlap with the work of the other:
#   lane 1: siem, every package but the upgrade suite; then the watch window;
#           then the distributed lab's test (wazuh; one lab for every check and fault);
#           then the rolling upgrade and the rolling rollback of a distributed lab through ansible/ (siem)
#   lane 2: siem, the upgrade suite but the watch window; then the wazuh pass
# SIEMCTL_E2E_LANES=1 runs the same commands one after the other.
# Each lane's output is prefixed with its name; the exit code is non-zero when
# any command failed.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TIMEOUT=${E2E_TIMEOUT:-60m}
LANES=${SIEMCTL_E2E_LANES:-2}
UPGRADE=./internal/cmd/upgrade
WATCH='TestE2EWatch'
DISTRIBUTED='TestE2EDistributed'
ROLLING='TestE2ERollingUpgrade|TestE2ERollingRollback'
WAZUH_PKGS=${E2E_WAZUH_PKGS:-"./internal/cmd/health ./internal/cmd/upgrade ./internal/cmd/agents ./internal/cmd/alerts ./internal/cmd/services ./internal/cmd/snapshot"}
# Siem-only: the snapshot-mode data safety run, the watch window, the guided
# budget and the alert-flow run test siemctl's own logic, which the profile
# does not change.
WAZUH_SKIP=${E2E_WAZUH_SKIP:-'TestE2EDataSafety|TestE2EWatch|TestE2EGuidedBudget|TestE2ENoAlertLost|TestE2ERollingUpgrade|TestE2ERollingRollback'}

export SIEMCTL_IT_REQUIRED=1 SIEMCTL_E2E_BIN=${SIEMCTL_E2E_BIN:-$PWD/bin}

others=$($GO list -tags e2e ./... | sed "s|^github.com/siemctl/siemctl|.|" | grep -vx "$UPGRADE")

gotest() { $GO test -tags e2e -count=1 -p 1 -timeout "$TIMEOUT" "$@"; }

lane1() {
	export SIEMCTL_E2E_PORT_SHIFT=0
	local rc=0
	# shellcheck disable=SC2086
	gotest -run 'E2E' -skip "$DISTRIBUTED" $others || rc=1
	gotest -run "$WATCH" "$UPGRADE" || rc=1
	# The distributed lab (3 indexer nodes, 2 managers, a dashboard; own loopback addresses
	# 127.0.0.11-31 and ports 20000+, so it runs beside lane 2's single labs) in the wazuh layout.
	SIEMCTL_E2E_PROFILE=wazuh gotest -run "$DISTRIBUTED" ./lab/cmd/siemlab || rc=1
	# The rolling upgrade: a second distributed lab (siem), after the first is down.
	gotest -run "$ROLLING" "$UPGRADE" || rc=1
	return $rc
}

lane2() {
	export SIEMCTL_E2E_PORT_SHIFT=1000
	local rc=0
	gotest -run 'E2E' -skip "$WATCH|$ROLLING" "$UPGRADE" || rc=1
	# shellcheck disable=SC2086
	SIEMCTL_E2E_PROFILE=wazuh gotest -run 'E2E' -skip "$WAZUH_SKIP" $WAZUH_PKGS || rc=1
	return $rc
}

prefix() { sed -u "s/^/[$1] /"; }

start=$(date +%s)
if [ "$LANES" = 1 ]; then
	lane1 2>&1 | prefix lane1
	rc1=${PIPESTATUS[0]}
	lane2 2>&1 | prefix lane2
	rc2=${PIPESTATUS[0]}
else
	(lane1 2>&1 | prefix lane1; exit "${PIPESTATUS[0]}") &
	p1=$!
	(lane2 2>&1 | prefix lane2; exit "${PIPESTATUS[0]}") &
	p2=$!
	wait "$p1"
	rc1=$?
	wait "$p2"
	rc2=$?
fi
echo "e2e: lane1 exit $rc1, lane2 exit $rc2, $(( ($(date +%s) - start) / 60 )) min"
[ "$rc1" = 0 ] && [ "$rc2" = 0 ]
