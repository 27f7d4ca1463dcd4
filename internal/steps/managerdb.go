package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/output"
)

// Names inside a run's backup directory for the manager's databases.
const (
	managerDBDir      = "manager-db"
	managerDBManifest = "manager-db.manifest.json"
)

// ManagerDBPath is the manager's database directory ({install_dir}/queue/db:
// wazuh-db's global.db and the per-agent databases), which Wazuh's upgrade
// guide backs up. A newer manager migrates these databases when it starts,
// so a rollback needs them as they were. It may be large and is written
// while the manager runs: it is copied (not archived) with the manager
// stopped.
func ManagerDBPath(c *config.Config) string {
	if c == nil || c.Manager.InstallDir == "" {
		return ""
	}
	return filepath.Join(c.Manager.InstallDir, "queue", "db")
}

// managerDBOf is ManagerDBPath of the planning's config, or a placeholder.
func managerDBOf(pl *Planning) string {
	if c := pl.cfg(); c != nil {
		return ManagerDBPath(c)
	}
	return "<manager install_dir>/queue/db"
}

func managerDBKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*noParams]{Name: "backup.manager_db", Run: runBackupManagerDB,
			New: simple(func(pl *Planning) []string {
				src := managerDBOf(pl)
				return []string{"check " + pl.unit("manager") + " is stopped and the backup filesystem has room",
					"cold copy " + src + " → <backup_dir>/<run-id>/" + managerDBDir + " (no symlink followed; owners, modes, times kept; sha256 per file)",
					"verify the copy against " + managerDBManifest}
			}),
			Skip: func(ctx context.Context, env Env, _ *noParams) (string, bool, error) {
				d := env.Deps()
				src := ManagerDBPath(d.Config)
				if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) || src == "" {
					return "no " + output.Dash(src) + ": this manager keeps no databases to copy", true, nil
				}
				if ok, msg := managerDBCopied(ctx, env); ok {
					return msg, true, nil
				}
				return "", false, nil
			}}),
		engine.Define(Spec[*noParams]{Name: "restore.manager_db", Run: runRestoreManagerDB,
			New: simple(func(pl *Planning) []string {
				dst := managerDBOf(pl)
				return []string{"check " + pl.unit("manager") + " is stopped",
					"copy <backup_dir>/<run-id>/" + managerDBDir + " → " + dst + ".siemctl-restore (sha256 checked against " + managerDBManifest + ")",
					"swap it in for " + dst + " (rename), remove the replaced databases"}
			}),
			Skip: func(_ context.Context, env Env, _ *noParams) (string, bool, error) {
				b, err := backups(env)
				if err != nil {
					return "", false, err
				}
				if b.ManagerDB == "" {
					return "the upgrade took no copy of the manager's databases (none existed)", true, nil
				}
				return "", false, nil
			}}),
	}
}

// managerDBCopied reports whether this run's copy exists and matches its
// manifest (a resumed run does not copy again).
func managerDBCopied(ctx context.Context, env Env) (bool, string) {
	b, err := backups(env)
	if err != nil {
		return false, ""
	}
	return copyVerified(ctx, b.ManagerDB, managerDBManifest)
}

func runBackupManagerDB(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	return backupCopy(ctx, env, "manager", "its databases are copied", ManagerDBPath(env.Deps().Config), managerDBDir, managerDBManifest,
		func(b *Backups, dst string, _ filetree.Manifest) { b.ManagerDB = dst })
}

