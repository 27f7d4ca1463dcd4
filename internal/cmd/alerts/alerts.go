// Package alerts is `siemctl alerts`: search, count and follow the alerts
// in the indexer, run the end-to-end data-flow probe, and plan/apply the
// cleanup of old daily alerts indices.
package alerts

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/output"
)

// NewCmdAlerts builds the `alerts` command group.
func NewCmdAlerts(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:   "alerts",
		Short: "Search, count and follow alerts; probe the data flow; clean up old alerts indices",
		Long: `Work with the alerts the manager writes and the shipper indexes into daily indices
(alerts_index_prefix + YYYY.MM.DD).`,
		Example: `  siemctl alerts search -q 'rule.level:>=10' --since 1h
  siemctl alerts count --since 5m
  siemctl alerts tail
  siemctl alerts probe
  siemctl alerts cleanup --older-than 90d`,
	}, NewCmdSearch(f, nil), NewCmdCount(f, nil), NewCmdTail(f, nil), NewCmdProbe(f, nil), NewCmdCleanup(f, nil))
}

// Common are the inputs the alerts verbs share: the streams, the
// configuration (the alerts index prefix, state_dir), the indexer client,
// the clock, and the global output format and timeout.
type Common struct {
	IO      *output.IOStreams
	Config  func() (*config.Config, error)
	Indexer func(ctx context.Context) (*indexer.Client, error)
	Now     func() time.Time
	Output  string
	Timeout time.Duration
}

func common(f *cli.Factory) Common {
	return Common{IO: f.IO, Config: f.Config, Indexer: f.Indexer, Now: f.Now}
}

// open returns the configuration and the indexer client, or why there are
// none.
func (c Common) open(ctx context.Context) (*config.Config, *indexer.Client, error) {
	cfg, err := c.Config()
	if err != nil {
		return nil, nil, err
	}
	ix, err := c.Indexer(ctx)
	if err != nil {
		return nil, nil, err
	}
	return cfg, ix, nil
}

// connect bounds ctx by the global timeout, then opens the configuration
// and the indexer client; on error the context is already cancelled.
func (c Common) connect(ctx context.Context) (context.Context, context.CancelFunc, *config.Config, *indexer.Client, error) {
	ctx, cancel := cli.WithTimeout(ctx, c.Timeout)
	cfg, ix, err := c.open(ctx)
	if err != nil {
		cancel()
		return ctx, nil, nil, nil, err
	}
	return ctx, cancel, cfg, ix, nil
}
