// Package stack turns siemctl's configuration into live clients for the
// SIEM stack: the indexer, the manager API and tools, systemd, the package
// manager, the dashboard and the shipper. It resolves secrets once, keeps
// them out of every message, and exposes the adapters the health checks,
// snapshots and upgrade steps use. Commands get a *Stack from the Factory.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/redact"
	"github.com/siemctl/siemctl/internal/units"
)

// Options tune Open.
type Options struct {
	Logger    *slog.Logger
	LookupEnv func(string) (string, bool)
	// Redactor learns the resolved secrets (nil: the stack keeps its own).
	Redactor *redact.Redactor
	// Timeout is a per-request ceiling for the HTTP clients (0: only the
	// caller's context bounds requests).
	Timeout time.Duration
}

// Stack holds the clients. A client that could not be built is nil and its
// *Err says why (e.g. the password file is missing); commands that need it
// report that error.
type Stack struct {
	Config *config.Config
	Logger *slog.Logger

	Indexer    *indexer.Client
	IndexerErr error
	Manager    *manager.Client
	ManagerErr error
	Tools      manager.Tools
	Packages   *packages.Manager
	PkgErr     error

	// Redactor knows the resolved secrets: everything that leaves siemctl
	// (output, journals, snapshots) passes through it.
	Redactor *redact.Redactor
	// passwords are the resolved passwords by section (for the default
	// credential comparison; password_env is gone from the environment
	// once read).
	passwords map[string]string

	unitsOnce sync.Once
	units     *units.Manager
	unitsErr  error
}

// Open builds the clients from cfg. It never fails as a whole: per-client
// failures are recorded on the Stack.
func Open(ctx context.Context, cfg *config.Config, opts Options) *Stack {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Stack{Config: cfg, Logger: log, Redactor: opts.Redactor, passwords: map[string]string{}}
	if s.Redactor == nil {
		s.Redactor = redact.New()
	}
	s.Tools = manager.Tools{InstallDir: cfg.Manager.InstallDir, ControlName: cfg.Manager.ControlTool, ConfigCheck: cfg.Manager.ConfigCheck}

	if pw, err := cfg.Indexer.Resolve(ctx, "indexer", opts.LookupEnv); err != nil {
		s.IndexerErr = err
	} else {
		s.Redactor.Add(pw, cfg.Indexer.Username+":"+pw) // the second: what Basic auth encodes
		s.passwords["indexer"] = pw
		s.Indexer, s.IndexerErr = indexer.New(indexer.Options{URL: cfg.Indexer.URL, Username: cfg.Indexer.Username, Password: pw,
			CAFile: cfg.Indexer.CAFile, Insecure: cfg.Indexer.Insecure, Timeout: opts.Timeout, Logger: log})
	}
	if pw, err := cfg.Manager.Resolve(ctx, "manager", opts.LookupEnv); err != nil {
		s.ManagerErr = err
	} else {
		s.Redactor.Add(pw, cfg.Manager.Username+":"+pw)
		s.passwords["manager"] = pw
		s.Manager, s.ManagerErr = manager.New(manager.Options{URL: cfg.Manager.APIURL, Username: cfg.Manager.Username, Password: pw,
			CAFile: cfg.Manager.CAFile, Insecure: cfg.Manager.Insecure, Timeout: opts.Timeout, Logger: log})
	}
	// No child (package manager, shipper, security tools, password
	// commands, journalctl) inherits a password read from the environment.
	for _, sec := range []config.Secret{cfg.Indexer.Secret, cfg.Manager.Secret} {
		if sec.PasswordEnv != "" && len(sec.PasswordCommand) == 0 {
			_ = os.Unsetenv(sec.PasswordEnv)
		}
	}
	s.Packages, s.PkgErr = packages.New(cfg.Packages.Manager, nil)
	return s
}

// Units connects to systemd once, lazily.
func (s *Stack) Units(ctx context.Context) (*units.Manager, error) {
	s.unitsOnce.Do(func() {
		s.units, s.unitsErr = units.New(ctx, s.Config.Systemd.Address, units.Options{Logger: s.Logger})
	})
	return s.units, s.unitsErr
}

// Close releases connections.
func (s *Stack) Close() error {
	var errs []error
	if s.units != nil {
		errs = append(errs, s.units.Close())
	}
	if s.Indexer != nil {
		errs = append(errs, s.Indexer.Close())
	}
	return errors.Join(errs...)
}

// NeedIndexer returns the indexer client or the reason there is none.
func (s *Stack) NeedIndexer() (*indexer.Client, error) {
	if s.Indexer == nil {
		return nil, fmt.Errorf("indexer: %w", s.IndexerErr)
	}
	return s.Indexer, nil
}

// NeedManager returns the manager API client or the reason there is none.
func (s *Stack) NeedManager() (*manager.Client, error) {
	if s.Manager == nil {
		return nil, fmt.Errorf("manager API: %w", s.ManagerErr)
	}
	return s.Manager, nil
}

// NeedPackages returns the package manager or the reason there is none.
func (s *Stack) NeedPackages() (*packages.Manager, error) {
	if s.Packages == nil {
		return nil, fmt.Errorf("packages: %w", s.PkgErr)
	}
	return s.Packages, nil
}

// InstalledVersions returns component → installed package version ("" if
// not installed).
func (s *Stack) InstalledVersions(ctx context.Context) (map[string]string, error) {
	pm, err := s.NeedPackages()
	if err != nil {
		return nil, err
	}
	names := s.Config.PackageNames()
	byPkg, err := pm.Installed(ctx, names["indexer"], names["manager"], names["dashboard"], names["shipper"])
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for comp, pkg := range names {
		out[comp] = byPkg[pkg]
	}
	return out, nil
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
