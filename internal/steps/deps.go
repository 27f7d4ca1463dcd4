package steps

import (
	"context"
	"log/slog"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/process"
	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/units"
)

// Clients are the pieces of the client set the step kinds use. A client
// that could not be built is nil and its *Err says why; the kinds that need
// it report that error.
type Clients struct {
	Indexer    *indexer.Client
	IndexerErr error
	Manager    *manager.Client
	ManagerErr error
	Packages   *packages.Manager
	PackageErr error
	Shipper    *shipper.Shipper
	ShipperErr error
	Units      func(ctx context.Context) (*units.Manager, error)
	Dashboard  hostfacts.Dashboard
	// Probe runs the data-flow probe (nil: the kinds' own fallback).
	Probe func(ctx context.Context) (probe.Report, error)
	// Snapshot captures the stack's state under label (not saved).
	Snapshot  func(ctx context.Context, label string) (*snapshot.Document, error)
	Snapshots *snapshot.Store
	// Redact removes the resolved secrets from a message.
	Redact func(string) string
	// Ready and Diagnose: see Deps.
	Ready    services.Probes
	Diagnose func(ctx context.Context, c services.Component, st units.UnitStatus) diagnose.Report
}

// NewDeps returns the step kinds' dependencies over the real clients: the
// host's listening ports and disk, the dashboard's status, the security
// tool's and the data hooks' exec runner (process.ExecRunner: each output
// stream's tail kept up to its default cap).
func NewDeps(cfg *config.Config, log *slog.Logger, c Clients) *Deps {
	d := &Deps{
		Config:     cfg,
		Logger:     log,
		Now:        time.Now,
		IndexerErr: c.IndexerErr,
		ManagerErr: c.ManagerErr,
		PackageErr: c.PackageErr,
		ShipperErr: c.ShipperErr,
		Exec:       process.ExecRunner{},
		Dashboard: func(ctx context.Context) (int, error) {
			a, err := c.Dashboard.Status(ctx)
			return a.Status, err
		},
		Ports: hostfacts.ListeningTCP,
		Disk: func(path string) (DiskUsage, error) {
			u, err := hostfacts.Disk(path)
			return DiskUsage{TotalBytes: u.TotalBytes, FreeBytes: u.FreeBytes, UsedPercent: u.UsedPercent}, err
		},
		Snapshot:  c.Snapshot,
		Snapshots: c.Snapshots,
		Redact:    c.Redact,
		Ready:     c.Ready,
		Diagnose:  c.Diagnose,
	}
	if c.Units != nil {
		d.Units = func(ctx context.Context) (UnitsAPI, error) {
			u, err := c.Units(ctx)
			if err != nil {
				return nil, err
			}
			return u, nil
		}
	}
	d.Probe = c.Probe
	// Typed nils must not leak into the interfaces.
	if c.Indexer != nil {
		d.Indexer = c.Indexer
	}
	if c.Manager != nil {
		d.Manager = c.Manager
	}
	if c.Packages != nil {
		d.Packages = c.Packages
	}
	if c.Shipper != nil {
		d.Shipper = c.Shipper
	}
	return d
}
