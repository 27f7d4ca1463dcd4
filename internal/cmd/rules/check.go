package rules

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rules"
	"github.com/siemctl/siemctl/internal/stack"
)

// CheckOptions are the inputs of `rules check`.
type CheckOptions struct {
	IO      *output.IOStreams
	Stack   func(ctx context.Context) (*stack.Stack, error)
	Output  string
	Timeout time.Duration

	Dir string // "" = {install_dir}/etc, with the manager's own check
}

// NewCmdCheck builds `rules check`.
func NewCmdCheck(f *cli.Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{IO: f.IO, Stack: f.Stack}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate local rules and decoders, and the manager's configuration",
		Long: `Parse and validate the local rules ({install_dir}/etc/rules/*.xml) and decoders
({install_dir}/etc/decoders/*.xml): well-formed XML (the files are fragments without a
single root), rule ids >= 100000 and unique, if_sid / if_matched_sid targets defined
locally or in the stock range (< 100000), decoder parents defined locally or in the
stock ruleset ({install_dir}/ruleset/decoders), and <order> naming as many fields as
the <regex> captures. Each problem names its file and line.

Without --dir, the manager's own configuration check runs too (API validation, or the
control tool's check when the API is down). With --dir D, only the files under
D/rules and D/decoders are checked (e.g. before copying them to the manager).

Exit codes: 0 no errors (warnings allowed), 3 problems found (no-go: do not restart
the manager with these files), 1 the check could not run (e.g. the directory is
missing).`,
		Example: `  siemctl rules check
  siemctl rules check --dir ./staging/etc -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			if cmd.Flags().Changed("dir") && opts.Dir == "" {
				return cli.FlagErrorf("--dir needs a directory")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCheck(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "check the rules/ and decoders/ under this directory instead of {install_dir}/etc (skips the manager's own check)")
	return cmd
}

type checkJSON struct {
	OK bool `json:"ok"`
	rules.Report
	Manager *rules.ManagerResult `json:"manager,omitempty"`
}

func runCheck(ctx context.Context, opts *CheckOptions) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	st, err := opts.Stack(ctx)
	if err != nil {
		return err
	}
	o := rules.Options{Dir: opts.Dir}
	if install := st.Config.Manager.InstallDir; install != "" {
		o.StockDecoderDir = filepath.Join(install, "ruleset", "decoders")
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
	if opts.Dir == "" {
		var api rules.ConfigValidator
		if m, err := st.NeedManager(); err == nil {
			api = m
		}
		mr := rules.ManagerCheck(ctx, api, st.Tools)
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
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "file", "line", "severity", "message")
	for _, pr := range out.Problems {
		sev := pr.Severity
		if sev == rules.Error {
			sev = p.Red(sev)
		} else {
			sev = p.Yellow(sev)
		}
		t.Row(pr.File, strconv.Itoa(pr.Line), sev, pr.Message)
	}
	if m := out.Manager; m != nil {
		switch m.State {
		case rules.ManagerInvalid:
			for _, e := range m.Errors {
				t.Row("manager ("+m.Source+")", "-", p.Red(rules.Error), e)
			}
		case rules.ManagerNotRun:
			t.Row("manager", "-", p.Yellow(rules.Warning), "configuration check not run: "+m.Detail)
		}
	}
	if t.Len() > 0 {
		if err := t.Render(); err != nil {
			return err
		}
	}
	e := opts.IO.ErrOut
	fmt.Fprintf(e, "%s: %d rules and %d decoders in %d files, %d errors, %d warnings\n", out.Dir, out.Rules, out.Decoders, len(out.Files), out.Errors(), len(out.Problems)-out.Errors())
	if m := out.Manager; m != nil && m.State != rules.ManagerNotRun {
		fmt.Fprintf(e, "manager configuration (%s): %s\n", m.Source, m.State)
	}
	if out.OK {
		fmt.Fprintln(e, "ok")
	}
	return nil
}
