package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/output"
)

func newCmdVersion(f *Factory) *cobra.Command {
	var short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show siemctl's build and the stack's component versions",
		Long: `Show siemctl's own build, then each component's installed package version and the
version its running service reports (the indexer's real OpenSearch version, the manager API's
version, the dashboard's). Unknown parts say why; this command never fails because the stack is down.`,
		Example: "  siemctl version\n  siemctl version --short\n  siemctl version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			bi := buildinfo.Get()
			var comps map[string]ComponentVersion
			var cfgErr error
			if !short {
				ctx, cancel := WithTimeout(cmd.Context(), f.Global.Timeout)
				defer cancel()
				if st, err := ClientsAs[versioner](ctx, f); err != nil {
					cfgErr = err
				} else {
					comps = st.Versions(ctx)
				}
			}
			if f.Global.Output == "json" {
				doc := map[string]any{"siemctl": bi}
				if comps != nil {
					doc["stack"] = comps
				}
				if cfgErr != nil {
					doc["stack_error"] = cfgErr.Error()
				}
				return output.JSON(f.IO.Out, doc)
			}
			if short {
				_, err := fmt.Fprintln(f.IO.Out, bi.Version)
				return err
			}
			if err := output.KV(f.IO.Out, [2]string{"siemctl", bi.Version}, [2]string{"commit", output.Dash(bi.Commit)}, [2]string{"built", output.Dash(bi.Date)}, [2]string{"go", bi.GoVersion}); err != nil {
				return err
			}
			if cfgErr != nil {
				fmt.Fprintf(f.IO.ErrOut, "stack versions unknown: %v\n", cfgErr)
				return nil
			}
			if comps == nil {
				return nil
			}
			fmt.Fprintln(f.IO.Out)
			t := output.NewTable(f.IO.Out, f.IO.IsStdoutTTY(), "component", "package", "running", "note")
			for _, c := range config.Components {
				v := comps[c]
				t.Row(c, output.Dash(v.Package), output.Dash(v.API), v.Error)
			}
			return t.Render()
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print only siemctl's version, on one line (no stack queries; -o json: the whole build)")
	return cmd
}

// ComponentVersion is what is known of one component's version.
type ComponentVersion struct {
	Package string `json:"package"`         // installed package version, "" if not installed or unknown
	API     string `json:"api"`             // what the running component reports, "" if unreachable
	Error   string `json:"error,omitempty"` // why something is unknown
}

// versioner asks the package manager and the running components for their
// versions (internal/factory's client set).
type versioner interface {
	Versions(ctx context.Context) map[string]ComponentVersion
}
