// Package factory wires siemctl's clients from the configuration (gh's
// pkg/cmd/factory): the client set (Clients: indexer, manager API and tools,
// package manager, shipper, dashboard status client, systemd), what is
// assembled from it once (the health checks' inputs, the step kinds'
// dependencies, the live snapshot source, readiness and diagnosis, the
// versions), and Wire, which connects a cli.Factory's client funcs to it.
// Only cmd/siemctl (and tests) import it: no command knows how a client is
// made, and internal/cli, which every command imports, imports no domain
// package for it.
package factory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/process"
	"github.com/siemctl/siemctl/internal/redact"
	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/units"
)

// ClientOptions tune NewClients.
type ClientOptions struct {
	Logger    *slog.Logger
	LookupEnv func(string) (string, bool)
	// Redactor learns the resolved secrets (nil: the set keeps its own).
	Redactor *redact.Redactor
	// Timeout is a per-request ceiling for the HTTP clients (0: only the
	// caller's context bounds requests).
	Timeout time.Duration
}

// Clients is the client set built once from the configuration: the
// indexer, the manager API and tools, the package manager, the shipper,
// the dashboard's status client and (lazily) systemd. A client that could
// not be built carries the reason (e.g. the password file is missing);
// commands that need it report that reason. Commands take the
// narrow pieces they use (Factory.Indexer, Factory.Manager, ...), never the
// set; the health checks, the step kinds and the live snapshot source get
// their inputs from Health, StepDeps and Snapshot.
type Clients struct {
	Config *config.Config
	Logger *slog.Logger

	Indexer   clientset.Client[*indexer.Client]
	Manager   clientset.Client[*manager.Client]
	Tools     manager.Tools
	Packages  clientset.Client[*packages.Manager]
	Dashboard hostfacts.Dashboard

	// Redactor knows the resolved secrets: everything that leaves siemctl
	// (output, journals, snapshots) passes through it.
	Redactor *redact.Redactor
	// passwords are the resolved passwords by section (for the default
	// credential comparison; password_env is gone from the environment
	// once read).
	passwords map[string]string

	unitsOnce sync.Once
	units     clientset.Client[*units.Manager]
}

// The narrow interfaces the consumers take (As narrows at run time).
var (
	_ health.IndexerAPI = (*indexer.Client)(nil)
	_ health.ManagerAPI = (*manager.Client)(nil)
	_ packages.Querier  = (*packages.Manager)(nil)
	_ steps.IndexerAPI  = (*indexer.Client)(nil)
	_ steps.ManagerAPI  = (*manager.Client)(nil)
	_ steps.PackagesAPI = (*packages.Manager)(nil)
	_ steps.ShipperAPI  = (*shipper.Shipper)(nil)
)

// NewClients builds the clients from cfg. It never fails as a whole:
// per-client failures are recorded on the set.
func NewClients(ctx context.Context, cfg *config.Config, opts ClientOptions) *Clients {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Clients{Config: cfg, Logger: log, Redactor: opts.Redactor, passwords: map[string]string{}}
	if s.Redactor == nil {
		s.Redactor = redact.New()
	}
	s.Tools = manager.Tools{InstallDir: cfg.Manager.InstallDir, ControlName: cfg.Manager.ControlTool, ConfigCheck: cfg.Manager.ConfigCheck}
	s.Dashboard = hostfacts.Dashboard{URL: cfg.Dashboard.URL, TLS: netclient.TLSOptions{CAFile: cfg.Dashboard.CAFile, Insecure: cfg.Dashboard.Insecure}}

	if pw, err := cfg.Indexer.Resolve(ctx, "indexer", opts.LookupEnv); err != nil {
		s.Indexer = clientset.Missing[*indexer.Client](err)
	} else {
		s.Redactor.Add(pw, cfg.Indexer.Username+":"+pw) // the second: what Basic auth encodes
		s.passwords["indexer"] = pw
		s.Indexer = clientset.New(indexer.New(indexer.Options{URL: cfg.Indexer.URL, Username: cfg.Indexer.Username, Password: pw,
			CAFile: cfg.Indexer.CAFile, Insecure: cfg.Indexer.Insecure, Timeout: opts.Timeout, Logger: log}))
	}
	if pw, err := cfg.Manager.Resolve(ctx, "manager", opts.LookupEnv); err != nil {
		s.Manager = clientset.Missing[*manager.Client](err)
	} else {
		s.Redactor.Add(pw, cfg.Manager.Username+":"+pw)
		s.passwords["manager"] = pw
		s.Manager = clientset.New(manager.New(manager.Options{URL: cfg.Manager.APIURL, Username: cfg.Manager.Username, Password: pw,
			CAFile: cfg.Manager.CAFile, Insecure: cfg.Manager.Insecure, Timeout: opts.Timeout, Logger: log}))
	}
	// No child (package manager, shipper, security tools, password
	// commands, journalctl) inherits a password read from the environment.
	for _, sec := range []config.Secret{cfg.Indexer.Secret, cfg.Manager.Secret} {
		if sec.PasswordEnv != "" && len(sec.PasswordCommand) == 0 {
			_ = os.Unsetenv(sec.PasswordEnv)
		}
	}
	s.Packages = clientset.New(packages.New(cfg.Packages.Manager, nil))
	return s
}

