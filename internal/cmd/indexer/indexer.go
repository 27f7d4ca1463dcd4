// Package indexer is `siemctl indexer`: shard allocation, shards with the
// reasons they are unassigned, flush + synced flush, and the disk-watermark
// recovery override.
package indexer

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// NewCmdIndexer builds the `indexer` group.
func NewCmdIndexer(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "indexer",
		Short: "Indexer maintenance: allocation, shards, flush, disk watermarks, snapshot repository",
		Example: `  siemctl indexer allocation
  siemctl indexer allocation all
  siemctl indexer shards --unassigned
  siemctl indexer flush
  siemctl indexer watermark --recover
  siemctl indexer repository prepare --dry-run`,
	}
	cmd.AddCommand(NewCmdAllocation(f, nil))
	cmd.AddCommand(NewCmdShards(f, nil))
	cmd.AddCommand(NewCmdFlush(f, nil))
	cmd.AddCommand(NewCmdWatermark(f, nil))
	cmd.AddCommand(NewCmdRepository(f, nil))
	return cmd
}

func apiFrom(f *cli.Factory) func(ctx context.Context) (cluster.API, error) {
	return func(ctx context.Context) (cluster.API, error) {
		c, err := f.Indexer(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// connect bounds ctx by the command's --timeout and builds its client
// within it; cancel ends the bound (called already when err is not nil).
func connect[A any](ctx context.Context, d time.Duration, client func(context.Context) (A, error)) (context.Context, A, context.CancelFunc, error) {
	ctx, cancel := withTimeout(ctx, d)
	api, err := client(ctx)
	if err != nil {
		cancel()
		var none A
		return ctx, none, nil, err
	}
	return ctx, api, cancel, nil
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}
