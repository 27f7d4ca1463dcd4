package agents

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/fleet"
)

// RemoveOptions are the inputs of `agents remove`.
type RemoveOptions struct {
	ChangeOptions
}

// NewCmdRemove builds `agents remove ID...`.
func NewCmdRemove(f *cli.Factory, runF func(context.Context, *RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{ChangeOptions: newChangeOptions(f)}
	return f.ChangeCommand(&cobra.Command{
		ValidArgsFunction: completeAgentIDs(f),
		Use:               "remove ID...",
		Short:             "Remove agents (asks for confirmation; --yes in scripts)",
		Long: `Remove agents from the manager whatever their status and age (the API is called with
status=all and older_than=0s; its default of 7d would refuse recently seen agents). The agents
must re-enrol to come back. One line per agent; exit 1 if any could not be removed. Asks for
confirmation on a terminal (--yes off one) and takes the host lock (exit 6 while an upgrade
runs); --dry-run prints the request.`,
		Example: `  siemctl agents remove 003
  siemctl agents remove 003 004 --yes -o json
  siemctl agents remove 003 --dry-run`,
		Args: cobra.MinimumNArgs(1),
	}, func(cmd *cobra.Command, args []string, change cli.Change) error {
		opts.fill(f, args, change)
		if err := fleet.ValidateIDs(args, "remove"); err != nil {
			return usage(err)
		}
		return cli.Run(cmd.Context(), runF, runRemove, opts)
	})
}

func runRemove(ctx context.Context, opts *RemoveOptions) error {
	if err := fleet.ValidateIDs(opts.IDs, "remove"); err != nil {
		return usage(err)
	}
	q := fmt.Sprintf("Remove agent(s) %s from the manager? They must re-enrol to come back.", strings.Join(opts.IDs, ", "))
	ctx, api, done, err := opts.begin(ctx, q, func() ([]string, error) { return fleet.RemoveCalls(opts.IDs) })
	if api == nil {
		return err
	}
	defer done()
	var rm fleet.Remover
	if tools, err := opts.Fleet.Tools(ctx); err == nil {
		rm, _ = tools.(fleet.Remover)
	}
	res, err := fleet.Remove(ctx, api, rm, opts.IDs)
	if err != nil {
		return usage(timeoutError(ctx, err, opts.Timeout, "the manager may still remove them; see `siemctl agents list` before retrying"))
	}
	if res.Source == fleet.SourceRemoveTool {
		fmt.Fprintf(opts.IO.ErrOut, "warning: removed with %s: %s\n", fleet.SourceRemoveTool, res.Message)
	}
	return renderOutcomes(opts.IO, opts.Output, res, "removed")
}
