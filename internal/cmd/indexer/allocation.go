package indexer

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/output"
)

// AllocationOptions are the inputs of `indexer allocation`.
type AllocationOptions struct {
	IO      *output.IOStreams
	API     func(ctx context.Context) (cluster.API, error)
	Output  string
	Timeout time.Duration
	Set     string // "" (show), primaries, all
	Change  cli.Change
}

// NewCmdAllocation builds `indexer allocation [show|primaries|all]`.
func NewCmdAllocation(f *cli.Factory, runF func(context.Context, *AllocationOptions) error) *cobra.Command {
	opts := &AllocationOptions{IO: f.IO, API: apiFrom(f)}
	return f.ChangeCommand(&cobra.Command{
		Use:   "allocation [show|primaries|all]",
		Short: "Show or set cluster.routing.allocation.enable",
		Long: `show (the default) prints the effective value of cluster.routing.allocation.enable and
where it comes from (transient, persistent or the default "all").

primaries and all set it persistently (a transient value that would override it is removed),
verify the node acknowledged the change and read it back. The upgrade sets primaries before
stopping the indexer; "all" afterwards: unassigned shards with allocation left at primaries
mean "set it back to all". Setting asks for confirmation on a terminal (--yes off one), takes
the host lock (exit 6 while an upgrade runs) and --dry-run prints the request instead.`,
		Example: `  siemctl indexer allocation
  siemctl indexer allocation primaries
  siemctl indexer allocation all -o json --yes
  siemctl indexer allocation primaries --dry-run`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"show", "primaries", "all"},
	}, func(cmd *cobra.Command, args []string, change cli.Change) error {
		opts.Output, opts.Timeout, opts.Set, opts.Change = f.Global.Output, f.Global.Timeout, "", change
		if len(args) == 1 {
			switch args[0] {
			case "show":
			case "primaries", "all":
				opts.Set = args[0]
			default:
				return cli.FlagErrorf("allocation %q: use show, primaries or all", args[0])
			}
		}
		return cli.Run(cmd.Context(), runF, runAllocation, opts)
	})
}

func runAllocation(ctx context.Context, opts *AllocationOptions) error {
	ctx, api, cancel, err := cli.Connect(ctx, opts.Timeout, opts.API)
	if err != nil {
		return err
	}
	defer cancel()
	if opts.Set == "" {
		st, err := cluster.Allocation(ctx, api)
		if err != nil {
			return err
		}
		if opts.Output == "json" {
			return output.JSON(opts.IO.Out, st)
		}
		p := opts.IO.Colors()
		v := st.Value
		back := cluster.AllocationSettingBack(indexer.Setting{Key: st.Key, Value: st.Value, Source: indexer.Source(st.Source)}).Level == cluster.OK
		if back {
			v = p.Green(v)
		} else {
			v = p.Yellow(v)
		}
		if err := output.KV(opts.IO.Out,
			[2]string{st.Key, v + " (" + st.Source + ")"},
			[2]string{"persistent", orUnset(st.Persistent)},
			[2]string{"transient", orUnset(st.Transient)}); err != nil {
			return err
		}
		if !back {
			fmt.Fprintln(opts.IO.ErrOut, "replicas (or all shards) are not being allocated; after maintenance: siemctl indexer allocation all")
		}
		return nil
	}
	q := fmt.Sprintf("Set %s to %s?", indexer.KeyAllocationEnable, opts.Set)
	if opts.Set == "primaries" {
		q += " Replicas are not allocated until it is set back to all."
	}
	release, proceed, err := opts.Change.Begin(ctx, q, func() ([]string, error) { return cluster.PlanSetAllocation(ctx, api, opts.Set) })
	if !proceed {
		return err
	}
	defer release()
	ch, err := cluster.SetAllocation(ctx, api, opts.Set, cluster.SetOptions{})
	if opts.Output == "json" {
		if jerr := output.JSON(opts.IO.Out, ch); jerr != nil {
			return jerr
		}
	} else if ch.After.Key != "" {
		t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "setting", "before", "after")
		t.Row(ch.After.Key, ch.Before.Value+" ("+ch.Before.Source+")", ch.After.Value+" ("+ch.After.Source+")")
		if rerr := t.Render(); rerr != nil {
			return rerr
		}
	}
	return err
}
