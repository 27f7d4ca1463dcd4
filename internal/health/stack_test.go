package health

import (
	"reflect"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/probe"
)

// TestProbeReportOf: hops not observable from here (skipped) are left out
// of what the alerts.probe check shows; the others keep state and latency.
func TestProbeReportOf(t *testing.T) {
	got := ProbeReportOf(probe.Report{OK: false, Nonce: "abc", BrokenAt: "indexer", Hops: []probe.Hop{
		{Name: "manager", State: probe.StateOK, Latency: time.Second},
		{Name: "alerts.json", State: probe.StateSkipped, Detail: "unreadable"},
		{Name: "indexer", Latency: 30 * time.Second, Detail: "not indexed after 30s"},
	}})
	want := ProbeReport{OK: false, Nonce: "abc", BrokenAt: "indexer", Hops: []ProbeHop{
		{Name: "manager", OK: true, Latency: time.Second},
		{Name: "indexer", Latency: 30 * time.Second, Detail: "not indexed after 30s"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ProbeReportOf = %+v, want %+v", got, want)
	}
}
