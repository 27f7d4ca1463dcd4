package steps_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/steps"
)

// The gates map the verdicts of internal/ops/cluster (judged by its
// tables) to go, pending and no-go; one case per answer of each gate.
func TestIndexerVerdictGates(t *testing.T) {
	const today = "siem-alerts-4.x-2026.11.24"
	simulate := "POST /_index_template/_simulate_index/" + today
	siemOnly := []byte(`{"siem":{"order":0,"index_patterns":["siem-alerts-4.x-*"],"settings":{},"mappings":{},"aliases":{}}}`)
	tests := []struct {
		name   string
		kind   string
		routes map[string]indexertest.Route
		used   float64
		want   string // ok | pending | nogo
		text   string
	}{
		{name: "no archived settings", kind: "gate.settings_clean", want: "ok", text: "no archived.* settings"},
		{name: "archived settings", kind: "gate.settings_clean", routes: map[string]indexertest.Route{
			"GET /_cluster/settings": {Body: []byte(`{"persistent":{"archived.xpack.monitoring.enabled":"true"},"transient":{}}`)}},
			want: "nogo", text: `1 archived (unknown) settings: archived.xpack.monitoring.enabled; remove them: PUT _cluster/settings {"persistent":{"archived.*":null},"transient":{"archived.*":null}}`},
		{name: "template wins", kind: "gate.templates", routes: map[string]indexertest.Route{
			simulate: {File: "simulate-index-none.json"}, "GET /_template": {Body: siemOnly}}, want: "ok", text: "template siem wins for " + today},
		{name: "template shadowed", kind: "gate.templates", routes: map[string]indexertest.Route{
			simulate: {File: "simulate-index-none.json"}, "GET /_template": {File: "templates-legacy.json"}},
			want: "nogo", text: `template "siem" is shadowed for ` + today + " by catch-all-alerts; delete or narrow"},
		{name: "template not loaded yet", kind: "gate.templates", routes: map[string]indexertest.Route{
			simulate: {File: "simulate-index-none.json"}, "GET /_template": {Body: []byte(`{}`)}}, want: "ok", text: "does not apply to " + today + " yet (applied: none); the upgrade loads it"},
		{name: "disk fine", kind: "gate.disk", used: 40, want: "ok", text: "40.0% used"},
		{name: "disk: too little free for an upgrade", kind: "gate.disk", used: 86, want: "nogo", text: "14% free: an upgrade needs at least 20% free"},
		{name: "disk above the no-go limit", kind: "gate.disk", used: 97, want: "nogo", text: "disk 97% used (> 95%); free disk: siemctl alerts cleanup --disk-above 85"},
		{name: "allocation left at primaries", kind: "gate.no_trace", routes: map[string]indexertest.Route{
			"GET /_cluster/settings": {File: "settings-primaries.json"}}, want: "pending", text: "left behind: cluster.routing.allocation.enable=primaries (persistent)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := indexertest.Healthy()
			for k, v := range tt.routes {
				r[k] = v
			}
			d := indexerDeps(t, indexertest.NewServer(t, r))
			d.Now = func() time.Time { return time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) }
			d.Config.Indexer.AlertsIndexPrefix, d.Config.Shipper.TemplateName = "siem-alerts-4.x-", "siem"
			d.Config.Thresholds.DiskWarnPercent, d.Config.Thresholds.DiskNogoPercent, d.Config.Thresholds.UpgradeMinFreePercent = 85, 95, 20
			d.Disk = func(string) (steps.DiskUsage, error) {
				return steps.DiskUsage{TotalBytes: 100 << 30, FreeBytes: uint64((100 - tt.used) * (1 << 30)), UsedPercent: tt.used}, nil
			}
			out, err := run(t, d, newEnv(d, nil), tt.kind, nil)
			var (
				pe *engine.PendingError
				ng *engine.NoGoError
			)
			got, text := "ok", out.Message
			switch {
			case errors.As(err, &ng):
				got, text = "nogo", err.Error()
			case errors.As(err, &pe):
				got, text = "pending", err.Error()
			case err != nil:
				t.Fatalf("error: %v", err)
			}
			if got != tt.want || !strings.Contains(text, tt.text) {
				t.Fatalf("got %s %q, want %s containing %q", got, text, tt.want, tt.text)
			}
		})
	}
}
