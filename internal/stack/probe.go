package stack

import (
	"context"
	"path/filepath"

	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/ops/probe"
)

// AlertsFile is the manager's JSON alerts file ({install_dir}/logs/alerts/alerts.json).
func (s *Stack) AlertsFile() string {
	if s.Config.Manager.InstallDir == "" {
		return ""
	}
	return filepath.Join(s.Config.Manager.InstallDir, "logs", "alerts", "alerts.json")
}

// AlertsPattern is the alerts index pattern (alerts_index_prefix + "*").
func (s *Stack) AlertsPattern() string { return s.Config.Indexer.AlertsIndexPrefix + "*" }

// ProbeOptions returns the data-flow probe's options for this stack; the
// caller may override the clock, interval and timeout.
func (s *Stack) ProbeOptions() (probe.Options, error) {
	ix, err := s.NeedIndexer()
	if err != nil {
		return probe.Options{}, err
	}
	t := s.ProbeTarget() // validated by the caller (a usage error) or probe.Run
	return probe.Options{Syslog: t.Syslog, Queue: t.Queue, AlertsFile: s.AlertsFile(), IndexPattern: s.AlertsPattern(), Searcher: ix}, nil
}

// ProbeTarget is where the probe's event goes (probe.NewTarget).
func (s *Stack) ProbeTarget() probe.Target {
	return probe.NewTarget(s.Config.Manager.Syslog, s.Config.Manager.InstallDir)
}

// Probe runs the data-flow probe for the health check (alerts.probe): the
// event is followed until it is searchable or the ctx deadline (at most 60 s).
// Hops not observable from here (alerts file unreadable) are left out.
func (s *Stack) Probe(ctx context.Context) (health.ProbeReport, error) {
	opts, err := s.ProbeOptions()
	if err != nil {
		return health.ProbeReport{}, err
	}
	rep, err := probe.Run(ctx, opts)
	if err != nil {
		return health.ProbeReport{}, err
	}
	return HealthProbeReport(rep), nil
}

// HealthProbeReport converts a probe report for the health check.
func HealthProbeReport(rep probe.Report) health.ProbeReport {
	out := health.ProbeReport{OK: rep.OK, Nonce: rep.Nonce, BrokenAt: rep.BrokenAt}
	for _, h := range rep.Hops {
		if h.State == probe.StateSkipped {
			continue
		}
		out.Hops = append(out.Hops, health.ProbeHop{Name: h.Name, OK: h.State == probe.StateOK, Latency: h.Latency, Detail: h.Detail})
	}
	return out
}
