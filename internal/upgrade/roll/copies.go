package roll

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// CopiesWait is how long an indexer node's turn waits, before anything is changed, for the
// shards whose only active copy is on that node to get another one (a replica recovering); past
// it the turn is given back with the shards named.
var CopiesWait = 15 * time.Minute

// shardLister reads _cat/shards (*indexer.Client).
type shardLister interface {
	CatShards(ctx context.Context) ([]indexer.Shard, error)
}

// CopiesCall is the call an indexer node's turn makes before its node stops.
const CopiesCall = "GET /_cat/shards?h=index,shard,prirep,state,unassigned.reason,node (indexer turns, before anything changes: no shard's only active copy on the node; waits for its other copy)"

// awaitCopies holds an indexer node's turn until no shard has its only active copy on that node
// while its other copy is not active yet (rollout.CopiesOn): the turn never stops the node holding
// a shard's only copy. Shards of indices with no replica at all are named, not waited for (no
// copy can come). Past CopiesWait the turn is given back (rollout.ErrNothingDone): nothing was
// changed.
func awaitCopies(ctx context.Context, o TurnOptions, e rollout.Entry, errOut io.Writer) error {
	if e.Role != rollout.RoleIndexer && e.Role != rollout.RoleIndexerManager {
		return nil
	}
	ix, err := o.Roll.Indexer(ctx)
	if err != nil {
		return err
	}
	sl, ok := ix.(shardLister)
	if !ok {
		return nil
	}
	node := rollout.Node(e.Name)
	poll := o.Poll
	if poll <= 0 {
		poll = DefaultTurnPoll
	}
	start := o.Roll.Clock()
	said := ""
	for {
		shards, err := sl.CatShards(ctx)
		var c rollout.Copies
		why := ""
		if err != nil {
			why = fmt.Sprintf("the shards of %s are not readable (%v)", node, err)
		} else {
			c = rollout.CopiesOn(shards, node)
			why = c.Pending()
		}
		if why == "" {
			if n := c.Note(); n != "" {
				fmt.Fprintln(errOut, n)
			}
			if said != "" {
				fmt.Fprintf(errOut, "every shard on %s has another active copy after %s: its turn goes on\n", node, o.Roll.Clock().Sub(start).Round(time.Second))
			}
			return nil
		}
		if o.Roll.Clock().Sub(start) >= CopiesWait {
			return fmt.Errorf("%w: %s after %s; the cluster's unassigned shards: siemctl indexer shards --unassigned; run the same command again once they are allocated",
				rollout.ErrNothingDone, why, CopiesWait)
		}
		if why != said {
			fmt.Fprintf(errOut, "waiting (up to %s) before %s stops: %s\n", CopiesWait, node, why)
			said = why
		}
		if err := netclient.Sleep(ctx, poll); err != nil {
			return err
		}
	}
}
