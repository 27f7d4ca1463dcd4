package lab

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestLoadDays(t *testing.T) {
	now := time.Date(2026, 3, 2, 23, 59, 0, 0, time.FixedZone("x", 5*3600)) // 18:59 UTC
	got := loadDays(now, 3)
	want := []string{"2026-02-27", "2026-02-28", "2026-03-01"}
	for i, d := range got {
		if d.Format("2006-01-02") != want[i] {
			t.Errorf("day %d = %s, want %s", i, d.Format("2006-01-02"), want[i])
		}
	}
}

func TestAlertGenShape(t *testing.T) {
	day := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	a, b := newAlertGen(7, "mgr"), newAlertGen(7, "mgr")
	var total int
	rules := map[string]bool{}
	for i := range 2000 {
		da, db := a.alert(day, i), b.alert(day, i)
		if !bytes.Equal(da, db) {
			t.Fatalf("doc %d differs for the same seed", i)
		}
		total += len(da)
		var doc struct {
			At        string `json:"@timestamp"`
			Timestamp string `json:"timestamp"`
			Rule      struct {
				ID     string   `json:"id"`
				Level  int      `json:"level"`
				Groups []string `json:"groups"`
			} `json:"rule"`
			Agent    struct{ ID, Name string } `json:"agent"`
			Manager  struct{ Name string }     `json:"manager"`
			ID       string                    `json:"id"`
			FullLog  string                    `json:"full_log"`
			Location string                    `json:"location"`
		}
		if err := json.Unmarshal(da, &doc); err != nil {
			t.Fatalf("doc %d: %v\n%s", i, err, da)
		}
		at, err := time.Parse(time.RFC3339, doc.At)
		if err != nil || at.Before(day) || !at.Before(day.AddDate(0, 0, 1)) {
			t.Errorf("doc %d: @timestamp %q not within %s (%v)", i, doc.At, day.Format("2006-01-02"), err)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000-0700", doc.Timestamp); err != nil {
			t.Errorf("doc %d: timestamp %q: %v", i, doc.Timestamp, err)
		}
		if doc.Rule.ID == "" || doc.Rule.Level < 3 || len(doc.Rule.Groups) == 0 || len(doc.Agent.ID) != 3 ||
			doc.Manager.Name != "mgr" || doc.ID == "" || doc.FullLog == "" || doc.Location == "" {
			t.Errorf("doc %d lacks a field an alert has: %s", i, da)
		}
		rules[doc.Rule.ID] = true
	}
	if len(rules) < len(loadRules) {
		t.Errorf("rules seen %v, want all %d kinds", rules, len(loadRules))
	}
	// Real Wazuh alerts are around a kilobyte; the size flag relies on a stable average.
	if avg := total / 2000; avg < 500 || avg > 2000 {
		t.Errorf("average document %d bytes, want 500..2000", avg)
	}
}
