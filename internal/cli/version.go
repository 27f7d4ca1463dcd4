package cli

import (
	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/output"
)

// StackVersions is filled by the version command's stack probe (wired by the
// registrar once the clients exist); nil means siemctl's own build only.
type StackVersions func(cmd *cobra.Command) (any, [][2]string, error)

func newCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Show siemctl's build and the stack's component versions",
		Example: "  siemctl version\n  siemctl version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			bi := buildinfo.Get()
			if f.Global.Output == "json" {
				return output.JSON(f.IO.Out, map[string]any{"siemctl": bi})
			}
			return output.KV(f.IO.Out, [2]string{"siemctl", bi.Version}, [2]string{"commit", bi.Commit}, [2]string{"go", bi.GoVersion})
		},
	}
}
