// Package health is `siemctl health`: every check of the catalogue, run
// concurrently under one deadline, rendered as a table, JSON, Nagios or
// Prometheus text, with Nagios exit codes.
package health

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/output"
)

// Options are the parsed inputs and dependencies of `siemctl health`.
type Options struct {
	IO *output.IOStreams
	// Stack returns what the checks talk to (the factory builds it from
	// its client set).
	Stack    func(ctx context.Context) (health.Stack, error)
	Now      func() time.Time
	Output   string
	Timeout  time.Duration
	Only     []string
	Skip     []string
	Deep     bool
	TextFile string // -o prometheus: write atomically to this file instead of stdout
	// Cluster runs only the cluster checks and prints one line per node (cluster.go).
	Cluster bool
}

// NewCmdHealth builds the command; runF replaces the behaviour in tests.
func NewCmdHealth(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Stack: cli.FromClients(f, health.Source.Health), Now: f.Now}
	cmd := &cobra.Command{
		Annotations: map[string]string{cli.OutputsAnnotation: "nagios,prometheus"},
		Use:         "health",
		Short:       "Is the SIEM working, and if not, what do I do",
		Long: `Run every health check concurrently under one deadline (--timeout, default 10s) and
print one line per check, the verdict, and the command that fixes each problem.

Checks: ` + strings.Join(checkIDs(), ", ") + `
--deep adds the slow probes: the shipper's "test output" and the end-to-end data-flow
probe (a tagged syslog event followed through manager, shipper and indexer).

Exit codes follow the Nagios convention: 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN.`,
		Example: `  siemctl health
  siemctl health --deep
  siemctl health --cluster                       # one line per node of the indexer and manager clusters
  siemctl health --check indexer.health --check indexer.allocation
  siemctl health -o json --timeout 3s
  siemctl health -o nagios                       # for check_by_ssh / NRPE
  siemctl health -o prometheus --textfile /var/lib/node_exporter/textfile_collector/siemctl_health.prom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := cli.CheckOutput(f, "table", "json", "nagios", "prometheus"); err != nil {
				return err
			}
			if opts.TextFile != "" && opts.Output != "prometheus" {
				return cli.FlagErrorf("--textfile needs -o prometheus")
			}
			if err := clusterOnly(opts); err != nil {
				return err
			}
			if _, err := health.Select(health.Catalogue(), health.Selection{Only: opts.Only, Skip: opts.Skip, Deep: opts.Deep}); err != nil {
				return &cli.FlagError{Err: err}
			}
			return cli.Run(cmd.Context(), runF, Run, opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.Only, "check", nil, "run only these check ids (repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&opts.Skip, "skip", nil, "skip these check ids")
	cmd.Flags().BoolVar(&opts.Deep, "deep", false, "add the slow probes (shipper test output, data-flow probe)")
	cmd.Flags().BoolVar(&opts.Cluster, "cluster", false, "judge only the deployment's clusters (indexer, manager): one line per node")
	cmd.Flags().StringVar(&opts.TextFile, "textfile", "", "with -o prometheus: write the metrics atomically to this file")
	_ = cmd.RegisterFlagCompletionFunc("check", completeIDs)
	_ = cmd.RegisterFlagCompletionFunc("skip", completeIDs)
	return cmd
}

func checkIDs() []string {
	var ids []string
	for _, c := range health.Catalogue() {
		ids = append(ids, c.ID)
	}
	return ids
}

func completeIDs(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return checkIDs(), cobra.ShellCompDirectiveNoFileComp
}

// Run runs the checks and renders the report; the error carries the Nagios
// exit code.
func Run(ctx context.Context, opts *Options) error {
	checks, err := health.Select(health.Catalogue(), health.Selection{Only: opts.Only, Skip: opts.Skip, Deep: opts.Deep})
	if err != nil {
		return &cli.FlagError{Err: err}
	}
	start := opts.Now()
	ctx, st, cancel, err := cli.Connect(ctx, opts.Timeout, opts.Stack)
	if err != nil {
		return err // configuration problems: exit 2 with the key named
	}
	defer cancel()
	env := &health.Env{Now: opts.Now, Stack: st, Deep: opts.Deep}
	rep := health.Run(ctx, env, checks)
	rep.Duration = opts.Now().Sub(start)
	if err := render(opts, rep); err != nil {
		return err
	}
	if code := cli.HealthExitCode(rep.Verdict); code != 0 {
		return &cli.ExitError{Code: code}
	}
	return nil
}

func render(opts *Options, rep health.Report) error {
	switch opts.Output {
	case "json":
		return renderJSON(opts.IO.Out, rep)
	case "nagios":
		return renderNagios(opts.IO.Out, rep)
	case "prometheus":
		if opts.TextFile == "" {
			return renderPrometheus(opts.IO.Out, rep)
		}
		var b strings.Builder
		if err := renderPrometheus(&b, rep); err != nil {
			return err
		}
		if err := renameio.WriteFile(opts.TextFile, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", opts.TextFile, err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "wrote %s\n", opts.TextFile)
		return nil
	default:
		if opts.Cluster {
			return renderCluster(opts.IO.Out, rep)
		}
		return renderTable(opts.IO.Out, rep, opts.IO.Colors(), opts.IO.IsStdoutTTY())
	}
}
