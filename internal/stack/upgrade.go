package stack

import (
	"context"
	"time"

	"github.com/siemctl/siemctl/internal/ops/hostcheck"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/steps"
)

// snapshotTimeout bounds one capture inside a runbook step.
const snapshotTimeout = 90 * time.Second

// StepDeps returns what the upgrade and rollback step kinds need, backed by
// this stack. Clients that could not be built carry their error; the kinds
// that need them report it.
func (s *Stack) StepDeps() *steps.Deps {
	d := &steps.Deps{
		Config:     s.Config,
		Logger:     s.Logger,
		Now:        time.Now,
		IndexerErr: s.IndexerErr,
		ManagerErr: s.ManagerErr,
		PackageErr: s.PkgErr,
		Units: func(ctx context.Context) (steps.UnitsAPI, error) {
			u, err := s.Units(ctx)
			if err != nil {
				return nil, err
			}
			return u, nil
		},
		Exec: packages.ExecRunner{MaxOutput: 256 << 10},
		Dashboard: func(ctx context.Context) (int, error) {
			a, err := s.Dashboard(ctx)
			return a.Status, err
		},
		Ports: func(ctx context.Context) (map[int]bool, error) {
			l, err := hostcheck.ListeningPorts(ctx)
			if err != nil {
				return nil, err
			}
			out := map[int]bool{}
			for _, p := range l.Ports("tcp") {
				out[p] = true
			}
			return out, nil
		},
		Disk: func(path string) (steps.DiskUsage, error) {
			u, err := hostcheck.Disk(path)
			return steps.DiskUsage{TotalBytes: u.TotalBytes, FreeBytes: u.FreeBytes, UsedPercent: u.UsedPercent}, err
		},
		Snapshot: func(ctx context.Context, label string) (*snapshot.Document, error) {
			opts := s.SnapshotCaptureOptions(label)
			opts.Timeout = snapshotTimeout
			return snapshot.Capture(ctx, s.SnapshotSource(), opts)
		},
		Snapshots: s.SnapshotStore(),
		Probe: func(ctx context.Context) (probe.Report, error) {
			opts, err := s.ProbeOptions()
			if err != nil {
				return probe.Report{}, err
			}
			return probe.Run(ctx, opts)
		},
		Redact: s.Redactor.String,
	}
	// Typed nils must not leak into the interfaces.
	if s.Indexer != nil {
		d.Indexer = s.Indexer
	}
	if s.Manager != nil {
		d.Manager = s.Manager
	}
	if s.Packages != nil {
		d.Packages = s.Packages
	}
	if sh, err := s.Shipper(); err != nil {
		d.ShipperErr = err
	} else {
		d.Shipper = sh
	}
	return d
}
