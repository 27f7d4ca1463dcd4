package upgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// The confirmation names the data safety mode and what a rollback will and
// will not bring back.
func TestApplyConfirmationSaysWhatRollbackBrings(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.IO.SetTTY(true, true, true)
	fx.common.IO.In = strings.NewReader("n\n")
	if err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook}); !errors.Is(err, output.ErrDeclined) {
		t.Fatalf("declined: %v", err)
	}
	q := fx.errOut.String()
	for _, want := range []string{"services stop while it runs; data safety auto (preflight/data-safety picks a snapshot when the repository is usable, else a cold copy)",
		"a rollback brings back the indexer data as of that snapshot or copy, not documents indexed after it. Proceed? [y/N]"} {
		if !strings.Contains(q, want) {
			t.Errorf("the question %q lacks %q", q, want)
		}
	}
}

// The run report (text, JSON, HTML page) says the mode, why, the snapshot,
// and what a rollback brings back and what not.
func TestReportSaysDataSafety(t *testing.T) {
	b := steps.Backups{Dir: "/var/backups/siemctl/r", IndexerDataMode: "snapshot", DataSafety: "snapshot",
		DataSafetyWhy: "indexer.data_safety auto: the snapshot repository is usable and has room",
		IndexerSnapshot: &steps.DataSnapshot{Repository: "siemctl", Location: "/var/lib/siem-snaprepo/siemctl", Name: "siemctl-20261120t100000z-3d4e5f",
			Indices: []string{"siem-alerts-4.x-2026.11.20"}, Shards: 1, IncrementalBytes: 5000, TotalBytes: 90000}}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	ri := &engine.RunInfo{ID: "20261120T100000Z-3d4e5f", Status: engine.StatusSucceeded, Data: map[string]json.RawMessage{rundata.KeyBackups: raw}}
	rep := upgrade.NewRunReport(ri, nil)
	if rep.DataSafety == nil || rep.DataSafety.Mode != "snapshot" || !strings.Contains(rep.DataSafety.Rollback, "as of snapshot siemctl-20261120t100000z-3d4e5f") {
		t.Fatalf("data safety %+v", rep.DataSafety)
	}
	var text bytes.Buffer
	ios, _, _, _ := output.Test()
	if err := rep.Render(&text, false, ios.Colors()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"snapshot (indexer.data_safety auto: the snapshot repository is usable and has room)",
		"restoring the alert indices as of snapshot siemctl-20261120t100000z-3d4e5f", "documents indexed after it are not brought back"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	page, err := upgrade.RenderHTML(&upgrade.Evidence{Report: rep, Snapshots: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<span data-k="data_safety">snapshot</span>`, "<code>siemctl/siemctl-20261120t100000z-3d4e5f</code> at <code>/var/lib/siem-snaprepo/siemctl</code>: 1 indices, 1 shards, 5000 bytes copied (incremental) of 90000",
		"<td>a rollback brings back</td><td>restoring the alert indices as of snapshot"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Before the mode was chosen there is nothing to say.
	if r := upgrade.NewRunReport(&engine.RunInfo{ID: ri.ID, Data: map[string]json.RawMessage{}}, nil); r.DataSafety != nil {
		t.Errorf("data safety without a mode: %+v", r.DataSafety)
	}
}
