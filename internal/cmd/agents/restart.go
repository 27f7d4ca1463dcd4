package agents

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
)

// RestartOptions are the inputs of `agents restart`.
type RestartOptions struct {
	ChangeOptions
	All bool
}

// NewCmdRestart builds `agents restart ID...|--all`.
func NewCmdRestart(f *cli.Factory, runF func(context.Context, *RestartOptions) error) *cobra.Command {
	opts := &RestartOptions{ChangeOptions: newChangeOptions(f)}
	cmd := f.ChangeCommand(&cobra.Command{
		ValidArgsFunction: completeAgentIDs(f),
		Use:               "restart ID...|--all",
		Short:             "Restart agents and report the outcome per agent",
		Long: `Send a restart to agents and print one line per agent. Failures are explained: 1701 the
agent does not exist, 1703 agent 000 is the manager, 1707 the agent is not connected, 1750
active response is disabled on it. If any agent failed, the table is printed and the exit
code is 1. --all restarts every connected agent. Asks for confirmation on a terminal (--yes
off one) and takes the host lock (exit 6 while an upgrade runs); --dry-run prints the request.`,
		Example: `  siemctl agents restart 001 002
  siemctl agents restart 001 --yes
  siemctl agents restart --all --dry-run`,
	}, func(cmd *cobra.Command, args []string, change cli.Change) error {
		opts.fill(f, args, change)
		switch {
		case opts.All && len(args) > 0:
			return cli.FlagErrorf("give agent ids or --all, not both")
		case !opts.All && len(args) == 0:
			return cli.FlagErrorf("give at least one agent id, or --all")
		case !opts.All:
			if err := fleet.ValidateIDs(args, "restart"); err != nil {
				return usage(err)
			}
		}
		return cli.Run(cmd.Context(), runF, runRestart, opts)
	})
	cmd.Flags().BoolVar(&opts.All, "all", false, "restart every agent")
	return cmd
}

func runRestart(ctx context.Context, opts *RestartOptions) error {
	if !opts.All {
		if err := fleet.ValidateIDs(opts.IDs, "restart"); err != nil {
			return usage(err)
		}
	}
	q := fmt.Sprintf("Restart agent(s) %s?", strings.Join(opts.IDs, ", "))
	if opts.All {
		q = "Restart every connected agent?"
	}
	ctx, api, done, err := opts.begin(ctx, q, func() ([]string, error) { return fleet.RestartCalls(opts.IDs, opts.All) })
	if api == nil {
		return err
	}
	defer done()
	var res fleet.Outcomes
	if opts.All {
		res, err = fleet.RestartAll(ctx, api)
	} else {
		res, err = fleet.Restart(ctx, api, opts.IDs)
	}
	if err != nil {
		return usage(timeoutError(ctx, err, opts.Timeout, "the restart may still reach the agents; see `siemctl agents list` before retrying"))
	}
	return renderOutcomes(opts.IO, opts.Output, res, "restarted")
}

// renderOutcomes prints the per-agent table (or JSON) and turns failures
// into exit 1 after printing.
func renderOutcomes(io *output.IOStreams, format string, res fleet.Outcomes, okWord string) error {
	if format == "json" {
		if err := output.JSON(io.Out, res); err != nil {
			return err
		}
	} else {
		p := io.Colors()
		t := output.NewTable(io.Out, io.IsStdoutTTY(), "id", "result", "code", "reason")
		for _, a := range res.Agents {
			if a.OK {
				t.Row(a.ID, p.Green(okWord), "-", "-")
				continue
			}
			reason := a.Message
			if a.Explanation != "" {
				reason += ": " + a.Explanation
			}
			code := "-"
			if a.Code != 0 {
				code = fmt.Sprint(a.Code)
			}
			t.Row(a.ID, p.Red("failed"), code, reason)
		}
		if err := t.Render(); err != nil {
			return err
		}
		if len(res.Agents) == 0 {
			fmt.Fprintf(io.ErrOut, "%s\n", strings.TrimSpace("no agent affected. "+res.Message))
		}
	}
	if res.Failed > 0 {
		return &cli.ExitError{Code: cli.ExitFailure, Reason: fmt.Sprintf("%s failed for %d of %d agents", res.Action, res.Failed, len(res.Agents))}
	}
	return nil
}
