// Package snapshot is `siemctl snapshot`: capture a versioned JSON document of
// the stack's state under state_dir/snapshots, list and show the stored
// ones, diff two of them ranked by severity, and prune old ones.
package snapshot

import (
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// NewCmdSnapshot builds the `snapshot` command group.
func NewCmdSnapshot(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:   "snapshot",
		Short: "Capture, list, show, compare and prune snapshots of the stack's state",
		Long: `A snapshot is a versioned JSON document of the stack's state: units, package and API
versions, indexer health, settings, templates and pipelines (as hashes), indices with
document counts and sizes, shards by state, disk, manager info and daemons, agents by
status and version, the alert rate and the health results. It never contains a secret.

Snapshots are written atomically under state_dir/snapshots/<id>.json. A reference to a
snapshot is its id, a unique id prefix, "latest", "previous" or "label:NAME" (the newest
snapshot with that label).`,
		Example: `  siemctl snapshot capture --label pre-upgrade
  siemctl snapshot list
  siemctl snapshot show latest
  siemctl snapshot diff label:pre-upgrade latest
  siemctl snapshot prune --keep 48 --keep-days 30`,
	}, NewCmdCapture(f, nil), NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdDiff(f, nil), NewCmdPrune(f, nil))
}

// storeFunc opens the snapshot store of the configured state_dir; it needs
// the configuration only (no client, no secret).
func storeFunc(f *cli.Factory) func() (*snapshot.Store, error) {
	return func() (*snapshot.Store, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		return openStore(cfg, f.Logger)
	}
}

func openStore(cfg *config.Config, log *slog.Logger) (*snapshot.Store, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("state_dir is empty: set it in the config (default /var/lib/siemctl)")
	}
	return &snapshot.Store{Dir: filepath.Join(cfg.StateDir, "snapshots"), Logger: log}, nil
}

// refError turns a reference that matches nothing into a usage error (exit 2)
// naming the fix.
func refError(err error) error {
	if errors.Is(err, snapshot.ErrNotFound) || errors.Is(err, snapshot.ErrAmbiguous) {
		return &cli.FlagError{Err: errorsJoinHint(err)}
	}
	return err
}

type hintError struct{ err error }

func (h hintError) Error() string {
	return h.err.Error() + ": see `siemctl snapshot list` (references: id, id prefix, latest, previous, label:NAME)"
}
func (h hintError) Unwrap() error { return h.err }

func errorsJoinHint(err error) error { return hintError{err} }
