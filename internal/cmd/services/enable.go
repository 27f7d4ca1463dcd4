package services

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/units"
)

// EnableOptions are the inputs of `services enable`.
type EnableOptions struct {
	IO         *output.IOStreams
	Units      func(ctx context.Context) (services.Units, error)
	UnitMap    func() (map[string]string, error)
	Output     string
	Components []string
	Change     cli.Change
}

// NewCmdEnable builds `services enable`.
func NewCmdEnable(f *cli.Factory, runF func(context.Context, *EnableOptions) error) *cobra.Command {
	opts := &EnableOptions{IO: f.IO, Units: unitsFrom(f), UnitMap: unitMapFrom(f)}
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "enable [component...|all]",
		Short: "Enable the units so they start at boot",
		Long:  "Enable the units' unit files (like systemctl enable) and reload systemd when links changed.\n\n" + changeRule,
		Example: `  siemctl services enable --yes
  siemctl services enable shipper --dry-run`,
		ValidArgsFunction: completeComponents,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output, opts.Components = f.Global.Output, args
			opts.Change = f.Change(cmd, args, dryRun)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runEnable(cmd.Context(), opts)
		},
	}
	cli.AddDryRunFlag(cmd, &dryRun)
	return cmd
}

type enableJSON struct {
	Units   []string               `json:"units"`
	Changes []units.UnitFileChange `json:"changes"`
}

func runEnable(ctx context.Context, opts *EnableOptions) error {
	um, err := opts.UnitMap()
	if err != nil {
		return err
	}
	comps, _, err := services.Select(um, opts.Components)
	if err != nil {
		return &cli.FlagError{Err: err}
	}
	r := &services.Runner{}
	release, proceed, err := opts.Change.Begin(ctx, fmt.Sprintf("Enable %s at boot?", unitList(comps)), cli.Calls(r.Calls("enable", comps)...))
	if !proceed {
		return err
	}
	defer release()
	if r.Units, err = opts.Units(ctx); err != nil {
		return err
	}
	changes, err := r.Enable(ctx, comps)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(comps))
	for _, c := range comps {
		names = append(names, c.Unit)
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, enableJSON{Units: names, Changes: changes})
	}
	if len(changes) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "already enabled: %v\n", names)
		return nil
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "change", "link", "target")
	for _, c := range changes {
		t.Row(c.Type, c.Filename, c.Destination)
	}
	return t.Render()
}
