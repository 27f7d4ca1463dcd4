package security

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/output"
)

// ToolOptions are the inputs shared by the indexer tool commands.
type ToolOptions struct {
	IO     *output.IOStreams
	Tools  func() (hash, initTool []string, err error)
	Runner secadmin.Runner
	Output string
}

// toolOptions are the indexer tool commands' dependencies: the streams, the
// configured hash and security init argv, and the exec runner.
func toolOptions(f *cli.Factory) ToolOptions {
	return ToolOptions{IO: f.IO, Runner: secadmin.ExecRunner(), Tools: func() ([]string, []string, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, nil, err
		}
		return cfg.Indexer.HashTool, cfg.Indexer.SecurityInit, nil
	}}
}

// HashOptions are the inputs of `security indexer hash`.
type HashOptions struct {
	ToolOptions
	PasswordFile string
}

// NewCmdHash builds `security indexer hash`.
func NewCmdHash(f *cli.Factory, runF func(context.Context, *HashOptions) error) *cobra.Command {
	opts := &HashOptions{ToolOptions: toolOptions(f)}
	cmd := &cobra.Command{
		Use:   "hash [--password-file F]",
		Short: "Hash a password for the indexer's internal_users.yml",
		Long: `Run the security plugin's hash tool (indexer.hash_tool) on a password read from stdin or
--password-file, and print the hash. The password reaches the tool through its environment
(hash.sh -env NAME), never its command line: the OpenSearch hash tool does not read stdin
(without -p or -env it wants a console).`,
		Example: `  printf '%s' "$NEW_PW" | siemctl security indexer hash
  siemctl security indexer hash --password-file /root/kibanaserver.pw`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output = f.Global.Output
			return cli.Run(cmd.Context(), runF, runHash, opts)
		},
	}
	cmd.Flags().StringVar(&opts.PasswordFile, "password-file", "", "read the password from this file instead of stdin")
	return cmd
}

func runHash(ctx context.Context, opts *HashOptions) error {
	pw, err := ReadPassword(PasswordSource{File: opts.PasswordFile, Stdin: opts.IO.In, CanPrompt: opts.IO.CanPrompt(), Warn: opts.IO.ErrOut})
	if err != nil {
		return err
	}
	hashTool, _, err := opts.Tools()
	if err != nil {
		return err
	}
	h, err := secadmin.Hash(ctx, opts.Runner, hashTool, pw)
	if err != nil {
		return fmt.Errorf("hash: %w", err)
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, map[string]string{"hash": h})
	}
	_, err = fmt.Fprintln(opts.IO.Out, h)
	return err
}

// BackupOptions are the inputs of `security indexer backup`.
type BackupOptions struct {
	ToolOptions
	Dir string
}

// NewCmdBackup builds `security indexer backup DIR`.
func NewCmdBackup(f *cli.Factory, runF func(context.Context, *BackupOptions) error) *cobra.Command {
	opts := &BackupOptions{ToolOptions: toolOptions(f)}
	return &cobra.Command{
		Use:   "backup DIR",
		Short: "Back up the indexer security configuration into DIR",
		Long: `Run the security init tool (indexer.security_init) with the upgrade guide's options
--options "-backup DIR -icl -nhnv": the security plugin writes config, roles, role mappings,
internal users, action groups, tenants, … as YAML files into DIR (created 0700).`,
		Example: `  siemctl security indexer backup /var/backups/siemctl/security-$(date +%F)`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output, opts.Dir = f.Global.Output, args[0]
			if !strings.HasPrefix(opts.Dir, "/") || strings.ContainsAny(opts.Dir, " \t\n\"'$`\\") {
				return cli.FlagErrorf("backup directory %q: use an absolute path without spaces or quotes", opts.Dir)
			}
			return cli.Run(cmd.Context(), runF, runBackup, opts)
		},
	}
}

func runBackup(ctx context.Context, opts *BackupOptions) error {
	_, initTool, err := opts.Tools()
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "running %s\n", strings.Join(append(initTool, secadmin.BackupOptions(opts.Dir)...), " "))
	res, err := secadmin.Backup(ctx, opts.Runner, initTool, opts.Dir)
	summary := fmt.Sprintf("backed up %s into %s (%d files)", strings.Join(res.Stored, ", "), res.Dir, len(res.Files))
	if len(res.NotStored) > 0 {
		summary += "; not in the live configuration, nothing to keep: " + secadmin.JoinFailures(res.NotStored)
	}
	return opts.renderInit(res, err, "security backup", summary)
}

