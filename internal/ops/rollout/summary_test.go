package rollout

import (
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	r := Record{RunID: "run1", From: "4.9.0", Target: "4.10.0", Phase: PhaseDone, Created: t0, CreatedBy: "indexer-1", ElectedManager: "indexer-2",
		Order: []Entry{
			{Name: "indexer/indexer-1", Role: RoleIndexer, Host: "indexer-1", State: Done, Attempts: 1, Started: t0.Add(10 * time.Second), Finished: t0.Add(40 * time.Second)},
			{Name: "indexer/indexer-2", Role: RoleIndexerManager, Host: "indexer-2", State: Done, Attempts: 1, Started: t0.Add(50 * time.Second), Finished: t0.Add(70 * time.Second)},
			{Name: "manager/manager-2", Role: RoleManagerWorker, Host: "manager-2", State: Done, Attempts: 2, Started: t0.Add(80 * time.Second), Finished: t0.Add(140 * time.Second), LastError: ""},
			{Name: "dashboard/dashboard-1", Role: RoleDashboard, State: Pending},
		}}
	s := r.Summarize(t0.Add(200 * time.Second))
	if len(s.Entries) != 4 || s.Entries[0].Duration != 30 || s.Entries[2].Duration != 60 || s.Entries[3].Duration != 0 || s.Entries[2].Host != "manager-2" {
		t.Errorf("entries %+v", s.Entries)
	}
	tt := s.Totals
	if tt.Entries != 4 || tt.States[Done] != 3 || tt.States[Pending] != 1 || tt.Attempts != 4 || tt.Turns != 110 || tt.Wall != 200 ||
		len(tt.Retried) != 1 || tt.Retried[0] != "manager/manager-2" {
		t.Errorf("totals %+v", tt)
	}
	want := "run run1 4.9.0 → 4.10.0: 4 entries (3 done, 1 pending), 4 attempts, turns 110.0s of 200.0s wall; resumed: manager/manager-2"
	if got := s.Line(); got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if !strings.Contains(s.Elected, "indexer-2") || s.By != "indexer-1" {
		t.Errorf("elected %q, by %q", s.Elected, s.By)
	}
}
