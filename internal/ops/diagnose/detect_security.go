package diagnose

import (
	"context"
	"strings"
	"time"
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
		Fix: "siemctl security indexer apply"}, true
}
