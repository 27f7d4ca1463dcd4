// Package configcmd is `siemctl config`: the effective configuration and where each value came
// from.
package configcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/output"
)

// NewCmdConfig wires the config verbs.
func NewCmdConfig(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:   "config",
		Short: "Configuration keys, defaults and precedence; the effective configuration",
		Long:  cli.ConfigReference + "\nsiemctl config view shows the effective value of every key and where it came from.\n",
	}, NewCmdView(f, nil))
}

// ViewOptions are the inputs of `config view`.
type ViewOptions struct {
	IO     *output.IOStreams
	Config func() (*config.Config, error)
	Output string
	Keys   []string // prefixes; empty: every key
}

// NewCmdView builds `config view`.
func NewCmdView(f *cli.Factory, runF func(context.Context, *ViewOptions) error) *cobra.Command {
	opts := &ViewOptions{IO: f.IO, Config: f.Config}
	return &cobra.Command{
		Use:   "view [KEY...]",
		Short: "Print every configuration key with its effective value and origin",
		Long: `Print every configuration key with its effective value and where it came from: the
profile's default, the config file, a SIEMCTL_* environment variable or a flag (precedence:
flag > environment > file > profile). KEY limits the listing to keys starting with it
(indexer, manager.api_url). Secrets are never configuration values: only where they are read
from (password_file, password_env, password_command) appears.`,
		Example: `  siemctl config view
  siemctl config view indexer manager.api_url
  siemctl --profile wazuh config view -o json | jq -r '.[] | select(.origin | startswith("env")) | .key'`,
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"indexer", "manager", "dashboard", "shipper", "systemd", "packages", "thresholds"}, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Output, opts.Keys = f.Global.Output, args
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			return cli.Run(cmd.Context(), runF, runView, opts)
		},
	}
}

func runView(_ context.Context, opts *ViewOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	var rows []config.Setting
	for _, s := range cfg.Effective() {
		if matches(s.Key, opts.Keys) {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return cli.FlagErrorf("no configuration key starts with %s (siemctl help config lists them)", strings.Join(opts.Keys, " or "))
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, rows)
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "key", "value", "origin")
	for _, s := range rows {
		t.Row(s.Key, valueText(s.Value), s.Origin)
	}
	return t.Render()
}

func matches(key string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if key == p || strings.HasPrefix(key, strings.TrimSuffix(p, ".")+".") {
			return true
		}
	}
	return false
}

// valueText shows lists as JSON (argv stays readable and unambiguous) and empty strings as "".
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case []any, []string:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}
