// Package alerts is `siemctl alerts`: search, count and follow the alerts
// in the indexer, run the end-to-end data-flow probe, and plan/apply the
// cleanup of old daily alerts indices.
package alerts

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
)

// NewCmdAlerts builds the `alerts` command group.
func NewCmdAlerts(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts",
		Short: "Search, count and follow alerts; probe the data flow; clean up old alerts indices",
		Long: `Work with the alerts the manager writes and the shipper indexes into daily indices
(alerts_index_prefix + YYYY.MM.DD).`,
		Example: `  siemctl alerts search -q 'rule.level:>=10' --since 1h
  siemctl alerts count --since 5m
  siemctl alerts tail
  siemctl alerts probe
  siemctl alerts cleanup --older-than 90d`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdSearch(f, nil))
	cmd.AddCommand(NewCmdCount(f, nil))
	cmd.AddCommand(NewCmdTail(f, nil))
	cmd.AddCommand(NewCmdProbe(f, nil))
	cmd.AddCommand(NewCmdCleanup(f, nil))
	return cmd
}

// alertsIndexer returns the configuration (the alerts index prefix) and the
// indexer client, or why there are none.
func alertsIndexer(ctx context.Context, config func() (*config.Config, error), ix func(context.Context) (*indexer.Client, error)) (*config.Config, *indexer.Client, error) {
	cfg, err := config()
	if err != nil {
		return nil, nil, err
	}
	c, err := ix(ctx)
	if err != nil {
		return nil, nil, err
	}
	return cfg, c, nil
}
