package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/rundata"
)

// --- backup.indexer_data / restore.indexer_data per mode ---------------------------

func backupDataDescribe(pl *Planning) []string {
	c := pl.cfg()
	snap := "indexer.data_safety snapshot: no copy; record the snapshot indexer/snapshot took (the data directory stays as it is)"
	switch dataSafety(c) {
	case config.DataSafetySnapshot:
		return []string{snap}
	case config.DataSafetyCommand:
		return []string{"check " + pl.unit("indexer") + " is stopped",
			"run " + strings.Join(c.Indexer.DataHookTake, " ") + " with SIEMCTL_RUN_ID, SIEMCTL_DATA_DIR=" + c.Indexer.DataDir + " (output recorded; non-zero exit fails the step)"}
	case config.DataSafetyAuto:
		return append([]string{"indexer.data_safety auto: the mode preflight/data-safety chose", "snapshot: " + snap, "copy:"}, copyDescribe(pl)...)
	}
	return copyDescribe(pl)
}

func backupIndexerData(ctx context.Context, env Env, p *noParams) (engine.Outcome, error) {
	d := env.Deps()
	mode, err := runMode(ctx, env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	switch mode {
	case config.DataSafetySnapshot:
		b, err := backups(env)
		if err != nil {
			return engine.Outcome{}, err
		}
		if b.IndexerSnapshot == nil {
			return engine.Outcome{}, errors.New("indexer.data_safety is snapshot but the run recorded no snapshot (step indexer/snapshot must run first)")
		}
		if err := setBackups(env, func(b *Backups) { b.IndexerDataMode = mode }); err != nil {
			return engine.Outcome{}, err
		}
		return engine.Outcome{Message: fmt.Sprintf("data safety by snapshot %s/%s (%d indices); no copy of %s", b.IndexerSnapshot.Repository, b.IndexerSnapshot.Name, len(b.IndexerSnapshot.Indices), d.Config.Indexer.DataDir)}, nil
	case config.DataSafetyCommand:
		if err := requireStopped(ctx, d, "indexer", dataCopied); err != nil {
			return engine.Outcome{}, err
		}
		run, err := runDataHook(ctx, env, d, d.Config.Indexer.DataHookTake)
		if serr := setBackups(env, func(b *Backups) { b.IndexerDataMode, b.IndexerDataHook = mode, &run }); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return engine.Outcome{}, fmt.Errorf("data hook take: %w", err)
		}
		return engine.Outcome{Message: "data hook take: " + hookSummary(run), Data: map[string]any{"argv": run.Argv, "exit_code": run.ExitCode, "output": run.Output}}, nil
	}
	if err := setBackups(env, func(b *Backups) { b.IndexerDataMode = config.DataSafetyCopy }); err != nil {
		return engine.Outcome{}, err
	}
	return runBackupData(ctx, env, p)
}

// backupDataDone is the Skip/Verify of backup.indexer_data in every mode.
func backupDataDone(ctx context.Context, env Env) (bool, string, error) {
	d, b, err := depsAndBackups(env)
	if err != nil {
		return false, "", err
	}
	mode, err := runMode(ctx, env, d)
	if err != nil {
		return false, "", err
	}
	switch mode {
	case config.DataSafetySnapshot:
		if b.IndexerDataMode == config.DataSafetySnapshot && b.IndexerSnapshot != nil {
			return true, "data safety by snapshot " + b.IndexerSnapshot.Name + " (recorded)", nil
		}
		return false, "", nil
	case config.DataSafetyCommand:
		if b.IndexerDataHook != nil && b.IndexerDataHook.ExitCode == 0 && b.IndexerDataMode == config.DataSafetyCommand {
			return true, "data hook take already succeeded", nil
		}
		return false, "", nil
	}
	return dataBackupOK(ctx, env)
}

// restoreMode is the mode the upgrade run used (recorded), else the config's.
func restoreMode(env Env, d *Deps) (Backups, string, error) {
	b, err := backups(env)
	if err != nil {
		return b, "", err
	}
	if m := b.Mode(); m != "" {
		return b, m, nil
	}
	if m := dataSafety(d.Config); m != config.DataSafetyAuto {
		return b, m, nil
	}
	return b, config.DataSafetyCopy, nil // nothing secured yet: copy mode's restore refuses without a copy
}

func restoreDataDescribe(pl *Planning) []string {
	c := pl.cfg()
	dd := pl.dataDir()
	snap := []string{"systemctl stop " + pl.unit("indexer") + " (if running)",
		"rename " + dd + " → " + dd + ".siemctl-<run-id> (the new version's data, kept; " + PruneCommand + " removes it later); create an empty " + dd + " (owner and mode kept)",
		"the old indexer then starts empty; restore.indexer_snapshot brings the alert indices back"}
	switch dataSafety(c) {
	case config.DataSafetySnapshot:
		return snap
	case config.DataSafetyAuto:
		return append(append([]string{"in the mode the upgrade run chose (indexer.data_safety auto)", "snapshot:"}, snap...), append([]string{"copy:"}, copyRestoreDescribe(pl)...)...)
	case config.DataSafetyCommand:
		return []string{"systemctl stop " + pl.unit("indexer") + " (if running)",
			"run " + strings.Join(c.Indexer.DataHookRestore, " ") + " with SIEMCTL_RUN_ID, SIEMCTL_DATA_DIR=" + dd + " (output recorded)"}
	}
	return copyRestoreDescribe(pl)
}

