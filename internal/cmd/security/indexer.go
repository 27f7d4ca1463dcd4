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
	return opts.renderInit(res, err, "security backup", fmt.Sprintf("backed up %s into %s (%d files)", strings.Join(res.Stored, ", "), res.Dir, len(res.Files)))
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
(read-only for the cluster), prints the tool's command line and the objects it would remove.
A live configuration that cannot be read (the security index missing: not initialised) has
nothing to compare; the apply then says so and goes on (asking as usual).
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
		_, _, err := opts.Change.Begin(ctx, "", func() ([]string, error) {
			calls, err := secadmin.ApplyCalls(initTool)
			if err != nil {
				return nil, err
			}
			tmp, err := os.MkdirTemp("", "siemctl-security-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			calls = append([]string{"run " + strings.Join(append(slices.Clone(initTool), secadmin.BackupOptions("<state_dir>/security-backups/<time>")...), " ")}, calls...)
			rs, err := opts.liveRemovals(ctx, initTool, tmp, filesDir)
			if err != nil {
				return append(calls, "cannot compare with the live configuration: "+err.Error()), nil
			}
			for _, r := range rs {
				calls = append(calls, "would remove "+r.String()+" (live, not in "+filepath.Join(filesDir, r.File)+")")
			}
			return calls, nil
		})
		return err
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
	removals, cmpErr := opts.liveRemovals(ctx, initTool, backup, filesDir)
	question := "Replace the indexer's security configuration with the files of " + filesDir + " (the live one is backed up in " + backup + ")?"
	switch {
	case cmpErr != nil:
		fmt.Fprintf(opts.IO.ErrOut, "cannot compare with the live configuration (%v): nothing there to keep (the security index missing, not initialised) or the indexer does not answer\n", cmpErr)
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
	if removals == nil {
		removals = []secadmin.Removal{}
	}
	summary := "security configuration applied: Done with success; the live configuration before it is in " + backup
	if len(removals) > 0 {
		summary += "; removed " + secadmin.JoinRemovals(removals)
	}
	if err == nil && opts.Output == "json" {
		if res.Output == nil {
			res.Output = []string{}
		}
		return output.JSON(opts.IO.Out, ApplyResult{InitResult: res, LiveBackup: backup, Removed: removals})
	}
	return opts.renderInit(res, err, "security apply", summary)
}

// liveRemovals backs the live configuration up into dir and lists what the
// files of filesDir would remove from it.
func (o *ApplyOptions) liveRemovals(ctx context.Context, initTool []string, dir, filesDir string) ([]secadmin.Removal, error) {
	if _, err := secadmin.Backup(ctx, o.Runner, initTool, dir); err != nil {
		return nil, err
	}
	return secadmin.Compare(dir, filesDir)
}
