// Package cli is siemctl's command-line shell: the root command, the
// Factory that hands commands their dependencies, and the one place that maps
// errors to exit codes.
//
// The Factory's clients are wired by internal/factory (gh's
// pkg/cmd/factory), which builds one client set lazily from the
// configuration; cmd/siemctl hands its Wire to Main, so this package, which
// every command imports, builds no client and imports no domain package for
// it. Commands take narrow pieces (f.Indexer, f.Manager, f.ManagerTools,
// f.Units) or narrow the set to the interface they declare (ClientsAs,
// FromClients: the health checks' inputs, the step kinds' dependencies, the
// live snapshot source).
//
// The command packages (internal/cmd/...) build their commands from a few
// pieces here: Group (a command group: texts and subcommands), Run (the
// NewCmdX(f, runF) seam), CheckOutput (-o), WithTimeout and Connect (the
// --timeout bound and the client got within it), and ChangeCommand with
// Change (the policy of a verb that changes the stack: --dry-run, the host
// lock, confirmation).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/output"
)

// Stdio is the process's standard streams and environment, handed to Main,
// and the wiring of its clients.
type Stdio struct {
	IO  *output.IOStreams
	Env []string
	// Wire connects the Factory's clients to the stack (internal/factory's
	// Wire; nil: every client returns ErrNoClients). A parameter for the
	// reason Registrar is one: this package does not import the wiring.
	Wire func(f *Factory)
}

// Registrar adds the command groups to the root. cmd/siemctl passes the
// real one; keeping it a parameter avoids an import cycle between cli and the
// command packages.
type Registrar func(root *cobra.Command, f *Factory)

// Main runs siemctl and returns the exit code.
func Main(ctx context.Context, args []string, stdio Stdio, register Registrar) int {
	limitMemory(stdio.Env)
	f := NewFactory(stdio.IO, stdio.Env)
	if stdio.Wire != nil {
		stdio.Wire(f)
	}
	root := NewCmdRoot(f)
	if register != nil {
		register(root, f)
	}
	root.SetArgs(args)
	root.SetIn(stdio.IO.In)
	root.SetOut(stdio.IO.Out)
	root.SetErr(stdio.IO.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	if code == ExitFailure && isCobraUsageError(err) {
		code = ExitUsage
	}
	var ee *ExitError
	if errors.Is(err, ErrSilent) || (errors.As(err, &ee) && ee.Reason == "" && ee.Err == nil) {
		return code
	}
	printError(stdio.IO, f.Global.Output == "json", err, code)
	var fe *FlagError
	if errors.As(err, &fe) || isCobraUsageError(err) {
		fmt.Fprintln(stdio.IO.ErrOut, "Run 'siemctl --help' or 'siemctl <command> --help' for usage.")
	}
	return code
}

// memoryLimit is the soft heap limit siemctl runs under (GOMEMLIMIT
// overrides it): the hourly capture and health answer many requests at once,
// each bounded (netclient.MaxAnswer); the limit makes the collector reclaim
// refused answers before the process grows, keeping a run against runaway
// 50 MB answers well under 150 MB RSS. A run that really needs more gets it
// (the limit is soft).
const memoryLimit = 64 << 20

func limitMemory(env []string) {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMEMLIMIT=") {
			return
		}
	}
	debug.SetMemoryLimit(memoryLimit)
}

func printError(io *output.IOStreams, asJSON bool, err error, code int) {
	if asJSON {
		_ = output.JSON(io.ErrOut, map[string]any{"error": err.Error(), "exit_code": code})
		return
	}
	p := io.ErrColors()
	fmt.Fprintf(io.ErrOut, "%s %s\n", p.Red("error:"), err)
	if h := hint(err); h != "" {
		fmt.Fprintf(io.ErrOut, "%s %s\n", p.Bold("hint:"), h)
	}
}

// Group makes cmd a command group of children: no action of its own, its
// help without arguments, and an unknown or misspelt subcommand a usage
// error (exit 2) with cobra's suggestion, as the root answers one (cobra
// alone would print the group's help and exit 0). cmd carries the group's
// texts (Use, Short, Long, Example).
func Group(cmd *cobra.Command, children ...*cobra.Command) *cobra.Command {
	cmd.Args = unknownSubcommand
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.AddCommand(children...)
	return cmd
}