func runRestoreManagerDB(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, b, err := depsAndBackups(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	man, err := copyManifest(b.ManagerDB, managerDBManifest)
	if err != nil {
		return engine.Outcome{}, err
	}
	return restoreCopy(ctx, env, "manager", "its databases are restored", b.ManagerDB, man, ManagerDBPath(d.Config))
}

// backupCopy is a cold copy step: with comp stopped (what names why it
// must be), src is copied into the run's backup directory as name
// (coldCopy, its manifest manifestName) and record notes the copy in the
// run's backups.
func backupCopy(ctx context.Context, env Env, comp, what, src, name, manifestName string, record func(b *Backups, dst string, man filetree.Manifest)) (engine.Outcome, error) {
	d := env.Deps()
	if err := requireStopped(ctx, d, comp, what); err != nil {
		return engine.Outcome{}, err
	}
	dir, err := runDir(env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	dst, man, err := coldCopy(ctx, env, d, src, dir, name, manifestName)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := setBackups(env, func(b *Backups) { record(b, dst, man) }); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("copied %s → %s: %d files, %s, verified", src, dst, man.Files, output.Bytes(man.Bytes)),
		Data: map[string]any{"files": man.Files, "bytes": man.Bytes}}, nil
}

// copyVerified reports whether a run's copy (none when "") exists and
// matches the manifest beside it: a resumed run does not copy again.
func copyVerified(ctx context.Context, copyPath, manifestName string) (bool, string) {
	if copyPath == "" {
		return false, ""
	}
	var man filetree.Manifest
	if filetree.ReadJSON(filepath.Join(filepath.Dir(copyPath), manifestName), &man) != nil {
		return false, ""
	}
	got, err := filetree.Scan(ctx, copyPath, false)
	if err != nil || filetree.Compare(man, got) != nil {
		return false, ""
	}
	return true, fmt.Sprintf("copy %s already taken and verified (%d files, %s)", copyPath, man.Files, output.Bytes(man.Bytes))
}

// copyManifest reads the manifest beside a run's copy, checked against the
// run's SHA256SUMS first.
func copyManifest(copyPath, manifestName string) (filetree.Manifest, error) {
	var man filetree.Manifest
	dir := filepath.Dir(copyPath)
	if err := filetree.VerifySum(dir, manifestName); err != nil {
		return man, err
	}
	return man, filetree.ReadJSON(filepath.Join(dir, manifestName), &man)
}

// restoreCopy swaps the run's verified copy (manifest man) in for target
// with comp stopped (what names why it must be).
func restoreCopy(ctx context.Context, env Env, comp, what, copyPath string, man filetree.Manifest, target string) (engine.Outcome, error) {
	d := env.Deps()
	if err := requireStopped(ctx, d, comp, what); err != nil {
		return engine.Outcome{}, err
	}
	target = filepath.Clean(target)
	env.Waiting("copying %s back (%d files, %s)", copyPath, man.Files, output.Bytes(man.Bytes))
	if err := swapInCopy(ctx, copyPath, man, target, newMeter(env, d, "copy back", man.Bytes).set); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("restored %s from %s: %d files, %s, sha256 verified", target, copyPath, man.Files, output.Bytes(man.Bytes))}, nil
}

// coldCopy copies src into dir/name with filetree.Copy (no symlink followed),
// after checking the room, verifies the copy, writes and checksums its
// manifest as dir/manifestName, and returns the copy's path and manifest.
func coldCopy(ctx context.Context, env Env, d *Deps, src, dir, name, manifestName string) (string, filetree.Manifest, error) {
	size, err := filetree.Scan(ctx, src, false)
	if err != nil {
		return "", filetree.Manifest{}, err
	}
	if d.Disk != nil {
		u, err := d.Disk(dir)
		if err != nil {
			return "", filetree.Manifest{}, err
		}
		need := size.Bytes + size.Bytes/10 + 64<<20
		if int64(u.FreeBytes) < need {
			return "", filetree.Manifest{}, fmt.Errorf("not enough room for the copy of %s in %s: %s free, %s needed (%s + 10%% + 64 MiB); free space or point backup_dir elsewhere",
				src, dir, output.Bytes(int64(u.FreeBytes)), output.Bytes(need), output.Bytes(size.Bytes))
		}
	}
	dst := filepath.Join(dir, name)
	tmp := dst + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", filetree.Manifest{}, err
	}
	if err := os.RemoveAll(dst); err != nil {
		return "", filetree.Manifest{}, err
	}
	env.Waiting("copying %s (%d files, %s)", src, size.Files, output.Bytes(size.Bytes))
	man, err := filetree.Copy(ctx, src, tmp, newMeter(env, d, "copy", size.Bytes).set)
	if err != nil {
		os.RemoveAll(tmp)
		return "", man, err
	}
	got, err := filetree.Scan(ctx, tmp, false)
	if err != nil {
		return "", man, err
	}
	if err := filetree.Compare(man, got); err != nil {
		return "", man, fmt.Errorf("the copy of %s does not match its source: %w", src, err)
	}
	man.Created = d.now().UTC()
	if err := filetree.SaveManifest(dir, manifestName, man, nil); err != nil {
		return "", man, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", man, err
	}
	return dst, man, nil
}
