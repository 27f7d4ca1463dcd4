package snapshot

import (
	"slices"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
)

// completeRefs offers snapshot references for the first n arguments: latest, previous, label:NAME
// for each label and every id, newest first.
func completeRefs(f *cli.Factory, n int) cobra.CompletionFunc {
	list := cli.CompleteFromConfig(f, func(cfg *config.Config, _ string) []string {
		store, err := openStore(cfg, nil)
		if err != nil {
			return nil
		}
		entries, err := store.List()
		if err != nil {
			return nil
		}
		out := []string{"latest", "previous"}
		seen := map[string]bool{}
		slices.Reverse(entries)
		for _, e := range entries {
			if e.Label != "" && !seen[e.Label] {
				seen[e.Label] = true
				out = append(out, "label:"+e.Label)
			}
		}
		for _, e := range entries {
			out = append(out, e.ID)
		}
		return out
	})
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return list(cmd, args, toComplete)
	}
}
