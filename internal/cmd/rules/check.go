package rules

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rules"
)

// CheckOptions are the inputs of `rules check`.
type CheckOptions struct {
	IO      *output.IOStreams
	Config  func() (*config.Config, error)
	Manager func(ctx context.Context) (*manager.Client, error)
	Tools   func(ctx context.Context) (manager.Tools, error)
	Output  string
	Timeout time.Duration

	Dir     string // "" = {install_dir}/etc, with the manager's own check
	Stock   string // "" = {install_dir}/ruleset
	AsStock bool   // check Dir ({install_dir}/ruleset by default) as the stock ruleset
}

// NewCmdCheck builds `rules check`.
func NewCmdCheck(f *cli.Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{IO: f.IO, Config: f.Config, Manager: f.Manager, Tools: f.ManagerTools}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check rules and decoders as the manager's analysis daemon loads them",
		Long: `Check rules and decoders as the manager's analysis daemon (wazuh-analysisd) loads
them: its own XML dialect (several root elements, no entity decoding, "\<" as text),
its regex engines (OS_Regex: one level of parentheses, no '|' inside them, only its
own escapes; each '|' alternative fills <order> from its own captures; PCRE2 with
type="pcre2"), and its load order: the stock ruleset ({install_dir}/ruleset/decoders
and /rules, or --stock DIR) first, then the local files ({install_dir}/etc/decoders
and /rules, or --dir D), each directory's *.xml by name, decoders before rules.
<rule_exclude>/<decoder_exclude> of D/ossec.conf are honoured. So if_sid,
if_matched_sid, if_group, decoded_as and decoder parents resolve as the daemon
resolves them, and a local rule id that a stock rule already uses is found (stock
ids are not all below 100000: Sysmon, unbound, fireeye, ...).

Severity as the daemon has it: an error is what stops the manager from starting
(XML error, regex syntax, a regex with captures but no <order>, a decoder with no
prematch/program_name/parent, an unknown parent or decoded_as, a rule without
description, ...); a warning is what it loads but ignores or degrades (a duplicate
rule id, an if_sid that does not exist, an <order> longer or shorter than the
captures, ...). Each finding has file, line and the daemon's message code.

--as-stock checks a directory (default {install_dir}/ruleset) as the stock ruleset
itself, e.g. a ruleset update before it is installed.

Without --dir and --as-stock, the manager's own configuration check runs too (API
validation, or the control tool's check when the API is down).

Exit codes: 0 no errors (warnings allowed), 3 errors found (no-go: the manager
would not start with these files), 1 the check could not run (e.g. the directory is
missing), 2 bad flags.`,
		Example: `  siemctl rules check
  siemctl rules check --dir ./staging/etc -o json
  siemctl rules check --dir ./staging/etc --stock ./wazuh-4.9.0/ruleset
  siemctl rules check --as-stock --dir ./wazuh-4.10.0/ruleset`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			if cmd.Flags().Changed("dir") && opts.Dir == "" {
				return cli.FlagErrorf("--dir needs a directory")
			}
			if cmd.Flags().Changed("stock") && opts.Stock == "" {
				return cli.FlagErrorf("--stock needs a directory")
			}
			if opts.AsStock && opts.Stock != "" {
				return cli.FlagErrorf("--as-stock checks the stock ruleset itself: drop --stock")
			}
			return cli.Run(cmd.Context(), runF, runCheck, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "check the rules/ and decoders/ under this directory instead of {install_dir}/etc (skips the manager's own check)")
	cmd.Flags().StringVar(&opts.Stock, "stock", "", "the stock ruleset (holding rules/ and decoders/) to load first (default {install_dir}/ruleset)")
	cmd.Flags().BoolVar(&opts.AsStock, "as-stock", false, "check the directory (--dir, default {install_dir}/ruleset) as the stock ruleset itself")
	return cmd
}

type checkJSON struct {
	OK bool `json:"ok"`
	rules.Report
	Manager *rules.ManagerResult `json:"manager,omitempty"`
}

func runCheck(ctx context.Context, opts *CheckOptions) error {
	ctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	o := rules.Options{Dir: opts.Dir, StockDir: opts.Stock, AsStock: opts.AsStock}
	if install := cfg.Manager.InstallDir; install != "" {
		if o.StockDir == "" && !o.AsStock {
			o.StockDir = filepath.Join(install, "ruleset")
		}
		if o.Dir == "" && o.AsStock {
			o.Dir = filepath.Join(install, "ruleset")
		}
		if o.Dir == "" {
			o.Dir = filepath.Join(install, "etc")
		}
	}
	if o.Dir == "" {
		return cli.FlagErrorf("manager.install_dir is not set: give --dir")
	}
	rep, err := rules.Check(o)
	if err != nil {
		return err
	}
	out := checkJSON{Report: rep}
	if opts.Dir == "" && !opts.AsStock {
		var api rules.ConfigValidator
		if m, err := opts.Manager(ctx); err == nil {
			api = m
		}
		tools, err := opts.Tools(ctx)
		if err != nil {
			return err
		}
		mr := rules.ManagerCheck(ctx, api, tools)
		out.Manager = &mr
	}
	out.OK = rep.Errors() == 0 && (out.Manager == nil || out.Manager.State != rules.ManagerInvalid)
	if opts.Output == "json" {
		if err := output.JSON(opts.IO.Out, out); err != nil {
			return err
		}
	} else if err := render(opts, out); err != nil {
		return err
	}
	if !out.OK {
		return &cli.ExitError{Code: cli.ExitNoGo}
	}
	return nil
}

func render(opts *CheckOptions, out checkJSON) error {
	p := opts.IO.Colors()
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "file", "line", "severity", "code", "message")
	for _, pr := range out.Problems {
		sev := pr.Severity
		if sev == rules.Error {
			sev = p.Red(sev)
		} else {
			sev = p.Yellow(sev)
		}
		code := pr.Code
		if code == "" {
			code = "-"
		}
		t.Row(pr.File, strconv.Itoa(pr.Line), sev, code, pr.Message)
	}
	if m := out.Manager; m != nil {
		switch m.State {
		case rules.ManagerInvalid:
			for _, e := range m.Errors {
				t.Row("manager ("+m.Source+")", "-", p.Red(rules.Error), "-", e)
			}
		case rules.ManagerNotRun:
			t.Row("manager", "-", p.Yellow(rules.Warning), "-", "configuration check not run: "+m.Detail)
		}
	}
	if t.Len() > 0 {
		if err := t.Render(); err != nil {
			return err
		}
	}
	e := opts.IO.ErrOut
	stock := "stock ruleset not read"
	switch {
	case out.AsStock:
		stock = "checked as the stock ruleset"
	case out.Stock != "":
		stock = "stock ruleset " + out.Stock
	}
	fmt.Fprintf(e, "%s (%s): %d rules and %d decoders loaded from %d files, %d errors, %d warnings\n", out.Dir, stock, out.Rules, out.Decoders, len(out.Files), out.Errors(), len(out.Problems)-out.Errors())
	if m := out.Manager; m != nil && m.State != rules.ManagerNotRun {
		fmt.Fprintf(e, "manager configuration (%s): %s\n", m.Source, m.State)
	}
	if out.OK {
		fmt.Fprintln(e, "ok")
	}
	return nil
}
