// Package rules is `siemctl rules`: checks of the manager's local rules and
// decoders.
package rules

import (
	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
)

// NewCmdRules builds the `rules` command group.
func NewCmdRules(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "rules",
		Short:   "Check the manager's local rules and decoders",
		Example: "  siemctl rules check\n  siemctl rules check --dir ./etc",
		Args:    cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdCheck(f, nil))
	return cmd
}
