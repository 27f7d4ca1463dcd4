package diagnose

import (
	"context"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/units"
)

// ---- security not initialised --------------------------------------------------

// securityInitGrace is how long after its start a node may still say its security index is
// not read (a loaded host's node reads it well after "started").
const securityInitGrace = 2 * time.Minute

func detectSecurityInit(_ context.Context, ev *Evidence) (Finding, bool) {
	if !ev.Unit.IsActive() {
		return Finding{}, false
	}
	i, line := ev.find("Not yet initialized (you may need to run securityadmin)", "OpenSearch Security not initialized")
	if i < 0 {
		return Finding{}, false
	}
	// a node still coming up says so too until it has read its security index: only a node
	// started a while ago that still says it is not initialised is missing it
	started := -1
	for j := i - 1; j >= 0 && started < 0; j-- {
		if nodeStarted.MatchString(strings.TrimSpace(ev.Lines[j])) {
			started = j
		}
	}
	if started < 0 || ev.notJoinedSince(started) {
		return Finding{}, false
	}
	t0, ok0 := stamp(ev.Lines[started])
	t1, ok1 := stamp(ev.Lines[i])
	if !ok0 || !ok1 || t1.Sub(t0) < securityInitGrace {
		return Finding{}, false
	}
	return Finding{Cause: "the security plugin is not initialised (the security index is missing)", Evidence: []string{line}, at: i,
		Fix: SecurityApplyFix}, true
}

// SecurityApplyFix is the fix of a security plugin that is not initialised
// long after its node's start: the apply backs the live configuration up
// and names what it would remove before it removes anything.
const SecurityApplyFix = "siemctl security indexer apply --dry-run (names any user, role or mapping it would remove), then siemctl security indexer apply"

// SecurityLoading says whether an indexer unit (st) that answers 503
// "OpenSearch Security not initialized" is still within the grace after its
// start in which a node reads its security index (a restart's first ~20 s
// here, minutes on a loaded host): a wait, not an apply. It returns how
// long ago the unit started.
func SecurityLoading(st units.UnitStatus, now time.Time) (time.Duration, bool) {
	if !st.IsActive() || st.StartedAt.IsZero() {
		return 0, false
	}
	age := now.Sub(st.StartedAt)
	return age, age >= 0 && age < securityInitGrace
}

// SecurityInitGrace is securityInitGrace for messages.
func SecurityInitGrace() time.Duration { return securityInitGrace }
