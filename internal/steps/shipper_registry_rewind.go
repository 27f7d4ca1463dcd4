package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/shipper"
)

// A cluster rollback rewinds each manager's shipper as one host's rollback does (shipper_registry.go), but
// from a point in time rather than from an archive: the managers' shippers kept running while
// `upgrade apply --cluster` took the snapshot on an indexer host, so no registry was saved with it.
// In the rollback's shipper turn (shipper stopped), the read position of this manager's alerts file
// in Filebeat's registry is moved back to the first alert written at or after the run's start (the
// record's creation, before the snapshot, less rewindMargin for the hosts' clocks): the shipper
// then sends again every alert the restored indices may lack, and the documents' deterministic ids
// (@metadata._id) keep each one once (docs/upgrade.md "No alert lost"). The registry's format and
// the rewind itself: shipper.RewindRegistry.

// rewindMargin is how much earlier than the run's start the rewind goes (hosts' clocks agree to well
// under it: NTP, as the roll's leases need).
const rewindMargin = time.Minute

func shipperRegistryRewindKind() Kind {
	return engine.Define(Spec[*noParams]{Name: "shipper.registry_rewind", Run: runShipperRegistryRewind,
		New: simple(func(pl *Planning) []string {
			dir := "<shipper data_dir>/registry/filebeat"
			if c := pl.cfg(); c != nil && c.Shipper.DataDir != "" {
				dir = filepath.Join(shipper.RegistryDir(c.Shipper.DataDir), "filebeat")
			}
			return []string{"check " + pl.unit("shipper") + " is stopped",
				"read the run's start from this host's copy of the record (" + rollout.CopyFile + ")",
				"in " + dir + " (active checkpoint and log.json): the alerts file's read position moved back to the first alert at or after the run's start less " + rewindMargin.String() + " (one transaction appended to log.json)",
				"the shipper then sends again every alert written since (deterministic ids: each indexed once)"}
		})})
}

func runShipperRegistryRewind(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	dd, err := shipperDataDir(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	kept, err := rollout.LoadCopy(d.Config.StateDir)
	if err != nil {
		// Never a dead end for the rollback: the shipper goes on, and the loss is said.
		return engine.Outcome{Message: fmt.Sprintf("shipper registry not rewound (the run's start is in this host's copy of the record: %v): alerts written after the snapshot are not sent again", err)}, nil //nolint:nilerr
	}
	if kept.Created.IsZero() {
		return engine.Outcome{Message: "the kept record has no creation time: the shipper goes on from where it is; alerts written after the snapshot are not sent again"}, nil
	}
	if err := requireStopped(ctx, d, "shipper", "its registry is rewound"); err != nil {
		return engine.Outcome{}, err
	}
	alerts := filepath.Join(d.Config.Manager.InstallDir, "logs", "alerts", "alerts.json")
	cutoff := kept.Created.Add(-rewindMargin)
	res, err := shipper.RewindRegistry(filepath.Join(shipper.RegistryDir(dd), "filebeat"), alerts, cutoff)
	if err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: res.String(), Data: map[string]any{"from": res.From, "to": res.To, "cutoff": cutoff.UTC().Format(time.RFC3339)}}, nil
}
