package upgrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// indexerPath is what the indexer crosses from the installed release to the target
// (versions.Cross, the release table) with the OpenSearch the nodes run now (_nodes, not GET /,
// which says 7.10.2), asked within ctx, best effort.
func indexerPath(ctx context.Context, d *steps.Deps, cands []upgrade.Candidate, to string) versions.Path {
	installed := ""
	for _, c := range cands {
		if c.Component == "indexer" {
			installed = c.Installed
		}
	}
	var nodes []indexer.NodeVersion
	if ix, err := d.Indexer.Get(); err == nil {
		nodes, _ = ix.NodesVersions(ctx)
	}
	return versions.Cross(installed, to, nodes)
}

// renderIndexerPath writes the path's facts under a heading (the single-host and the cluster plan).
func renderIndexerPath(w io.Writer, p versions.Path) {
	fmt.Fprintln(w, "\nIndexer versions (Wazuh release → its OpenSearch):")
	for _, l := range p.Lines() {
		fmt.Fprintln(w, "  "+l)
	}
}

// deadlineErr names the --timeout when err came from the plan's deadline (qctx) ending, not from
// the command being interrupted (ctx): exit 5 like any service silent past its deadline.
func deadlineErr(qctx, ctx context.Context, timeout time.Duration, err error) error {
	if ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within --timeout %s (%w): %w", timeout, netclient.ErrTimeout, err)
	}
	return err
}
