package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/output"
)

// Names inside a run's backup directory (backup_dir/<run-id>/).
const (
	configsArchive   = "configs.tar.gz"
	configsManifest  = "configs.manifest.json"
	securityDir      = "indexer-security"
	dataDir          = "indexer-data"
	dataManifestName = "indexer-data.manifest.json"
)

// dataCopied is what happens to the indexer's data directory only while the indexer is stopped
// (requireStopped): a cold copy, a site hook's take, a restore.
const dataCopied = "its data directory is copied, taken or replaced"

var configComponents = []string{"indexer", "manager", "dashboard", "shipper", "certs"}

type configsParams struct {
	componentsParam `yaml:",inline"`
}

func (p *configsParams) comps() []string { return p.or(configComponents) }

func (p *configsParams) Validate() error { return p.validate(configComponents) }

func (p *configsParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	paths := []string{"<config paths>"}
	if c := pl.cfg(); c != nil {
		paths = ConfigPaths(c, p.comps())
	}
	return []string{"tar -czf <backup_dir>/<run-id>/" + configsArchive + " " + strings.Join(paths, " ") + " (modes and owners kept; missing paths noted)",
		"sha256 of the archive and of every file → " + filetree.SumsName + ", " + configsManifest}
}

// ConfigPaths are the configuration paths backed up for the components.
func ConfigPaths(c *config.Config, comps []string) []string {
	var out []string
	add := func(ps ...string) {
		for _, p := range ps {
			if p != "" && !slices.Contains(out, p) {
				out = append(out, filepath.Clean(p))
			}
		}
	}
	for _, comp := range comps {
		switch comp {
		case "indexer":
			add(c.Indexer.ConfigDir)
		case "dashboard":
			add(c.Dashboard.ConfigDir)
			add(c.Dashboard.BackupPaths...)
		case "shipper":
			add(c.Shipper.ConfigDir)
			add(c.Shipper.BackupPaths...)
		case "manager":
			add(filepath.Join(c.Manager.InstallDir, "etc"), filepath.Join(c.Manager.InstallDir, "api", "configuration"))
		case "certs":
			add(c.Indexer.CAFile, c.Manager.CAFile, c.Dashboard.CAFile)
		}
	}
	return out
}

func backupKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*configsParams]{Name: "backup.configs", Estimate: fixed[*configsParams](5 * time.Second),
			New: func() *configsParams { return &configsParams{} }, Run: runBackupConfigs,
			Skip: func(_ context.Context, env Env, _ *configsParams) (string, bool, error) {
				b, err := backups(env)
				if err != nil || b.Configs == "" {
					return "", false, err
				}
				if filetree.VerifySum(filepath.Dir(b.Configs), filepath.Base(b.Configs)) != nil {
					return "", false, nil
				}
				return "archive " + b.Configs + " already written and verified", true, nil
			}}),
		engine.Define(Spec[*noParams]{Name: "restore.configs", Run: runRestoreConfigs,
			New: simple(func(*Planning) []string {
				return []string{"verify <backup>/" + configsArchive + " against " + filetree.SumsName + "; extract every file to its path (modes, owners; sha256 checked)",
					"copy the indexer security backup into <indexer config_dir>/opensearch-security"}
			})}),
		engine.Define(Spec[*noParams]{Name: "backup.indexer_security", Estimate: fixed[*noParams](20 * time.Second), Run: runBackupSecurity,
			New: simple(func(pl *Planning) []string {
				return []string{strings.Join(securityInit(pl), " ") + ` --options "-backup <backup_dir>/<run-id>/` + securityDir + ` -icl -nhnv"`,
					"copy the backed-up *.yml into <indexer config_dir>/opensearch-security (what indexer.security_apply uploads)"}
			}),
			Verify: func(_ context.Context, env Env, _ *noParams) (bool, error) {
				b, err := backups(env)
				if err != nil || b.IndexerSecurity == "" {
					return false, err
				}
				_, err = secadmin.BackupFiles(b.IndexerSecurity)
				return err == nil, nil
			}}),
		// Both dispatch on indexer.data_safety (datasafety.go); copy mode
		// is runBackupData / runRestoreData below.
		engine.Define(Spec[*noParams]{Name: "backup.indexer_data", Estimate: estimateBackupData, Traits: roleBackupData, Run: backupIndexerData,
			New: simple(backupDataDescribe),
			Skip: func(ctx context.Context, env Env, _ *noParams) (string, bool, error) {
				ok, msg, err := backupDataDone(ctx, env)
				if err != nil || !ok {
					return "", false, err
				}
				return msg, true, nil
			},
			Verify: func(ctx context.Context, env Env, _ *noParams) (bool, error) {
				ok, _, err := backupDataDone(ctx, env)
				return ok, err
			}}),
		engine.Define(Spec[*noParams]{Name: "restore.indexer_data", Estimate: estimateRestoreData, Traits: roleRestoreData, Run: restoreIndexerData,
			New:  simple(restoreDataDescribe),
			Skip: restoreDataDone,
			Verify: func(ctx context.Context, env Env, _ *noParams) (bool, error) {
				_, ok, err := restoreDataDone(ctx, env, nil)
				return ok, err
			}}),
	}
}

