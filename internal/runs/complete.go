package runs

import (
	"slices"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
)

// CompleteRuns offers the run ids under state_dir/runs, newest first (for RUN arguments and
// rollback RUN).
func CompleteRuns(f *cli.Factory) cobra.CompletionFunc {
	return cli.CompleteFromConfig(f, func(cfg *config.Config, _ string) []string {
		ids, err := engine.Runs(cfg.StateDir)
		if err != nil {
			return nil
		}
		slices.Reverse(ids)
		return append(ids, "latest")
	})
}
