package cluster

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRecoveriesRaiseAndRestore: a raise records what it found once (a
// second raise keeps the first record) and a restore puts back exactly that,
// null for a setting that was unset; the record's first form still reads.
func TestRecoveriesRaiseAndRestore(t *testing.T) {
	rec := Recoveries{}
	upd, changes := PlanRaise(rec, map[string]string{KeyConcurrentRecoveries: "3"}, map[string]int{KeyInitialPrimaries: 16, KeyConcurrentRecoveries: 8})
	if !reflect.DeepEqual(upd, map[string]any{KeyInitialPrimaries: "16", KeyConcurrentRecoveries: "8"}) {
		t.Errorf("raise update %v", upd)
	}
	want := []string{"node_initial_primaries_recoveries unset (default 4) → 16", "node_concurrent_recoveries 3 → 8"}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("changes %q, want %q", changes, want)
	}
	// A resumed raise sees the raised values but keeps what the run found first.
	PlanRaise(rec, map[string]string{KeyInitialPrimaries: "16", KeyConcurrentRecoveries: "8"}, map[string]int{KeyInitialPrimaries: 16})
	if rec[KeyInitialPrimaries].Was != "" || rec[KeyConcurrentRecoveries].Was != "3" {
		t.Errorf("record %+v", rec)
	}
	upd, back := PlanRestore(rec, map[string]string{KeyInitialPrimaries: "16", KeyConcurrentRecoveries: "8"})
	if !reflect.DeepEqual(upd, map[string]any{KeyInitialPrimaries: nil, KeyConcurrentRecoveries: "3"}) {
		t.Errorf("restore update %v", upd)
	}
	if !reflect.DeepEqual(back, []string{"node_initial_primaries_recoveries unset (default 4)", "node_concurrent_recoveries 3"}) {
		t.Errorf("back %q", back)
	}
	if upd, _ := PlanRestore(rec, map[string]string{KeyConcurrentRecoveries: "3"}); len(upd) != 0 {
		t.Errorf("already back, update %v", upd)
	}

	var first Recoveries
	if err := json.Unmarshal([]byte(`{"was":"6","raised":"32"}`), &first); err != nil || first[KeyInitialPrimaries] != (SettingRecord{Was: "6", Raised: "32"}) || len(first.Raised()) != 1 {
		t.Errorf("first form: %v %v", first, err)
	}
}
