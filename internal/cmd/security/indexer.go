package security

import (
	"context"
	"fmt"
	"strings"

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
}

// NewCmdApply builds `security indexer apply`.
func NewCmdApply(f *cli.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{ToolOptions: toolOptions(f)}
	return f.ChangeCommand(&cobra.Command{
		Use:   "apply",
		Short: "Apply the security configuration files to the indexer (security init)",
		Long: `Run the security init tool (indexer.security_init) with its default options: the YAML files
of the indexer's security configuration directory replace the users, roles and mappings in the
cluster (as after an upgrade). Asks for confirmation on a terminal (--yes off one) and takes
the host lock (exit 6 while an upgrade runs); --dry-run prints the tool's command line instead.`,
		Example: `  siemctl security indexer apply
  siemctl security indexer apply --yes -o json
  siemctl security indexer apply --dry-run`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Change = f.Global.Output, change
		return cli.Run(cmd.Context(), runF, runApply, opts)
	})
}

func runApply(ctx context.Context, opts *ApplyOptions) error {
	_, initTool, err := opts.Tools()
	if err != nil {
		return err
	}
	release, proceed, err := opts.Change.Begin(ctx, "Replace the indexer's security configuration (users, roles, mappings) with the files on disk?",
		func() ([]string, error) { return secadmin.ApplyCalls(initTool) })
	if !proceed {
		return err
	}
	defer release()
	res, err := secadmin.Apply(ctx, opts.Runner, initTool, secadmin.ApplyOptions{})
	return opts.renderInit(res, err, "security apply", "security configuration applied: Done with success")
}