// ApplyOptions are the inputs of `security indexer apply`.
type ApplyOptions struct {
	ToolOptions
	Change cli.Change
	// RemoveLive: remove the live objects the files lack (users, roles,
	// mappings created through the security REST API), knowingly.
	RemoveLive bool
	// Dirs are the security configuration files' directory
	// (<indexer.config_dir>/opensearch-security) and siemctl's state_dir,
	// under which the live configuration is backed up.
	Dirs func() (filesDir, stateDir string, err error)
	Now  func() time.Time
}

// NewCmdApply builds `security indexer apply`.
func NewCmdApply(f *cli.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{ToolOptions: toolOptions(f), Now: f.Now, Dirs: func() (string, string, error) {
		cfg, err := f.Config()
		if err != nil {
			return "", "", err
		}
		return filepath.Join(cfg.Indexer.ConfigDir, "opensearch-security"), cfg.StateDir, nil
	}}
	cmd := f.ChangeCommand(&cobra.Command{
		Use:   "apply",
		Short: "Apply the security configuration files to the indexer (security init)",
		Long: `Run the security init tool (indexer.security_init) with its default options: the YAML files
of the indexer's security configuration directory (<indexer.config_dir>/opensearch-security)
replace the users, roles and mappings in the cluster.

First the live configuration is backed up (the init tool's -backup) into
<state_dir>/security-backups/<UTC time> and compared with the files: the users, roles, role
mappings, action groups and tenants that the apply would remove (created through the security
REST API since the files were written) are named. On a terminal the question names them;
with --yes, or off a terminal, the apply refuses (exit 3, nothing changed) unless
--remove-live-objects says to remove them. --dry-run backs up into a temporary directory
(read-only for the cluster), prints the tool's two runs as its calls and, after them, the
objects the apply would remove and what the backup could not write.
A type the security index holds none of (audit on a brand-new cluster; every type when the
index is missing, not initialised, which the backup tool then creates empty) is named, with
nothing live to keep, and the apply goes on. A type that exists and could not be read (the
tool could not connect, or failed on it) is not in the backup: when the files would overwrite
it, the apply refuses (exit 3, nothing changed) naming it; make the backup work and apply
again, or add --remove-live-objects to let the files win knowingly.
Takes the host lock (exit 6 while an upgrade runs).`,
		Example: `  siemctl security indexer apply
  siemctl security indexer apply --dry-run
  siemctl security indexer apply --yes -o json
  siemctl security indexer apply --yes --remove-live-objects   # the files win, API-made objects go`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Change = f.Global.Output, change
		return cli.Run(cmd.Context(), runF, runApply, opts)
	})
	cmd.Flags().BoolVar(&opts.RemoveLive, "remove-live-objects", false, "remove the live users, roles and mappings that the files lack (named first); without it --yes refuses such an apply")
	return cmd
}

// ApplyResult is the JSON of `security indexer apply`.
type ApplyResult struct {
	secadmin.InitResult
	LiveBackup string             `json:"live_backup"`
	Removed    []secadmin.Removal `json:"removed"`
	// NotBackedUp are the types of the live configuration the backup did
	// not write (absent from the security index, or overwritten knowingly
	// with --remove-live-objects).
	NotBackedUp []secadmin.TypeFailure `json:"not_backed_up"`
}