// unknownSubcommand is a group's Args: no argument (the help), else the
// usage error naming the closest subcommands.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	var hint strings.Builder
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint.WriteString("\n\nDid you mean this?\n")
		for _, name := range s {
			fmt.Fprintf(&hint, "\t%s\n", name)
		}
	}
	return FlagErrorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), hint.String())
}

func isCobraUsageError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// NewCmdRoot builds the root command with the global flags.
func NewCmdRoot(f *Factory) *cobra.Command {
	g := f.Global
	root := &cobra.Command{
		Use:   "siemctl",
		Short: "Check, upgrade and roll back a SIEM stack, on one host or node by node across a cluster",
		Long: `siemctl checks, upgrades and rolls back a SIEM stack, on one host or node by node: an OpenSearch-based
indexer, a Wazuh-like manager, a web dashboard and a Filebeat-like shipper, all systemd units.

  siemctl health                      is the SIEM working, and if not, what do I do
  siemctl upgrade plan --to 4.10.0    versions, go/no-go gates and every step
  siemctl upgrade apply --to 4.10.0   the ordered runbook with gates, journal and rollback
  siemctl snapshot capture            the stack's state as JSON, for cron and change tickets`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Get().Version,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if g.NoColor {
				f.IO.DisableColor()
			}
			return f.configureLogger()
		},
	}
	root.SetVersionTemplate("siemctl {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{Err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.ConfigPath, "config", "", "config file (default $SIEMCTL_CONFIG or /etc/siemctl/siemctl.yaml)")
	pf.StringVar(&g.Profile, "profile", "", "defaults profile: siem or wazuh (default from the config file, else siem)")
	pf.StringVarP(&g.Output, "output", "o", "table", "output format: table or json (health also: nagios, prometheus)")
	DurationVar(pf, &g.Timeout, "timeout", g.Timeout, "deadline for network calls of a read-only command (e.g. 3s, 1m)")
	pf.BoolVar(&g.NoColor, "no-color", false, "disable colour (also NO_COLOR)")
	pf.StringVar(&g.LogLevel, "log-level", "warn", "log level on stderr: debug, info, warn, error")
	pf.StringVar(&g.LogFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVarP(&g.Yes, "yes", "y", false, "assume yes for confirmations (required without a terminal)")
	registerGlobalCompletions(root)

	root.AddCommand(newCmdVersion(f))
	root.AddCommand(newCmdCompletion())
	root.AddCommand(newCmdDocs(root))
	root.AddCommand(newHelpTopic("exit-codes", "Exit codes of siemctl", exitCodesHelp))
	return root
}

// Run is the last line of a command's RunE: it hands opts to runF when a
// test gave one (the NewCmdX(f, runF) seam), else to run.
func Run[O any](ctx context.Context, runF, run func(context.Context, O) error, opts O) error {
	if runF != nil {
		return runF(ctx, opts)
	}
	return run(ctx, opts)
}

// WithTimeout bounds ctx by a command's --timeout (d <= 0: no bound of its
// own, only ctx's).
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// Connect bounds ctx by a command's --timeout (WithTimeout) and gets its
// client within the bound; cancel ends the bound (ended already when err is
// not nil).
func Connect[C any](ctx context.Context, timeout time.Duration, client func(context.Context) (C, error)) (context.Context, C, context.CancelFunc, error) {
	ctx, cancel := WithTimeout(ctx, timeout)
	c, err := client(ctx)
	if err != nil {
		cancel()
		var none C
		return ctx, none, nil, err
	}
	return ctx, c, cancel, nil
}

// CheckOutput rejects an -o value the command does not support.
func CheckOutput(f *Factory, allowed ...string) error {
	for _, a := range allowed {
		if f.Global.Output == a {
			return nil
		}
	}
	return FlagErrorf("-o %s is not supported here; use one of: %s", f.Global.Output, strings.Join(allowed, ", "))
}

// Out returns the data stream.
func (f *Factory) Out() io.Writer { return f.IO.Out }
