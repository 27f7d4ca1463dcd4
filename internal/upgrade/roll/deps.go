// Package roll is the rolling upgrade of a distributed deployment (docs/distributed.md) as a
// library: the turns of the hosts in the coordination record (internal/ops/rollout), the phases
// each host runs (cluster-apply.yaml, node.yaml, cluster-finish.yaml, cluster-rollback.yaml)
// through internal/runs, the cluster plan and status, the point of no return and the automatic
// rollback past it, and the cluster rollback's phases. The commands (`upgrade
// node|apply --cluster|finish|turn|status --cluster|plan --cluster`, `rollback --cluster`) are
// doors onto it: flags, one call, rendering.
//
// "Roll" is the one word for the rolling upgrade in Go; "cluster" is left to the indexer's and
// the manager's clusters (and to the --cluster flag and the runbooks' file names, which are
// interface).
package roll

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// Indexer is what the roll needs of the indexer: the facts of the order and the coordination
// record.
type Indexer interface {
	rollout.API
	rollout.IndexerFacts
}

// Deps are the roll's dependencies.
type Deps struct {
	Config  func() (*config.Config, error)
	Indexer func(ctx context.Context) (Indexer, error)
	// Manager returns the manager API (the manager cluster's facts), or why there is none.
	Manager  func(ctx context.Context) (rollout.ManagerFacts, error)
	Hostname func() (string, error)
	Now      func() time.Time
	// HostLock takes this host's lock (nil: not checked); a turn is taken only while it is free.
	HostLock func(ctx context.Context) (release func(), err error)
	// IndexerAt returns a client of another indexer node at a base URL, with indexer.url's
	// credentials, TLS settings and CA (nil: the record only through indexer.url).
	IndexerAt func(url string) (rollout.API, error)
}

// NewDeps builds Deps from a command's client funcs (cli.Factory's Config,
// Indexer, Manager, Now and HostLock): the real indexer client reaches the
// other indexer nodes (IndexerAt) with indexer.url's credentials.
func NewDeps(config func() (*config.Config, error), indexer func(ctx context.Context) (*indexer.Client, error), manager func(ctx context.Context) (*manager.Client, error),
	now func() time.Time, hostLock func(ctx context.Context, command string) (func(), error)) Deps {
	return Deps{
		Config: config,
		Indexer: func(ctx context.Context) (Indexer, error) {
			c, err := indexer(ctx)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Manager: func(ctx context.Context) (rollout.ManagerFacts, error) {
			c, err := manager(ctx)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Hostname: os.Hostname,
		Now:      now,
		HostLock: func(ctx context.Context) (func(), error) {
			return hostLock(ctx, "siemctl upgrade node (taking its turn)")
		},
		IndexerAt: func(url string) (rollout.API, error) {
			c, err := indexer(context.Background())
			if err != nil {
				return nil, err
			}
			return c.At(url)
		},
	}
}

// Store returns the coordination record's store over the indexer, and the indexer.
func (d Deps) Store(ctx context.Context) (*rollout.Store, Indexer, error) {
	ix, err := d.Indexer(ctx)
	if err != nil {
		return nil, nil, err
	}
	s := rollout.NewStore(d.failover(ix))
	s.Now = d.Now
	return s, ix, nil
}

// failover reaches the record through the other indexer nodes when indexer.url does not answer
// (rollout.Failover): their addresses are learned from _nodes/http whenever it answers and kept in
// state_dir. Without IndexerAt (tests), ix alone.
func (d Deps) failover(ix Indexer) rollout.API {
	if d.IndexerAt == nil {
		return ix
	}
	stateDir := ""
	if cfg, err := d.Config(); err == nil {
		stateDir = cfg.StateDir
	}
	return rollout.NewFailover(ix, stateDir, d.IndexerAt)
}

// answeredBy names the indexer node that answered the record's last call when it was not
// indexer.url ("" when it was).
func answeredBy(s *rollout.Store) string {
	if fo, ok := s.API.(*rollout.Failover); ok {
		return fo.Answered()
	}
	return ""
}

// Identity is this host's name and its own entries of the record (rollout.HostIdentity over the
// config and the host name): what upgrade node takes turns as and status reports as this_host.
func (d Deps) Identity() (rollout.Identity, error) {
	cfg, err := d.Config()
	if err != nil {
		return rollout.Identity{}, err
	}
	host, err := d.Hostname()
	if err != nil {
		return rollout.Identity{}, fmt.Errorf("host name: %w", err)
	}
	return rollout.HostIdentity(cfg, host)
}

// Clock is the roll's now in UTC.
func (d Deps) Clock() time.Time {
	if d.Now != nil {
		return d.Now().UTC()
	}
	return time.Now().UTC()
}

// withTimeout bounds ctx by d (d <= 0: no bound), as a command's --timeout.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
