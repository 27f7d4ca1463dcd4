package alerts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/output"
)

// ProbeOptions are the inputs of `alerts probe`.
type ProbeOptions struct {
	IO      *output.IOStreams
	Config  func() (*config.Config, error)
	Indexer func(ctx context.Context) (*indexer.Client, error)
	Output  string
	// Tune replaces the probe's clock, waits and dialer in tests.
	Tune func(*probe.Options)

	Wait     time.Duration
	Interval time.Duration
	// Change is the change policy: the probe writes an event (an alert in
	// the manager and the indexer), so it takes the host lock (exit 6
	// while an upgrade runs) and --dry-run prints what it would send.
	Change cli.Change
}

// NewCmdProbe builds `alerts probe`.
func NewCmdProbe(f *cli.Factory, runF func(context.Context, *ProbeOptions) error) *cobra.Command {
	opts := &ProbeOptions{IO: f.IO, Config: f.Config, Indexer: f.Indexer}
	cmd := f.ChangeCommand(&cobra.Command{
		Use:   "probe",
		Short: "Send a tagged event and follow it through manager, shipper and indexer",
		Long: `The end-to-end data-flow probe. It sends one syslog line to manager.syslog (RFC 3164,
tag sshd: "Failed password for invalid user siemctl-probe-<nonce> from 192.0.2.N port P
ssh2", which the stock ruleset alerts on as rule 5710, level 5), then watches the
manager's alerts file ({install_dir}/logs/alerts/alerts.json, when readable here) and
polls the indexer for the nonce. Once the alert is written, each poll that does not find it
refreshes the day's alerts index (POST <prefix><yyyy.MM.dd>/_refresh), so the answer does not
wait for the index's refresh_interval (5s in Wazuh's template); a user without the refresh
privilege waits for it instead. It prints the latency of each hop from the send and,
when the event does not arrive within --wait, the component that broke: manager,
shipper or indexer.

The event is a change (an alert in the manager and the indexer): the probe takes the host
lock (exit 6 while an upgrade runs) and --dry-run prints where it would send it and what it
would read, sending nothing. Running the command is the consent: it asks no confirmation.

Exit codes: 0 the event arrived, 3 a hop broke (named), 2 bad configuration, 6 host lock held.`,
		Example: `  siemctl alerts probe
  siemctl alerts probe --wait 2m -o json
  siemctl alerts probe --dry-run`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Change = f.Global.Output, change
		if opts.Wait <= 0 || opts.Interval <= 0 {
			return cli.FlagErrorf("--wait and --interval must be positive, e.g. --wait 60s --interval 500ms")
		}
		return cli.Run(cmd.Context(), runF, RunProbe, opts)
	})
	cli.DurationVar(cmd.Flags(), &opts.Wait, "wait", 60*time.Second, "how long to wait for the event to become searchable")
	cli.DurationVar(cmd.Flags(), &opts.Interval, "interval", 500*time.Millisecond, "poll interval")
	return cmd
}

type hopJSON struct {
	Name      string  `json:"name"`
	State     string  `json:"state"`
	LatencyMS float64 `json:"latency_ms"`
	Detail    string  `json:"detail,omitempty"`
}

type probeJSON struct {
	OK       bool      `json:"ok"`
	Nonce    string    `json:"nonce"`
	SentAt   time.Time `json:"sent_at"`
	Line     string    `json:"line"`
	RuleID   string    `json:"rule_id,omitempty"`
	Level    int       `json:"rule_level,omitempty"`
	Index    string    `json:"index,omitempty"`
	Hops     []hopJSON `json:"hops"`
	BrokenAt string    `json:"broken_at,omitempty"`
	Detail   string    `json:"detail,omitempty"`
}

// RunProbe runs the data-flow probe and renders its report.
func RunProbe(ctx context.Context, opts *ProbeOptions) error {
	cfg, ix, err := Common{Config: opts.Config, Indexer: opts.Indexer}.open(ctx)
	if err != nil {
		return err
	}
	po := probe.OptionsFor(cfg, ix)
	po.Timeout, po.Interval = opts.Wait, opts.Interval
	target := probe.Target{Syslog: po.Syslog, Queue: po.Queue}
	if err := target.Validate(); err != nil {
		return &cli.FlagError{Err: err}
	}
	if opts.Tune != nil {
		opts.Tune(&po)
	}
	// The probe's event is its purpose: running the command is the
	// consent (no question), the lock and --dry-run still apply.
	change := opts.Change
	change.Yes = true
	release, proceed, err := change.Begin(ctx, "", cli.Calls(probeCalls(po, target)...))
	if !proceed {
		return err
	}
	defer release()
	if opts.IO.IsStderrTTY() {
		fmt.Fprintf(opts.IO.ErrOut, "sending the probe to %s and waiting up to %s…\n", target, opts.Wait)
	}
	rep, err := probe.Run(ctx, po)
	if err != nil {
		if ctx.Err() != nil {
			return &cli.ExitError{Code: cli.ExitInterrupted}
		}
		return err
	}
	j := probeJSON{OK: rep.OK, Nonce: rep.Nonce, SentAt: rep.SentAt, Line: rep.Line, RuleID: rep.RuleID, Level: rep.Level, Index: rep.Index,
		Hops: []hopJSON{}, BrokenAt: rep.BrokenAt, Detail: rep.Detail}
	for _, h := range rep.Hops {
		j.Hops = append(j.Hops, hopJSON{Name: h.Name, State: h.State, LatencyMS: float64(h.Latency.Microseconds()) / 1000, Detail: h.Detail})
	}
	if opts.Output == "json" {
		if err := output.JSON(opts.IO.Out, j); err != nil {
			return err
		}
	} else {
		p := opts.IO.Colors()
		t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "hop", "state", "latency", "detail")
		for _, h := range rep.Hops {
			lat := "-"
			if h.State != probe.StateSkipped {
				lat = h.Latency.Round(time.Millisecond).String()
			}
			t.Row(h.Name, p.Outcome(h.State == probe.StateOK, h.State == probe.StateFailed), lat, output.Dash(h.Detail))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if !rep.OK {
		fmt.Fprintf(opts.IO.ErrOut, "probe %s broken at %s: %s\n", rep.Nonce, rep.BrokenAt, rep.Detail)
		return &cli.ExitError{Code: cli.ExitNoGo}
	}
	total := rep.Hops[len(rep.Hops)-1].Latency.Round(time.Millisecond)
	fmt.Fprintf(opts.IO.ErrOut, "probe %s searchable after %s\n", rep.Nonce, total)
	return nil
}

// probeCalls is what the probe would do, for --dry-run.
func probeCalls(po probe.Options, target probe.Target) []string {
	calls := []string{"send one syslog line (sshd Failed password for invalid user siemctl-probe-<nonce>, rule 5710) to " + target.String()}
	if po.AlertsFile != "" {
		calls = append(calls, "read "+po.AlertsFile+" for the nonce (when readable here)")
	}
	return append(calls, fmt.Sprintf("GET /%s/_search for the nonce every %s for up to %s; once the alert is written, POST /%s/_refresh before each search", po.IndexPattern, po.Interval, po.Timeout, strings.TrimSuffix(po.IndexPattern, "*")+"<yyyy.MM.dd>"))
}
