package agents

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
)

// OutdatedOptions are the inputs of `agents outdated`.
type OutdatedOptions struct {
	IO       *output.IOStreams
	Fleet    Fleet
	Output   string
	Timeout  time.Duration
	Than     *manager.Version
	PageSize int
}

// NewCmdOutdated builds `agents outdated [--than V]`.
func NewCmdOutdated(f *cli.Factory, runF func(context.Context, *OutdatedOptions) error) *cobra.Command {
	opts := &OutdatedOptions{IO: f.IO, Fleet: fleetFrom(f), PageSize: fleet.DefaultPageSize}
	var than string
	cmd := &cobra.Command{
		Use:   "outdated [--than V]",
		Short: "Agents newer than the manager, or older than a version",
		Long: `Without --than: the agents whose version is newer than the manager's (Wazuh does not
support it: upgrade the manager first). With --than V: the agents older than V, e.g. the ones to upgrade
after a manager upgrade. Agents that never connected have no version and are counted apart.`,
		Example: `  siemctl agents outdated
  siemctl agents outdated --than 4.10.0 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if cmd.Flags().Changed("than") {
				v, err := fleet.ParseVersion(than)
				if err != nil {
					return usage(err)
				}
				opts.Than = &v
			}
			return cli.Run(cmd.Context(), runF, runOutdated, opts)
		},
	}
	cmd.Flags().StringVar(&than, "than", "", "list agents older than this version (e.g. 4.10.0)")
	return cmd
}

type outdatedJSON struct {
	fleet.OutdatedReport
	Agents []fleet.OutdatedAgent `json:"agents"`
}

func runOutdated(ctx context.Context, opts *OutdatedOptions) error {
	api, err := opts.Fleet.API(ctx)
	if err != nil {
		return err
	}
	// --timeout bounds each page, not the whole walk of 100,000 agents.
	idle, touch, stop := fleet.IdleDeadline(ctx, opts.Timeout)
	defer stop()
	ctx = idle
	// The outdated agents are collected (they are few in practice; the
	// full listing is streamed).
	agents := []fleet.OutdatedAgent{}
	rep, err := fleet.Outdated(ctx, api, opts.Than, opts.PageSize, func(a fleet.OutdatedAgent) error {
		touch()
		agents = append(agents, a)
		return nil
	})
	if err != nil {
		return idle.Explain(err)
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, outdatedJSON{OutdatedReport: rep, Agents: agents})
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "id", "name", "status", "version")
	for _, a := range agents {
		t.Row(a.ID, a.Name, a.Status, a.Version)
	}
	if len(agents) > 0 {
		if err := t.Render(); err != nil {
			return err
		}
	}
	what := "newer than the manager (" + rep.Reference + ")"
	if rep.Mode == fleet.ModeOlderThan {
		what = "older than " + rep.Reference
	}
	fmt.Fprintf(opts.IO.ErrOut, "%d of %d agents %s; %d without a known version\n", rep.Count, rep.Checked, what, rep.Unknown)
	if rep.Count > 0 && rep.Mode != fleet.ModeOlderThan {
		fmt.Fprintln(opts.IO.ErrOut, "agents must not be newer than the manager: upgrade the manager first")
	}
	return nil
}
