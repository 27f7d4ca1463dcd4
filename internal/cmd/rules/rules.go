// Package rules is `siemctl rules`: checks of the manager's rules and
// decoders.
package rules

import (
	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
)

// NewCmdRules builds the `rules` command group.
func NewCmdRules(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:     "rules",
		Short:   "Check rules and decoders as the manager loads them",
		Example: "  siemctl rules check\n  siemctl rules check --dir ./etc\n  siemctl rules check --as-stock --dir ./ruleset",
	}, NewCmdCheck(f, nil))
}
