package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade"
)

import ()

// ReportOptions are the inputs of `upgrade report`.
type ReportOptions struct {
	runs.Common
	Run     string
	HTML    string // file for the page; "-" stdout
	Bundle  string // FILE.tar.gz evidence bundle
	SignKey string // ssh private key for ssh-keygen -Y sign (optional)
}

// NewCmdReport builds `upgrade report`.
func NewCmdReport(f *cli.Factory, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{Common: common(f)}
	cmd := &cobra.Command{
		ValidArgsFunction: runs.CompleteRuns(f),
		Use:               "report [RUN] (--html FILE | --bundle FILE.tar.gz)",
		Short:             "Write a run's report for the change ticket: an offline HTML page and an evidence bundle",
		Long: `Write the latest (or the named) upgrade or rollback run as evidence for a change ticket.

--html FILE writes one self-contained HTML page (no external resource: it opens offline):
versions before and after, each gate's verdict and evidence, a timeline of the steps
(waiting on the components vs siemctl's own work), the pre/post snapshot diff, the backups
with their checksums, the run's status, and the agent upgrade run that followed it (siemctl
agents upgrade: each wave with its agents, times, failed agents' causes and gate verdict).

--bundle FILE.tar.gz writes that page with the raw evidence: the journal, the run report as
JSON, the pre and post snapshots, the backup manifest, the agent upgrade run (agents.json), and
SHA256SUMS over them all. With
--sign-key KEY the manifest is signed with ssh-keygen -Y sign (namespace siemctl-report);
check it with:

  ssh-keygen -Y verify -f allowed_signers -I OPERATOR -n siemctl-report -s SHA256SUMS.sig < SHA256SUMS`,
		Example: `  siemctl upgrade report --html upgrade.html
  siemctl upgrade report 20261123T101500Z-a1b2c3 --bundle CHG-4711.tar.gz --sign-key ~/.ssh/id_ed25519`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Fill(f)
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if opts.HTML == "" && opts.Bundle == "" {
				return &cli.FlagError{Err: errors.New("say where to write: --html FILE (or - for stdout) and/or --bundle FILE.tar.gz")}
			}
			if opts.Bundle != "" && !strings.HasSuffix(opts.Bundle, ".tar.gz") && !strings.HasSuffix(opts.Bundle, ".tgz") {
				return &cli.FlagError{Err: fmt.Errorf("--bundle %s: want a .tar.gz or .tgz file name", opts.Bundle)}
			}
			if opts.SignKey != "" && opts.Bundle == "" {
				return &cli.FlagError{Err: errors.New("--sign-key signs the bundle's manifest: give --bundle too")}
			}
			return cli.Run(cmd.Context(), runF, runReport, opts)
		},
	}
	cmd.Flags().StringVar(&opts.HTML, "html", "", "write the HTML page to FILE (- for stdout)")
	cmd.Flags().StringVar(&opts.Bundle, "bundle", "", "write the evidence bundle to FILE.tar.gz")
	cmd.Flags().StringVar(&opts.SignKey, "sign-key", "", "sign the bundle's SHA256SUMS with this ssh private key (ssh-keygen -Y sign)")
	return cmd
}

func runReport(_ context.Context, opts *ReportOptions) error {
	deps, err := opts.Deps(context.Background())
	if err != nil {
		return err
	}
	ev, err := upgrade.GatherEvidence(deps.Config.StateDir, opts.Run, opts.Now())
	if err != nil {
		return err
	}
	page, err := upgrade.RenderHTML(ev)
	if err != nil {
		return err
	}
	if opts.HTML == "-" {
		if _, err := opts.IO.Out.Write(page); err != nil {
			return err
		}
	} else if opts.HTML != "" {
		if err := upgrade.WriteNew(opts.HTML, page); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "wrote %s (run %s)\n", opts.HTML, ev.Report.RunID)
	}
	if opts.Bundle != "" {
		data, n, err := upgrade.Bundle(ev, page, opts.SignKey)
		if err != nil {
			return err
		}
		if err := upgrade.WriteNew(opts.Bundle, data); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "wrote %s (%d files, run %s)\n", opts.Bundle, n, ev.Report.RunID)
	}
	return nil
}