// Units connects to systemd once, lazily.
func (s *Clients) Units(ctx context.Context) (*units.Manager, error) {
	s.unitsOnce.Do(func() {
		s.units = clientset.New(units.New(ctx, s.Config.Systemd.Address, units.Options{Logger: s.Logger}))
	})
	return s.units.Get()
}

// Close releases connections.
func (s *Clients) Close() error {
	var errs []error
	if u, err := s.units.Get(); err == nil {
		errs = append(errs, u.Close())
	}
	if ix, err := s.Indexer.Get(); err == nil {
		errs = append(errs, ix.Close())
	}
	return errors.Join(errs...)
}

// NeedIndexer returns the indexer client or the reason there is none.
func (s *Clients) NeedIndexer() (*indexer.Client, error) { return s.Indexer.Need("indexer") }

// NeedManager returns the manager API client or the reason there is none.
func (s *Clients) NeedManager() (*manager.Client, error) { return s.Manager.Need("manager API") }

// NeedPackages returns the package manager or the reason there is none.
func (s *Clients) NeedPackages() (*packages.Manager, error) { return s.Packages.Need("packages") }

// Shipper returns the shipper runner for the configured binary.
func (s *Clients) Shipper() (*shipper.Shipper, error) {
	sh, err := shipper.New(s.Config.Shipper.Binary, s.Config.Shipper.ConfigDir, nil)
	if err != nil {
		return nil, err
	}
	return sh.WithPaths(s.Config.Shipper.HomeDir, s.Config.Shipper.DataDir), nil
}

// ProbeOptions returns the data-flow probe's options (syslog target,
// alerts file, alerts index pattern); the caller may override the clock,
// interval and timeout.
func (s *Clients) ProbeOptions() (probe.Options, error) {
	ix, err := s.NeedIndexer()
	if err != nil {
		return probe.Options{}, err
	}
	return probe.OptionsFor(s.Config, ix), nil
}

func (s *Clients) runProbe(ctx context.Context) (probe.Report, error) { return s.followProbe(ctx, nil) }

// followProbe runs the probe, following sent instead of sending its own
// event when given (the upgrade's gate.probe after probe.send).
func (s *Clients) followProbe(ctx context.Context, sent *probe.Sent) (probe.Report, error) {
	opts, err := s.ProbeOptions()
	if err != nil {
		return probe.Report{}, err
	}
	opts.Sent = sent
	return probe.Run(ctx, opts)
}

// sendProbe sends the probe's event ahead (the upgrade's probe.send).
func (s *Clients) sendProbe(ctx context.Context) (probe.Sent, error) {
	opts, err := s.ProbeOptions()
	if err != nil {
		return probe.Sent{}, err
	}
	return probe.Send(ctx, opts)
}