func runApply(ctx context.Context, opts *ApplyOptions) error {
	_, initTool, err := opts.Tools()
	if err != nil {
		return err
	}
	filesDir, stateDir, err := opts.Dirs()
	if err != nil {
		return err
	}
	if opts.Change.DryRun {
		return opts.dryRun(ctx, initTool, filesDir)
	}
	if !opts.Change.Yes && !opts.IO.CanPrompt() {
		return output.ErrNoTTY // before the lock and the backup, like Begin
	}
	release, err := opts.Change.Hold(ctx)
	if err != nil {
		return err
	}
	defer release()
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	backup := filepath.Join(stateDir, "security-backups", now().UTC().Format("20060102T150405Z"))
	fmt.Fprintf(opts.IO.ErrOut, "backing up the live security configuration into %s\n", backup)
	live, err := secadmin.LiveBackup(ctx, opts.Runner, initTool, backup, filesDir)
	if err != nil {
		return fmt.Errorf("back up the live security configuration into %s: %w; nothing was changed", backup, err)
	}
	notBacked, err := opts.liveNotes(live, filesDir, func(s string) { fmt.Fprintln(opts.IO.ErrOut, s) })
	if err != nil {
		return err
	}
	removals := live.Removals
	question := "Replace the indexer's security configuration with the files of " + filesDir + " (the live one is backed up in " + backup + ")?"
	switch {
	case len(removals) > 0 && !opts.RemoveLive:
		if opts.Change.Yes || !opts.IO.CanPrompt() {
			return &secadmin.RemovedError{Removals: removals, Backup: backup, FilesDir: filesDir}
		}
		question = fmt.Sprintf("Applying the files of %s REMOVES %d object(s) of the live configuration that the files lack: %s (backed up in %s). Remove them?",
			filesDir, len(removals), secadmin.JoinRemovals(removals), backup)
	case len(removals) > 0:
		fmt.Fprintf(opts.IO.ErrOut, "removing (--remove-live-objects): %s; backed up in %s\n", secadmin.JoinRemovals(removals), backup)
	}
	if err := opts.Change.Ask(question); err != nil {
		return err
	}
	res, err := secadmin.Apply(ctx, opts.Runner, initTool, secadmin.ApplyOptions{})
	summary := "security configuration applied: Done with success; the live configuration before it is in " + backup
	if len(notBacked) > 0 {
		summary += " (not backed up: " + secadmin.JoinFailures(notBacked) + ")"
	}
	if len(removals) > 0 {
		summary += "; removed " + secadmin.JoinRemovals(removals)
	}
	if err == nil && opts.Output == "json" {
		if res.Output == nil {
			res.Output = []string{}
		}
		return output.JSON(opts.IO.Out, ApplyResult{InitResult: res, LiveBackup: backup, Removed: removals, NotBackedUp: notBacked})
	}
	return opts.renderInit(res, err, "security apply", summary)
}

// liveNotes says what the live backup could not write (say gets each
// line) and returns those types; a type the apply would overwrite with no
// copy of it is refused (exit 3) unless --remove-live-objects says the
// files win.
func (o *ApplyOptions) liveNotes(live secadmin.Live, filesDir string, say func(string)) ([]secadmin.TypeFailure, error) {
	notBacked := slices.Clone(live.Absent)
	if live.IndexCreated {
		say("the security index did not exist (the plugin was not initialised): the backup tool created it, empty; nothing live to keep")
	} else if len(live.Absent) > 0 {
		say("not in the live configuration, nothing to keep: " + secadmin.JoinFailures(live.Absent))
	}
	blind := live.Blind(filesDir)
	for _, f := range live.Unread {
		if !slices.Contains(blind, f) {
			say("not backed up, and left alone by the apply (no " + secadmin.TypeFiles[f.Type] + " in " + filesDir + "): " + f.String())
		}
	}
	if len(blind) == 0 {
		return notBacked, nil
	}
	if !o.RemoveLive {
		return nil, &secadmin.BackupFailedError{Blind: blind, Stored: live.Result.Stored, Backup: live.Backup, FilesDir: filesDir}
	}
	say("not backed up, overwritten by the files anyway (--remove-live-objects): " + secadmin.JoinFailures(blind))
	return append(notBacked, blind...), nil
}

// dryRun backs the live configuration up into a temporary directory
// (read-only for the cluster) and prints the tool's two runs as the calls;
// what the apply would remove, what could not be backed up and whether the
// apply would refuse are notes, not calls.
func (o *ApplyOptions) dryRun(ctx context.Context, initTool []string, filesDir string) error {
	calls, err := secadmin.ApplyCalls(initTool)
	if err != nil {
		return err
	}
	calls = append([]string{"run " + strings.Join(append(slices.Clone(initTool), secadmin.BackupOptions("<state_dir>/security-backups/<time>")...), " ")}, calls...)
	tmp, err := os.MkdirTemp("", "siemctl-security-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var notes []string
	live, err := secadmin.LiveBackup(ctx, o.Runner, initTool, tmp, filesDir)
	if err != nil {
		return o.Change.PrintDryRun(calls, []string{"would refuse: cannot back up or compare the live configuration: " + err.Error()})
	}
	live.Backup = "<state_dir>/security-backups/<time>" // the temporary copy goes
	say := func(s string) { notes = append(notes, s) }
	if _, err := o.liveNotes(live, filesDir, say); err != nil {
		say("would refuse: " + err.Error())
	}
	for _, r := range live.Removals {
		say("would remove " + r.String() + " (live, not in " + filepath.Join(filesDir, r.File) + ")")
	}
	if len(live.Removals) > 0 && !o.RemoveLive {
		say("without --remove-live-objects the apply asks before it removes them, and --yes refuses")
	}
	return o.Change.PrintDryRun(calls, notes)
}
