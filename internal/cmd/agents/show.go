package agents

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
)

// ShowOptions are the inputs of `agents show`.
type ShowOptions struct {
	IO      *output.IOStreams
	Fleet   Fleet
	Output  string
	Timeout time.Duration
	ID      string
}

// NewCmdShow builds `agents show ID`.
func NewCmdShow(f *cli.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Fleet: fleetFrom(f)}
	return &cobra.Command{
		ValidArgsFunction: completeAgentIDs(f),
		Use:               "show ID",
		Short:             "Show one agent (agent_control -i when the API is down)",
		Example: `  siemctl agents show 001
  siemctl agents show 000 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output, opts.Timeout, opts.ID = f.Global.Output, f.Global.Timeout, args[0]
			if err := fleet.ValidateIDs([]string{opts.ID}, ""); err != nil {
				return usage(err)
			}
			return cli.Run(cmd.Context(), runF, runShow, opts)
		},
	}
}

func runShow(ctx context.Context, opts *ShowOptions) error {
	ctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	api, tools, err := opts.Fleet.open(ctx)
	if err != nil {
		return err
	}
	d, err := fleet.Show(ctx, api, tools, opts.ID)
	if err != nil {
		return usage(timeoutError(ctx, err, opts.Timeout, ""))
	}
	if d.Source == fleet.SourceTool {
		fmt.Fprintf(opts.IO.ErrOut, "warning: the manager API is down (%v); shown with agent_control\n", d.APIErr)
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, d)
	}
	tty := opts.IO.IsStdoutTTY()
	return output.KV(opts.IO.Out,
		[2]string{"ID", d.ID},
		[2]string{"Name", d.Name},
		[2]string{"IP", output.Dash(d.IP)},
		[2]string{"Status", statusColor(opts.IO.Colors(), d.Status)},
		[2]string{"Version", output.Dash(d.Version)},
		[2]string{"OS", output.Dash(d.OS)},
		[2]string{"Groups", output.Dash(strings.Join(d.Group, ","))},
		[2]string{"Node", output.Dash(d.NodeName)},
		[2]string{"Registered", timeStr(d.DateAdd, tty)},
		[2]string{"Last keep-alive", timeStr(d.LastKeepAlive, tty)},
		[2]string{"Source", string(d.Source)},
	)
}