// Health is what the health checks talk to, built from this set: the one
// place their inputs are assembled (siemctl health, upgrade's evidence and
// the snapshot's health section all use it).
func (s *Clients) Health() health.Stack {
	c := s.Config
	hs := health.Stack{
		Config:  c,
		Indexer: clientset.As[health.IndexerAPI](s.Indexer),
		Manager: clientset.As[health.ManagerAPI](s.Manager),
		Tools:   s.Tools,
		Units: func(ctx context.Context) (health.UnitsAPI, error) {
			u, err := s.Units(ctx)
			if err != nil {
				return nil, err
			}
			return u, nil
		},
		Packages:  clientset.As[packages.Querier](s.Packages),
		Ports:     hostfacts.ListeningTCP,
		Dashboard: s.Dashboard.Status,
		Certs: func(ctx context.Context) ([]health.CertInfo, error) {
			return hostfacts.ComponentCerts(ctx, []hostfacts.Endpoint{
				{Component: "indexer", CALabel: "indexer CA", URL: c.Indexer.URL, TLS: netclient.TLSOptions{CAFile: c.Indexer.CAFile, Insecure: c.Indexer.Insecure}},
				{Component: "manager API", CALabel: "manager CA", URL: c.Manager.APIURL, TLS: netclient.TLSOptions{CAFile: c.Manager.CAFile, Insecure: c.Manager.Insecure}},
				{Component: "dashboard", CALabel: "dashboard CA", URL: c.Dashboard.URL, TLS: netclient.TLSOptions{CAFile: c.Dashboard.CAFile, Insecure: c.Dashboard.Insecure}},
			}), nil
		},
		IndexerTLS: func(ctx context.Context) ([]hostfacts.TLSCause, error) {
			return hostfacts.IndexerCertCauses(ctx, hostfacts.IndexerCertInputs{URL: c.Indexer.URL, IndexerConfDir: c.Indexer.ConfigDir,
				ShipperConfDir: c.Shipper.ConfigDir, DashboardConfDir: c.Dashboard.ConfigDir, SiemctlCA: c.Indexer.CAFile}, time.Now()), nil
		},
		Shipper: health.ShipperChecks{Shipper: s.Shipper},
		Probe:   s.runProbe,
	}
	creds := health.DefaultCredentials{Config: c, Passwords: s.passwords}
	// Typed nils must not leak into the interfaces.
	if ix, err := s.Indexer.Get(); err == nil {
		creds.Indexer = ix
	}
	if mg, err := s.Manager.Get(); err == nil {
		creds.Manager = mg
	}
	hs.DefaultCredentials = creds.Find
	hs.Diagnose = s.Diagnose
	hs.PortHolders = hostfacts.HostHolders
	hs.UnitProcesses = func(ctx context.Context, unit string) ([]int, error) {
		u, err := s.Units(ctx)
		if err != nil {
			return nil, err
		}
		return u.Processes(ctx, unit)
	}
	return hs
}

// snapshotTimeout bounds one capture inside a runbook step.
const snapshotTimeout = 90 * time.Second

// StepDeps returns what the upgrade and rollback step kinds need: this
// set's clients (a client that could not be built carries its reason), the
// host's listening ports and disk, the dashboard's status, the security
// tool's and the data hooks' exec runner (process.ExecRunner: each output
// stream's tail kept up to its default cap), snapshots, the probe,
// readiness and diagnosis.
func (s *Clients) StepDeps() *steps.Deps {
	return &steps.Deps{
		Config: s.Config, Logger: s.Logger, Now: time.Now,
		Indexer:  clientset.As[steps.IndexerAPI](s.Indexer),
		Manager:  clientset.As[steps.ManagerAPI](s.Manager),
		Packages: clientset.As[steps.PackagesAPI](s.Packages),
		Shipper:  clientset.As[steps.ShipperAPI](clientset.New(s.Shipper())),
		Units: func(ctx context.Context) (steps.UnitsAPI, error) {
			u, err := s.Units(ctx)
			if err != nil {
				return nil, err
			}
			return u, nil
		},
		Exec: process.ExecRunner{},
		Dashboard: func(ctx context.Context) (int, error) {
			a, err := s.Dashboard.Status(ctx)
			return a.Status, err
		},
		Ports: hostfacts.ListeningTCP,
		Disk: func(path string) (steps.DiskUsage, error) {
			u, err := hostfacts.Disk(path)
			return steps.DiskUsage{TotalBytes: u.TotalBytes, FreeBytes: u.FreeBytes, UsedPercent: u.UsedPercent}, err
		},
		Snapshot: func(ctx context.Context, label string) (*snapshot.Document, error) {
			opts := s.CaptureOptions(label)
			opts.Timeout = snapshotTimeout
			return snapshot.Capture(ctx, s.Snapshot(), opts)
		},
		Snapshots:   s.SnapshotStore(),
		Probe:       s.runProbe,
		ProbeSend:   s.sendProbe,
		ProbeFollow: func(ctx context.Context, sent probe.Sent) (probe.Report, error) { return s.followProbe(ctx, &sent) },
		Redact:      s.Redactor.String,
		Ready:       s.Ready(),
		Diagnose:    s.Diagnoser(nil),
	}
}

// Snapshot is the live snapshot source over this set.
func (s *Clients) Snapshot() *snapshot.Live {
	src := &snapshot.Live{Config: s.Config, Indexer: s.Indexer, Manager: s.Manager,
		Systemd: s.Units, Packages: clientset.As[packages.Querier](s.Packages), Dashboard: s.Dashboard}
	src.CheckHealth = SnapshotHealth(s.Health(), nil, nil)
	return src
}