// depsAndBackups is a step's dependencies and the backups its run recorded.
func depsAndBackups(env Env) (*Deps, Backups, error) {
	b, err := backups(env)
	return env.Deps(), b, err
}

// depsAndRunDir is a step's dependencies and its run's backup directory (runDir).
func depsAndRunDir(env Env) (*Deps, string, error) {
	dir, err := runDir(env, env.Deps())
	return env.Deps(), dir, err
}

// runDir returns (and creates, 0700) the run's backup directory.
func runDir(env Env, d *Deps) (string, error) {
	b, err := backups(env)
	if err != nil {
		return "", err
	}
	dir := b.Dir
	if dir == "" {
		if d.Config == nil || d.Config.BackupDir == "" {
			return "", errors.New("backup_dir is not configured")
		}
		dir = filepath.Join(d.Config.BackupDir, env.RunID())
		if err := setBackups(env, func(b *Backups) { b.Dir = dir }); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup dir: %w", err)
	}
	return dir, nil
}

// --- backup.configs / restore.configs ------------------------------------------

func runBackupConfigs(ctx context.Context, env Env, p *configsParams) (engine.Outcome, error) {
	d, dir, err := depsAndRunDir(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	paths := ConfigPaths(d.Config, p.comps())
	var total int64
	for _, p := range paths {
		if n, err := filetree.Bytes(ctx, p); err == nil {
			total += n
		}
	}
	man, sum, missing, err := filetree.SaveArchive(ctx, dir, configsArchive, configsManifest, paths, newMeter(env, d, "archive", total).set)
	if err != nil {
		return engine.Outcome{}, err
	}
	arch := filepath.Join(dir, configsArchive)
	if err := setBackups(env, func(b *Backups) { b.Configs, b.ConfigsSHA256 = arch, sum }); err != nil {
		return engine.Outcome{}, err
	}
	msg := fmt.Sprintf("%s: %d files, %s, sha256 %s", arch, man.Files, output.Bytes(man.Bytes), sum[:12])
	if len(missing) > 0 {
		msg += "; not present: " + strings.Join(missing, ", ")
	}
	return engine.Outcome{Message: msg, Data: map[string]any{"archive": arch, "sha256": sum, "files": man.Files}}, nil
}

func runRestoreConfigs(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, b, err := depsAndBackups(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if b.Configs == "" {
		return engine.Outcome{}, errors.New("the run recorded no configuration archive (run data backups.configs)")
	}
	dir := filepath.Dir(b.Configs)
	if err := filetree.VerifySum(dir, filepath.Base(b.Configs)); err != nil {
		return engine.Outcome{}, err
	}
	var man filetree.Manifest
	if err := filetree.ReadJSON(filepath.Join(dir, configsManifest), &man); err != nil {
		return engine.Outcome{}, err
	}
	n, err := filetree.ExtractArchive(ctx, b.Configs, man)
	if err != nil {
		return engine.Outcome{}, err
	}
	msg := fmt.Sprintf("restored %d files from %s (sha256 verified)", n, b.Configs)
	if b.IndexerSecurity != "" {
		k, err := secadmin.InstallBackup(b.IndexerSecurity, filepath.Join(d.Config.Indexer.ConfigDir, "opensearch-security"))
		if err != nil {
			return engine.Outcome{}, err
		}
		msg += fmt.Sprintf("; %d security files from %s", k, b.IndexerSecurity)
	}
	return engine.Outcome{Message: msg}, nil
}

// --- backup.indexer_security ----------------------------------------------------

func runBackupSecurity(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, dir, err := depsAndRunDir(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	sec := filepath.Join(dir, securityDir)
	env.Waiting("security init -backup (securityadmin)")
	if _, err := secadmin.Backup(ctx, securityTool(d), d.Config.Indexer.SecurityInit, sec); err != nil {
		return engine.Outcome{}, fmt.Errorf("security backup: %w", err)
	}
	files, err := secadmin.BackupFiles(sec)
	if err != nil {
		return engine.Outcome{}, err
	}
	sums := map[string]string{}
	for _, f := range files {
		s, err := filetree.HashFile(filepath.Join(sec, f))
		if err != nil {
			return engine.Outcome{}, err
		}
		sums[securityDir+"/"+f] = s
	}
	if err := filetree.AddSums(dir, sums); err != nil {
		return engine.Outcome{}, err
	}
	// Like the official procedure: the live security configuration goes
	// into the config directory, which the no-options init re-applies.
	n, err := secadmin.InstallBackup(sec, filepath.Join(d.Config.Indexer.ConfigDir, "opensearch-security"))
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := setBackups(env, func(b *Backups) { b.IndexerSecurity = sec }); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("%d security files backed up to %s and installed into the config directory (%d)", len(files), sec, n)}, nil
}

// --- backup.indexer_data / restore.indexer_data (copy mode) -----------------------

func copyDescribe(pl *Planning) []string {
	dd := pl.dataDir()
	return []string{"check " + pl.unit("indexer") + " is stopped and the backup filesystem has room",
		"cold copy " + dd + " → <backup_dir>/<run-id>/" + dataDir + " (owners, modes, times kept; sha256 per file)",
		"verify the copy (files, sizes, modes, owners) against " + dataManifestName}
}

func copyRestoreDescribe(pl *Planning) []string {
	dd := pl.dataDir()
	return []string{"systemctl stop " + pl.unit("indexer") + " (if running)",
		"copy <backup_dir>/<run-id>/" + dataDir + " → " + dd + ".siemctl-restore (sha256 checked against " + dataManifestName + ")",
		"swap it in for " + dd + " (rename), remove the replaced data"}
}

// requireStopped fails unless comp's unit is down with no process: what (its data copied, ...)
// happens only then.
func requireStopped(ctx context.Context, d *Deps, comp, what string) error {
	u, err := d.units(ctx)
	if err != nil {
		return err
	}
	unit := unitOf(d, comp)
	down, state, err := unitDown(ctx, u, unit)
	if err != nil {
		return err
	}
	if !down {
		return fmt.Errorf("%s is %s: %s only while the %s is stopped (siemctl services stop %s)", unit, state, what, comp, comp)
	}
	return nil
}

func dataBackupOK(ctx context.Context, env Env) (bool, string, error) {
	b, err := backups(env)
	if err != nil {
		return false, "", err
	}
	ok, msg := copyVerified(ctx, b.IndexerData, dataManifestName)
	return ok, msg, nil
}

func runBackupData(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	return backupCopy(ctx, env, "indexer", dataCopied, env.Deps().Config.Indexer.DataDir, dataDir, dataManifestName,
		func(b *Backups, dst string, man filetree.Manifest) {
			b.IndexerData, b.IndexerDataSize, b.IndexerDataN = dst, man.Bytes, man.Files
		})
}

func dataManifest(env Env) (Backups, filetree.Manifest, error) {
	b, err := backups(env)
	if err != nil {
		return b, filetree.Manifest{}, err
	}
	if b.IndexerData == "" {
		return b, filetree.Manifest{}, errors.New("the run recorded no indexer data copy (run data backups.indexer_data)")
	}
	man, err := copyManifest(b.IndexerData, dataManifestName)
	return b, man, err
}

func dataRestored(ctx context.Context, env Env) (bool, error) {
	d := env.Deps()
	_, man, err := dataManifest(env)
	if err != nil {
		return false, err
	}
	got, err := filetree.Scan(ctx, d.Config.Indexer.DataDir, false)
	if err != nil {
		return false, nil
	}
	return filetree.Compare(man, got) == nil, nil
}

func runRestoreData(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	b, man, err := dataManifest(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := stopUnit(ctx, env, "indexer", "before restoring its data"); err != nil {
		return engine.Outcome{}, err
	}
	return restoreCopy(ctx, env, "indexer", dataCopied, b.IndexerData, man, d.Config.Indexer.DataDir)
}

// swapInCopy copies the verified tree copy src (manifest man) next to
// target and swaps it in by rename inside target's parent, which is reached
// without following a foreign symlink; a target that became a symlink
// although it was a directory when copied is refused. The replaced tree is
// removed once the swap is done.
func swapInCopy(ctx context.Context, src string, man filetree.Manifest, target string, progress func(done int64)) error {
	// The directory belongs to the component's service account; its
	// parent must be reached without a foreign symlink, and the directory
	// itself must not have become one: the swap happens inside that parent.
	parent, base := filepath.Dir(target), filepath.Base(target)
	pfd, err := filetree.OpenDirNoFollow(parent, nil, false)
	if err != nil {
		return fmt.Errorf("restore %s: %w", target, err)
	}
	defer unix.Close(pfd)
	wasDir := slices.ContainsFunc(man.Entries, func(e filetree.Entry) bool { return e.Path == "." && e.Type == "dir" })
	if st, err := filetree.LstatAt(pfd, base); err == nil && wasDir && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &filetree.LinkError{Path: target, Reason: "is a symlink now but was a directory when the copy was taken"}
	}
	tmpBase, oldBase := base+".siemctl-restore", base+".siemctl-replaced"
	tmp, old := filepath.Join(parent, tmpBase), filepath.Join(parent, oldBase)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	got, err := filetree.Copy(ctx, src, tmp, progress)
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := filetree.Compare(man, got); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("the copy %s does not match its manifest: %w", src, err)
	}
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if _, err := filetree.LstatAt(pfd, base); err == nil {
		if err := unix.Renameat(pfd, base, pfd, oldBase); err != nil {
			return &os.LinkError{Op: "rename", Old: target, New: old, Err: err}
		}
	}
	if err := unix.Renameat(pfd, tmpBase, pfd, base); err != nil {
		return fmt.Errorf("swap in the restored data: %w (the replaced data is in %s)", err, old)
	}
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	return nil
}
