// Package services is `siemctl services`: status, start, stop, restart and
// enable of the stack's units in dependency order with bounded waits.
package services

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/units"
)

// NewCmdServices builds the `services` group.
func NewCmdServices(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:   "services",
		Short: "Status, start, stop, restart and enable the stack's units in dependency order",
		Long: `Manage the four systemd units of the stack in dependency order:
start indexer, manager, dashboard, shipper (waiting up to 60s, 30s, 60s and 30s for each to
be active), stop in the reverse order (verifying the unit's processes are gone), and restart
all in start order. A unit that fails is explained with systemd's result and its last log lines.

Components: indexer, manager, dashboard, shipper, or all (the default: the components this
host runs, config key components).`,
		Example: `  siemctl services status
  siemctl services restart manager
  siemctl services stop all --yes`,
	}, NewCmdStatus(f, nil), NewCmdStart(f, nil), NewCmdStop(f, nil), NewCmdRestart(f, nil), NewCmdEnable(f, nil))
}

// unitsFrom returns the factory's systemd connection.
func unitsFrom(f *cli.Factory) func(ctx context.Context) (services.Units, error) {
	return func(ctx context.Context) (services.Units, error) {
		u, err := f.Units(ctx)
		if err != nil {
			return nil, err
		}
		return u, nil
	}
}

// explainer is the client set's readiness probes and diagnosis
// (internal/factory's Clients).
type explainer interface {
	Ready() services.Probes
	Diagnoser(logLines func(ctx context.Context, st units.UnitStatus, n int) ([]string, error)) func(ctx context.Context, c services.Component, st units.UnitStatus) diagnose.Report
}

// explainFrom gives a runner the client set's readiness probes and
// diagnosis.
func explainFrom(f *cli.Factory) func(ctx context.Context, r *services.Runner) error {
	return func(ctx context.Context, r *services.Runner) error {
		cs, err := cli.ClientsAs[explainer](ctx, f)
		if err != nil {
			return err
		}
		r.Ready = cs.Ready().Ready
		r.Diagnose = cs.Diagnoser(r.LogLines)
		return nil
	}
}

// diagnoseFrom is the client set's diagnosis for `services status`.
func diagnoseFrom(f *cli.Factory) func(ctx context.Context, c services.Component, st units.UnitStatus) (diagnose.Report, error) {
	return func(ctx context.Context, c services.Component, st units.UnitStatus) (diagnose.Report, error) {
		cs, err := cli.ClientsAs[explainer](ctx, f)
		if err != nil {
			return diagnose.Report{}, err
		}
		return cs.Diagnoser(nil)(ctx, c, st), nil
	}
}

// unitMapFrom returns the component → unit map of the components this host
// runs (config components).
func unitMapFrom(f *cli.Factory) func() (map[string]string, error) {
	return func() (map[string]string, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		return cfg.HostUnits(), nil
	}
}

// startWaitsFrom returns the host's start wait limits (config start_wait keys).
func startWaitsFrom(f *cli.Factory) func() (map[string]time.Duration, error) {
	return func() (map[string]time.Duration, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		return cfg.StartWaits(), nil
	}
}

func completeComponents(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return append(append([]string{}, services.StartOrder...), "all"), cobra.ShellCompDirectiveNoFileComp
}

// since renders a time: relative on a terminal, RFC 3339 UTC otherwise.
func since(t, now time.Time, tty bool) string {
	if t.IsZero() {
		return "-"
	}
	if !tty {
		return t.UTC().Format(time.RFC3339)
	}
	return output.Ago(t, now)
}
