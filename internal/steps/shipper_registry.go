package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/shipper"
)

// The shipper's registry (Filebeat's read position in the manager's alerts file) belongs to the
// indexer data: it says which alerts the indexer already holds. backup.shipper_registry saves it
// while the shipper is stopped, right before the indexer data is secured (snapshot or copy), so
// the two agree; restore.shipper_registry puts it back on rollback together with that data, and
// the shipper then sends again every alert written after that moment (alerts the restored indexer
// does not hold). A shipper that gives documents deterministic ids (@metadata._id) sends them
// without duplicates; otherwise an alert the indexer had at the snapshot and the registry had not
// yet recorded is indexed twice (see docs/upgrade.md, "No alert lost").

const (
	shipperRegistryArchive  = "shipper-registry.tar.gz"
	shipperRegistryManifest = "shipper-registry.manifest.json"
)

func shipperRegistryKinds() []Kind {
	dir := func(pl *Planning) string {
		if c := pl.cfg(); c != nil && c.Shipper.DataDir != "" {
			return shipper.RegistryDir(c.Shipper.DataDir)
		}
		return "<shipper data_dir>/registry"
	}
	return []Kind{
		engine.Define(Spec[*noParams]{Name: "backup.shipper_registry", Run: runBackupShipperRegistry,
			New: simple(func(pl *Planning) []string {
				return []string{"check " + pl.unit("shipper") + " is stopped (it writes its registry while it runs)",
					"archive " + dir(pl) + " → <backup_dir>/<run-id>/" + shipperRegistryArchive + " (sha256 recorded): the read position that matches the indexer data secured next"}
			}),
			Skip: func(_ context.Context, env Env, _ *noParams) (string, bool, error) {
				b, err := backups(env)
				if err != nil {
					return "", false, err
				}
				if b.ShipperRegistryAbsent {
					return "the shipper had no registry (recorded)", true, nil
				}
				if b.ShipperRegistry == "" || filetree.VerifySum(filepath.Dir(b.ShipperRegistry), shipperRegistryArchive) != nil {
					return "", false, nil
				}
				return "registry archive " + b.ShipperRegistry + " already written and verified", true, nil
			}}),
		engine.Define(Spec[*noParams]{Name: "restore.shipper_registry", Run: runRestoreShipperRegistry,
			New: simple(func(pl *Planning) []string {
				return []string{"check " + pl.unit("shipper") + " is stopped",
					"verify <backup>/" + shipperRegistryArchive + "; set " + dir(pl) + " aside, extract the saved registry in its place (sha256 checked), remove the one set aside",
					"the shipper then sends again every alert written after the data was secured (deterministic ids: no duplicates)"}
			})}),
		shipperRegistryRewindKind(),
	}
}

func shipperDataDir(d *Deps) (string, error) {
	dd := d.Config.Shipper.DataDir
	if dd == "" || !filepath.IsAbs(dd) {
		return "", fmt.Errorf("shipper.data_dir %q: set it to the shipper's path.data (absolute, e.g. /var/lib/filebeat)", dd)
	}
	return filepath.Clean(dd), nil
}

func runBackupShipperRegistry(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	dd, err := shipperDataDir(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := requireStopped(ctx, d, "shipper", "its registry is saved"); err != nil {
		return engine.Outcome{}, err
	}
	reg := shipper.RegistryDir(dd)
	if _, err := os.Lstat(reg); errors.Is(err, fs.ErrNotExist) {
		if err := setBackups(env, func(b *Backups) { b.ShipperRegistry, b.ShipperRegistryAbsent = "", true }); err != nil {
			return engine.Outcome{}, err
		}
		return engine.Outcome{Message: reg + " does not exist (the shipper has not run yet): a rollback removes the registry the new version writes, so the shipper reads the alerts from the start"}, nil
	} else if err != nil {
		return engine.Outcome{}, err
	}
	dir, err := runDir(env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	arch := filepath.Join(dir, shipperRegistryArchive)
	man, sum, _, err := filetree.SaveArchive(ctx, dir, shipperRegistryArchive, shipperRegistryManifest, []string{reg}, nil)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("save the shipper registry: %w", err)
	}
	if err := setBackups(env, func(b *Backups) { b.ShipperRegistry, b.ShipperRegistryAbsent = arch, false }); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("shipper registry %s saved to %s: %d files, %s, sha256 %s", reg, arch, man.Files, output.Bytes(man.Bytes), sum[:12]),
		Data: map[string]any{"archive": arch, "sha256": sum, "files": man.Files}}, nil
}

func runRestoreShipperRegistry(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, b, err := depsAndBackups(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if b.ShipperRegistry == "" && !b.ShipperRegistryAbsent {
		return engine.Outcome{Message: "the run saved no shipper registry (run data backups.shipper_registry): the shipper goes on from where it is; alerts indexed after the data was secured and already sent stay lost to a rollback"}, nil
	}
	dd, err := shipperDataDir(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := requireStopped(ctx, d, "shipper", "its registry is restored"); err != nil {
		return engine.Outcome{}, err
	}
	var man filetree.Manifest
	if !b.ShipperRegistryAbsent {
		dir := filepath.Dir(b.ShipperRegistry)
		if err := filetree.VerifySum(dir, shipperRegistryArchive); err != nil {
			return engine.Outcome{}, err
		}
		if err := filetree.ReadJSON(filepath.Join(dir, shipperRegistryManifest), &man); err != nil {
			return engine.Outcome{}, err
		}
		want := strings.TrimPrefix(shipper.RegistryDir(dd), "/")
		for _, e := range man.Entries {
			if e.Path != want && !strings.HasPrefix(e.Path, want+"/") {
				return engine.Outcome{}, fmt.Errorf("%s holds %s, outside %s (shipper.data_dir changed since the upgrade?)", b.ShipperRegistry, "/"+e.Path, shipper.RegistryDir(dd))
			}
		}
	}
	// The registry the new version wrote goes aside whole: Filebeat reads the newest checkpoint
	// file of the directory, so a file left over from it would win over the restored ones.
	reg := shipper.RegistryDir(dd)
	aside := reg + ".siemctl-" + strings.ToLower(env.RunID())
	_, errReg := os.Lstat(reg)
	_, errAside := os.Lstat(aside)
	switch {
	case errReg == nil && errors.Is(errAside, fs.ErrNotExist):
		if err := os.Rename(reg, aside); err != nil {
			return engine.Outcome{}, fmt.Errorf("set %s aside: %w", reg, err)
		}
	case errReg == nil: // an interrupted restore: the one aside is the new version's, this one partial
		if err := os.RemoveAll(reg); err != nil {
			return engine.Outcome{}, fmt.Errorf("remove the partly restored %s: %w", reg, err)
		}
	case !errors.Is(errReg, fs.ErrNotExist):
		return engine.Outcome{}, errReg
	}
	msg := "the shipper had no registry before the upgrade: " + reg + " removed, the shipper reads the alerts from the start"
	if !b.ShipperRegistryAbsent {
		n, err := filetree.ExtractArchive(ctx, b.ShipperRegistry, man)
		if err != nil {
			return engine.Outcome{}, fmt.Errorf("restore the shipper registry (the new version's is in %s): %w", aside, err)
		}
		msg = fmt.Sprintf("shipper registry %s restored from %s (%d files, sha256 verified): alerts written after the data was secured are sent again", reg, b.ShipperRegistry, n)
	}
	if err := os.RemoveAll(aside); err != nil {
		return engine.Outcome{}, fmt.Errorf("remove %s: %w", aside, err)
	}
	return engine.Outcome{Message: msg}, nil
}
