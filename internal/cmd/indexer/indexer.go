// Package indexer is `siemctl indexer`: shard allocation, shards with the
// reasons they are unassigned, flush + synced flush, and the disk-watermark
// recovery override.
package indexer

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// NewCmdIndexer builds the `indexer` group.
func NewCmdIndexer(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:   "indexer",
		Short: "Indexer maintenance: allocation, shards, flush, disk watermarks, snapshot repository",
		Example: `  siemctl indexer allocation
  siemctl indexer allocation all
  siemctl indexer shards --unassigned
  siemctl indexer flush
  siemctl indexer watermark --recover
  siemctl indexer repository prepare --dry-run`,
	}, NewCmdAllocation(f, nil), NewCmdShards(f, nil), NewCmdFlush(f, nil), NewCmdWatermark(f, nil), NewCmdRepository(f, nil))
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

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}
