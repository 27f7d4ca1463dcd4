package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
)

// TestRecordAndCompareBack: the record keeps the active agents but the
// manager (000); the comparison counts the ones active again and names the
// others by id, a removed agent as "removed", with their last keep-alive.
func TestRecordAndCompareBack(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	before := []manager.Agent{
		{ID: "000", Name: "siem01", Status: "active"},
		{ID: "001", Name: "web-01", Status: "active", Version: "Wazuh v4.9.0"},
		{ID: "002", Name: "web-02", Status: "active", Version: "Wazuh v4.9.0"},
		{ID: "003", Name: "db-01", Status: "active", Version: "Wazuh v4.9.0"},
		{ID: "004", Name: "old-01", Status: "disconnected"},
		{ID: "005", Name: "new-01", Version: ""},
	}
	rec, err := RecordBefore(context.Background(), listerFunc(func() ([]manager.Agent, error) { return append([]manager.Agent(nil), before...), nil }), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Active) != 3 || rec.Fleet.Total != 5 || !rec.Taken.Equal(now) {
		t.Fatalf("record: %+v", rec)
	}
	if got := CountsLine(rec.Fleet.ByStatus); got != "active 3, disconnected 1, unknown 1" {
		t.Errorf("counts line %q", got)
	}
	after := []manager.Agent{
		{ID: "000", Name: "siem01", Status: "active"},
		{ID: "003", Name: "db-01", Status: "disconnected", LastKeepAlive: now.Add(-90 * time.Second)},
		{ID: "001", Name: "web-01", Status: "active"},
	}
	res, err := CompareBack(context.Background(), listerFunc(func() ([]manager.Agent, error) { return after, nil }), rec.Active)
	if err != nil {
		t.Fatal(err)
	}
	if res.Before != 3 || res.Back != 1 || len(res.Missing) != 2 || res.Ratio() != 1.0/3 {
		t.Fatalf("compare: %+v", res)
	}
	want := "002 web-02 removed, last keep-alive never; and 1 more"
	if got := MissingLine(res.Missing, 1, now); got != want {
		t.Errorf("missing line %q, want %q", got, want)
	}
	if got := MissingLine(res.Missing, 5, now); !strings.Contains(got, "003 db-01 disconnected, last keep-alive 2026-03-01T11:58:30Z (1m30s ago)") {
		t.Errorf("missing line %q", got)
	}
	if (Back{}).Ratio() != 1 || CountsLine(nil) != "none" {
		t.Error("no agent before: ratio 1, counts none")
	}
	down := errors.New("connection refused")
	if _, err := CompareBack(context.Background(), listerFunc(func() ([]manager.Agent, error) { return nil, down }), rec.Active); !errors.Is(err, down) {
		t.Errorf("listing error %v", err)
	}
}