// SnapshotHealth is a snapshot's health section over stack st: checks (nil:
// the catalogue without the deep probes) run with clock now (nil: the wall
// clock), each kept as id, status and summary.
func SnapshotHealth(st health.Stack, checks []health.Check, now func() time.Time) func(ctx context.Context) ([]snapshot.HealthResult, error) {
	return func(ctx context.Context) ([]snapshot.HealthResult, error) {
		if checks == nil {
			all, err := health.Select(health.Catalogue(), health.Selection{})
			if err != nil {
				return nil, err
			}
			checks = all
		}
		rep := health.Run(ctx, &health.Env{Now: now, Stack: st}, checks)
		out := make([]snapshot.HealthResult, 0, len(rep.Results))
		for _, r := range rep.Results {
			out = append(out, snapshot.HealthResult{ID: r.ID, Status: r.Status.String(), Summary: r.Summary})
		}
		return out, nil
	}
}

// SnapshotStore is the store under state_dir/snapshots.
func (s *Clients) SnapshotStore() *snapshot.Store {
	return &snapshot.Store{Dir: filepath.Join(s.Config.StateDir, "snapshots"), Logger: s.Logger}
}

// CaptureOptions are the options a capture uses: host name, siemctl
// version, the alerts index prefix and the resolved secrets (so none of
// them can reach the document).
func (s *Clients) CaptureOptions(label string) snapshot.CaptureOptions {
	host, _ := os.Hostname()
	return snapshot.CaptureOptions{
		Label:             label,
		Host:              host,
		SiemctlVersion:    buildinfo.Get().Version,
		AlertsIndexPrefix: s.Config.Indexer.AlertsIndexPrefix,
		Redactor:          s.Redactor,
	}
}

// New returns the production Factory (cli.NewFactory) with its clients
// wired (Wire).
func New(io *output.IOStreams, env []string) *cli.Factory {
	f := cli.NewFactory(io, env)
	Wire(f)
	return f
}

// Wire connects f's clients to one client set, built on first use from
// f.Config with f's logger and redactor.
func Wire(f *cli.Factory) { WireSet(f, lazyClients(f)) }

// WireSet connects f's client funcs to the set get returns (a test's set of
// fakes, or the lazily built one).
func WireSet(f *cli.Factory, get func(ctx context.Context) (*Clients, error)) {
	f.Clients = func(ctx context.Context) (cli.ClientSet, error) {
		s, err := get(ctx)
		if err != nil {
			return nil, err // no typed nil in the interface
		}
		return s, nil
	}
	f.Indexer = func(ctx context.Context) (*indexer.Client, error) {
		s, err := get(ctx)
		if err != nil {
			return nil, err
		}
		return s.NeedIndexer()
	}
	f.Manager = func(ctx context.Context) (*manager.Client, error) {
		s, err := get(ctx)
		if err != nil {
			return nil, err
		}
		return s.NeedManager()
	}
	f.ManagerTools = func(ctx context.Context) (manager.Tools, error) {
		s, err := get(ctx)
		if err != nil {
			return manager.Tools{}, err
		}
		return s.Tools, nil
	}
	f.Units = func(ctx context.Context) (*units.Manager, error) {
		s, err := get(ctx)
		if err != nil {
			return nil, err
		}
		u, err := s.Units(ctx)
		if err != nil {
			return nil, fmt.Errorf("systemd: %w", err)
		}
		return u, nil
	}
}

// lazyClients builds the client set once per process, on first use.
func lazyClients(f *cli.Factory) func(ctx context.Context) (*Clients, error) {
	var (
		once sync.Once
		s    *Clients
		err  error
	)
	return func(ctx context.Context) (*Clients, error) {
		once.Do(func() {
			cfg, cerr := f.Config()
			if cerr != nil {
				err = cerr
				return
			}
			s = NewClients(ctx, cfg, ClientOptions{Logger: f.Logger, LookupEnv: os.LookupEnv, Redactor: f.Redactor})
		})
		return s, err
	}
}

// LiveSnapshot is the live snapshot source over this set and the options
// of a capture labelled label (host, version, alerts prefix, the secrets to
// keep out of the document).
func (s *Clients) LiveSnapshot(label string) (*snapshot.Live, snapshot.CaptureOptions) {
	return s.Snapshot(), s.CaptureOptions(label)
}
