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
	IO      *output.IOStreams
	Units   func(ctx context.Context) (services.Units, error)
	UnitMap func() (map[string]string, error)
	ChangeInputs
}

// NewCmdEnable builds `services enable`.
func NewCmdEnable(f *cli.Factory, runF func(context.Context, *EnableOptions) error) *cobra.Command {
	opts := &EnableOptions{IO: f.IO, Units: unitsFrom(f), UnitMap: unitMapFrom(f)}
	cmd := &cobra.Command{
		Use:   "enable [component...|all]",
		Short: "Enable the units so they start at boot",
		Long:  "Enable the units' unit files (like systemctl enable) and reload systemd when links changed.\n\n" + changeRule,
		Example: `  siemctl services enable --yes
  siemctl services enable shipper --dry-run`,
	}
	return changeVerb(f, cmd, &opts.ChangeInputs, func(ctx context.Context) error {
		return cli.Run(ctx, runF, runEnable, opts)
	})
}

type enableJSON struct {
	Units   []string               `json:"units"`
	Changes []units.UnitFileChange `json:"changes"`
}

func runEnable(ctx context.Context, opts *EnableOptions) error {
	comps, _, err := selected(opts.UnitMap, opts.Components)
	if err != nil {
		return err
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