func restoreIndexerData(ctx context.Context, env Env, p *noParams) (engine.Outcome, error) {
	d := env.Deps()
	b, mode, err := restoreMode(env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	if mode == config.DataSafetyCopy {
		return runRestoreData(ctx, env, p)
	}
	if err := stopIndexer(ctx, env, d); err != nil {
		return engine.Outcome{}, err
	}
	if mode == config.DataSafetyCommand {
		run, err := runDataHook(ctx, env, d, d.Config.Indexer.DataHookRestore)
		if err != nil {
			return engine.Outcome{}, fmt.Errorf("data hook restore: %w", err)
		}
		return engine.Outcome{Message: "data hook restore: " + hookSummary(run), Data: map[string]any{"argv": run.Argv, "exit_code": run.ExitCode, "output": run.Output}}, nil
	}
	if b.IndexerSnapshot == nil {
		return engine.Outcome{}, errors.New("the run recorded no snapshot (run data backups.indexer_snapshot): the data directory is left as it is")
	}
	target := filepath.Clean(d.Config.Indexer.DataDir)
	aside := rundata.AsidePath(target, env.RunID())
	fi, err := os.Lstat(target)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("data directory: %w", err)
	}
	if !fi.IsDir() {
		return engine.Outcome{}, fmt.Errorf("%s is not a directory (a symlink is not followed): set it aside by hand", target)
	}
	if _, err := os.Lstat(aside); err == nil {
		return engine.Outcome{}, fmt.Errorf("%s already exists: move it away first (it may hold data)", aside)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return engine.Outcome{}, err
	}
	if err := os.Rename(target, aside); err != nil {
		return engine.Outcome{}, fmt.Errorf("set %s aside: %w", target, err)
	}
	if err := setBackups(env, func(b *Backups) { b.IndexerDataAside = aside }); err != nil {
		return engine.Outcome{}, err
	}
	uid, gid := filetree.Owner(fi)
	if err := os.Mkdir(target, 0o700); err != nil {
		return engine.Outcome{}, fmt.Errorf("create the empty data directory (the old data is in %s): %w", aside, err)
	}
	if err := filetree.ApplyMeta(target, filetree.Entry{Mode: filetree.ModeBits(fi.Mode()), UID: uid, GID: gid}); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("%s set aside as %s (kept); %s is empty for the old version, snapshot %s restores the alert indices", target, aside, target, b.IndexerSnapshot.Name),
		Data: map[string]any{"aside": aside}}, nil
}

// restoreDataDone is the Skip of restore.indexer_data in every mode.
func restoreDataDone(ctx context.Context, env Env, _ *noParams) (string, bool, error) {
	d := env.Deps()
	b, mode, err := restoreMode(env, d)
	if err != nil {
		return "", false, err
	}
	switch mode {
	case config.DataSafetySnapshot:
		if b.IndexerDataAside == "" {
			return "", false, nil
		}
		if _, err := os.Lstat(b.IndexerDataAside); err != nil {
			return "", false, nil
		}
		return "the new version's data is already set aside in " + b.IndexerDataAside, true, nil
	case config.DataSafetyCommand:
		return "", false, nil // the hook decides; it is run again
	}
	ok, err := dataRestored(ctx, env)
	if err != nil || !ok {
		return "", false, err
	}
	return "the data directory already matches the copy", true, nil
}

func stopIndexer(ctx context.Context, env Env, d *Deps) error {
	if err := stopUnit(ctx, env, "indexer", "before replacing its data"); err != nil {
		return err
	}
	return requireStopped(ctx, d, "indexer", dataCopied)
}

// runDataHook runs a site hook with the run id and the data path in its
// environment. A non-zero exit is an error quoting the hook's last lines.
func runDataHook(ctx context.Context, env Env, d *Deps, argv []string) (DataHookRun, error) {
	run := DataHookRun{Argv: slices.Clone(argv)}
	if len(argv) == 0 {
		return run, errors.New("indexer.data_safety is command but the hook is not configured (indexer.data_hook_take / data_hook_restore)")
	}
	if d.Exec == nil {
		return run, errors.New("no program runner configured")
	}
	env.Waiting("running data hook %s", strings.Join(argv, " "))
	vars := []string{"SIEMCTL_RUN_ID=" + env.RunID(), "SIEMCTL_DATA_DIR=" + d.Config.Indexer.DataDir, "SIEMCTL_INDEXER_UNIT=" + unitOf(d, "indexer")}
	stdout, stderr, code, err := d.Exec.Run(ctx, vars, argv[0], argv[1:]...)
	run.ExitCode = code
	run.Output = d.redact(lastLines(string(stdout)+string(stderr), 40))
	if err != nil {
		return run, fmt.Errorf("%s: %w", argv[0], err)
	}
	if code != 0 {
		return run, fmt.Errorf("%s exited %d: %s", strings.Join(argv, " "), code, lastLines(run.Output, 4))
	}
	return run, nil
}

func hookSummary(r DataHookRun) string {
	s := strings.Join(r.Argv, " ") + " exited 0"
	if o := lastLines(r.Output, 2); o != "" {
		s += ": " + o
	}
	return s
}
