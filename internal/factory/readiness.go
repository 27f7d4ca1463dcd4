package factory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/internal/units"
)

// Ready are the components' readiness probes over this set (start means
// ready): the indexer answers GET / as itself (node, cluster and version,
// the names its opensearch.yml sets; the security plugin's 503 "not
// initialised" while it loads included; a 401 is left to health), the manager
// API's daemons are ready (no 1017), the dashboard's GET / answers below
// 500, the shipper's `test config` passes and its output neither refuses its
// credentials nor points away from the indexer that answers siemctl.
func (s *Clients) Ready() services.Probes {
	p := services.Probes{}
	if ix, err := s.Indexer.Get(); err == nil {
		cluster, node := diagnose.IndexerIdentity(s.Config.Indexer.ConfigDir)
		id := indexer.Identity{ClusterName: cluster, NodeName: node}
		p["indexer"] = func(ctx context.Context) error {
			info, err := ix.Info(ctx)
			switch {
			case errors.Is(err, indexer.ErrSecurityNotInitialized):
				// the security plugin's own 503: the indexer, its plugin still loading
				return nil
			case err == nil:
				// ready means this indexer answers: not any HTTP server on its port
				if err := id.Check(info); err != nil {
					return fmt.Errorf("%w: %w", services.ErrNotItself, err)
				}
				return nil
			case services.Answers(err) != nil:
				return err
			case errors.Is(err, netclient.ErrUnauthorized), errors.Is(err, netclient.ErrForbidden):
				// it answers and refuses siemctl's user: the health checks judge that
				return nil
			}
			// an answer that is not the node's (not JSON, a 404, a proxy's page)
			return fmt.Errorf("%w: %w: %v", services.ErrNotItself, indexer.ErrNotIndexer, err)
		}
	}
	if mc, err := s.Manager.Get(); err == nil {
		p["manager"] = func(ctx context.Context) error {
			_, err := mc.Info(ctx)
			if manager.HasCode(err, manager.CodeDaemonsNotReady) {
				return err
			}
			return services.Answers(err)
		}
	}
	if s.Config.Dashboard.URL != "" {
		d := s.Dashboard
		p["dashboard"] = func(ctx context.Context) error {
			a, err := d.Status(ctx)
			return services.StatusReady(a.Status, err)
		}
	}
	if sh, err := s.Shipper(); err == nil {
		p["shipper"] = func(ctx context.Context) error {
			ok, msg, err := sh.TestConfig(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("test config: " + msg)
			}
			// its output must take its credentials: a 401 or 403 is a named
			// failure now, and so is an output pointed away from the indexer that
			// answers siemctl; an output not answering with the indexer silent too
			// is health's to judge
			rep, err := sh.TestOutput(ctx)
			if err != nil {
				return nil
			}
			if err := s.outputMisdirected(ctx, rep); err != nil {
				return err
			}
			if r, refused := rep.Refused(); refused {
				kind := netclient.ErrUnauthorized
				if r.Status == 403 {
					kind = netclient.ErrForbidden
				}
				return &services.RefusedError{Cause: fmt.Sprintf("its output %s %s", r.URL, r.What()), Err: kind,
					Evidence: []string{"test output: " + r.URL + " talk to server... ERROR " + r.Detail}, Fix: health.RefusalFix(s.Config, r)}
			}
			return nil
		}
	}
	return p
}

// Diagnose is the diagnosis operation over this set: a component's unit
// explained from what it left behind (internal/ops/diagnose).
func (s *Clients) Diagnose(ctx context.Context, component string, st units.UnitStatus, others []units.UnitStatus) diagnose.Report {
	return diagnose.Diagnose(ctx, s.DiagnoseInput(component, st), diagnose.Host{Root: diagnose.RootOf("", append([]units.UnitStatus{st}, others...))})
}

// DiagnoseInput is the diagnosis's input for a component of this set.
func (s *Clients) DiagnoseInput(component string, st units.UnitStatus) diagnose.Input {
	in := diagnose.Input{Component: component, Unit: st, Config: s.Config}
	if st.Name != "" {
		in.Processes = func(ctx context.Context) ([]int, error) {
			u, err := s.Units(ctx)
			if err != nil {
				return nil, err
			}
			return u.Processes(ctx, st.Name)
		}
	}
	if component == "manager" {
		in.ConfigCheck = func(ctx context.Context) ([]string, bool, error) {
			res, err := s.Tools.ControlCheck(ctx)
			if err != nil {
				return nil, false, err
			}
			var out []string
			for _, p := range res.Problems {
				out = append(out, p.String())
			}
			return out, res.OK, nil
		}
	}
	return in
}

// Diagnoser is Diagnose for the services runner: the other units' states
// give the services' mount namespace; logLines (nil: the unit's journal or
// file) reads the unit's own output.
func (s *Clients) Diagnoser(logLines func(ctx context.Context, st units.UnitStatus, n int) ([]string, error)) func(ctx context.Context, c services.Component, st units.UnitStatus) diagnose.Report {
	return func(ctx context.Context, c services.Component, st units.UnitStatus) diagnose.Report {
		var others []units.UnitStatus
		if u, err := s.Units(ctx); err == nil {
			cfg := s.Config
			others, _ = u.Status(ctx, cfg.Indexer.Unit, cfg.Manager.Unit, cfg.Dashboard.Unit, cfg.Shipper.Unit)
		}
		in := s.DiagnoseInput(c.Name, st)
		in.LogLines = logLines
		return diagnose.Diagnose(ctx, in, diagnose.Host{Root: diagnose.RootOf("", append([]units.UnitStatus{st}, others...))})
	}
}

// outputMisdirected is a shipper none of whose output hosts answers while the indexer answers
// siemctl at indexer.url: not an indexer still starting (which waiting mends, and health judges)
// but an output pointed elsewhere (a mistyped host or port), named now with its fix.
func (s *Clients) outputMisdirected(ctx context.Context, rep shipper.Report) error {
	if rep.OK || len(rep.Hosts) == 0 {
		return nil
	}
	var evidence, urls []string
	for _, h := range rep.Hosts {
		st := h.FirstError()
		switch {
		case st == nil, st.Group == "TLS":
			return nil // a host answers, or its TLS fails (health's certs and CA verdicts say why)
		case st.Name != "parse url" && st.Name != "parse host" && st.Name != "dns lookup" && st.Name != "dial up":
			return nil // it answered (a refusal of the credentials: Refused says it)
		}
		urls = append(urls, h.URL)
		evidence = append(evidence, fmt.Sprintf("test output: %s %s... ERROR %s", h.URL, st.Name, st.Detail))
	}
	ix, err := s.Indexer.Get()
	if err != nil {
		return nil
	}
	if _, err := ix.Info(ctx); err != nil && !errors.Is(err, indexer.ErrSecurityNotInitialized) {
		return nil // the indexer does not answer siemctl either: health's to judge
	}
	file := filepath.Join(s.Config.Shipper.ConfigDir, "filebeat.yml")
	return &services.RefusedError{
		Cause:    fmt.Sprintf("its output %s does not answer while the indexer answers siemctl at %s", strings.Join(urls, ", "), s.Config.Indexer.URL),
		Evidence: evidence,
		Fix:      fmt.Sprintf("set output.elasticsearch.hosts in %s to the indexer (%s), then siemctl services restart shipper", file, s.Config.Indexer.URL),
		Err:      diagnose.ErrConfigMismatch,
	}
}
