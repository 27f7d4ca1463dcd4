package health

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/probe"
)

// TestProbeCheckLeavesOutSkippedHops: hops not observable from here (skipped)
// are left out of what the alerts.probe check shows; the others keep state
// and latency, and the broken hop is named.
func TestProbeCheckLeavesOutSkippedHops(t *testing.T) {
	e := &Env{Stack: Stack{Probe: func(context.Context) (probe.Report, error) {
		return probe.Report{OK: false, Nonce: "abc", BrokenAt: "indexer", Hops: []probe.Hop{
			{Name: "manager", State: probe.StateOK, Latency: time.Second},
			{Name: "alerts.json", State: probe.StateSkipped, Detail: "unreadable"},
			{Name: "indexer", State: probe.StateFailed, Latency: 30 * time.Second, Detail: "not indexed after 30s"},
		}}, nil
	}}}
	r := checkProbe(context.Background(), e)
	want := []string{"manager: ok after 1s", "indexer: FAILED after 30s (not indexed after 30s)"}
	if r.Status != Crit || r.Summary != "probe event did not arrive: broken at indexer" || !reflect.DeepEqual(r.Evidence, want) {
		t.Fatalf("%s %q %q", r.Status, r.Summary, r.Evidence)
	}
}
