package agents

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/manager"
)

// completeTimeout bounds the API call behind a completion: a slow manager must not hang the shell.
const completeTimeout = 2 * time.Second

// completeAgentIDs offers the agent ids the manager API lists (with name and status as the
// description), skipping ids already on the line; nothing when the API does not answer in time.
func completeAgentIDs(f *cli.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		parent := cmd.Context()
		if parent == nil {
			parent = context.Background()
		}
		ctx, cancel := context.WithTimeout(parent, completeTimeout)
		defer cancel()
		mc, err := f.Manager(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for a, err := range mc.Agents(ctx, manager.AgentQuery{Select: []string{"name", "status"}, Limit: 500}) {
			if err != nil {
				break
			}
			if strings.HasPrefix(a.ID, toComplete) && !slices.Contains(args, a.ID) {
				out = append(out, a.ID+"\t"+a.Name+" ("+a.Status+")")
			}
			if len(out) >= 500 {
				break
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
