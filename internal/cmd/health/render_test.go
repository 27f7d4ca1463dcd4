package health

import (
	"bytes"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/output"
)

func fixedReport() health.Report {
	return health.Report{
		CheckedAt: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC),
		Duration:  840 * time.Millisecond,
		Results: []health.Result{
			{ID: "units", Component: "host", Status: health.OK, Summary: "4/4 units active", Evidence: []string{}},
			{ID: "indexer.allocation", Component: "indexer", Status: health.Warn, Summary: "cluster.routing.allocation.enable is primaries (persistent)",
				Evidence: []string{"persistent cluster.routing.allocation.enable=primaries"},
				Fix:      `siemctl indexer allocation all`, Metrics: map[string]float64{"unassigned_replicas": 3}},
			{ID: "manager.api", Component: "manager", Status: health.Crit, Summary: "unreachable: connection refused", Evidence: []string{"POST https://127.0.0.1:55000/security/user/authenticate: connection refused"},
				Fix: "siemctl services start manager"},
			{ID: "alerts.flow", Component: "alerts", Status: health.Unknown, Summary: "not checked: indexer unreachable", Evidence: []string{}},
		},
		Notes: []string{"TLS verification is disabled for the dashboard (dashboard.insecure: true)"},
	}
}

func TestRenderGoldens(t *testing.T) {
	rep := fixedReport()
	rep.Verdict = health.Verdict(rep.Results)
	cases := map[string]func(*bytes.Buffer) error{
		"table_notty": func(b *bytes.Buffer) error { return renderTable(b, rep, (&output.IOStreams{}).Colors(), false) },
		"table_tty":   func(b *bytes.Buffer) error { return renderTable(b, rep, (&output.IOStreams{}).Colors(), true) },
		"json":        func(b *bytes.Buffer) error { return renderJSON(b, rep) },
		"nagios":      func(b *bytes.Buffer) error { return renderNagios(b, rep) },
		"prometheus":  func(b *bytes.Buffer) error { return renderPrometheus(b, rep) },
	}
	for name, render := range cases {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "render_"+name, b.Bytes())
		})
	}
}
