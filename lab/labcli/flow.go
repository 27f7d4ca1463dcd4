package labcli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/lab"
)

// flowCmd: siemlab flow send|check, a steady stream of tagged events and its no-alert-lost check.
func flowCmd(stdout, stderr io.Writer, open opener, openDist func(string) (*lab.Distributed, error)) *cobra.Command {
	var dir, tag string
	var rate float64
	var first int
	var dur, wait time.Duration
	var asJSON bool
	flow := &cobra.Command{
		Use:   "flow send|check|probe --dir DIR",
		Short: "Send tagged events at a steady rate; check every one the manager wrote is indexed exactly once; probe searches",
		Long: `flow send sends the data-flow probe's sshd line over syslog to the lab's manager (in a distributed
lab to each manager in turn), one event
per 1/--rate seconds, each with the tag and a sequence number, until interrupted (SIGTERM, Ctrl-C)
or --for has passed, records what it sent in DIR/flows/TAG.json, and prints how many it sent.

flow check compares the manager's alerts file with the indexer: every event of the tag the manager
wrote must be searchable exactly once. It waits up to --wait for the shipper to drain (nothing lost
and two checks 5 s apart agree), prints the counts (sent, lost, lost in transit, duplicates) and
exits 1 when an event the manager wrote is lost or indexed more than once. Lost in transit are the
events sent over UDP syslog that no manager received (it was restarting: UDP is not retransmitted)
and no index holds; they are counted and shown, and do not change the exit code.`,
		Example: "  siemlab flow send --dir /tmp/lab --tag run1 --rate 5 &\n  siemlab flow check --dir /tmp/lab --tag run1 --wait 3m",
	}
	send := &cobra.Command{
		Use:  "send --dir DIR --tag TAG [--rate 5] [--for 0] [--from 1]",
		Args: cobra.NoArgs,
		RunE: flowLab(open, openDist, &dir, func(cmd *cobra.Command, l flower) error {
			ctx := cmd.Context()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			next, err := l.SendFlow(ctx, tag, rate, first)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			fmt.Fprintf(stdout, "flow %s: sent %d events (%d … %d)\n", tag, next-first, first, next-1)
			return nil
		}),
	}
	send.Flags().Float64Var(&rate, "rate", 5, "events per second")
	send.Flags().DurationVar(&dur, "for", 0, "stop after this long (0: until interrupted)")
	send.Flags().IntVar(&first, "from", 1, "first sequence number")
	check := &cobra.Command{
		Use:  "check --dir DIR --tag TAG [--wait 3m] [--json]",
		Args: cobra.NoArgs,
		RunE: flowLab(open, openDist, &dir, func(cmd *cobra.Command, l flower) error {
			rep, err := l.WaitFlow(cmd.Context(), tag, wait, 5*time.Second)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(stdout, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(stdout, rep)
			}
			if rep.Lost > 0 || rep.Duplicates > 0 {
				if !asJSON {
					fmt.Fprintf(stderr, "siemlab: lost for example %v\n", rep.LostSample)
				}
				return &exitError{code: 1}
			}
			return nil
		}),
	}
	check.Flags().DurationVar(&wait, "wait", 3*time.Minute, "how long to wait for the shipper to drain")
	check.Flags().BoolVar(&asJSON, "json", false, "JSON report")
	for _, c := range []*cobra.Command{send, check} {
		c.Flags().StringVar(&dir, "dir", "", "lab directory")
		c.Flags().StringVar(&tag, "tag", "", "the flow's tag (lowercase letters and digits)")
		_ = c.MarkFlagRequired("tag")
	}
	flow.AddCommand(send, check, probeCmd(stdout, open, openDist))
	return flow
}

// flower is a single or a distributed lab, for the flow commands.
type flower interface {
	SendFlow(ctx context.Context, tag string, rate float64, first int) (int, error)
	WaitFlow(ctx context.Context, tag string, timeout, interval time.Duration) (lab.FlowReport, error)
	SearchProbe(every time.Duration) (*lab.SearchProbe, error)
}

// probeCmd: siemlab flow probe, the search-availability probe (lab.SearchProbe) until interrupted.
func probeCmd(stdout io.Writer, open opener, openDist func(string) (*lab.Distributed, error)) *cobra.Command {
	var dir string
	var every, dur time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "probe --dir DIR [--every 1s] [--for 0] [--json]",
		Short: "Search the alerts indices every --every through any indexer node; report the share answered with every shard",
		Long: `flow probe searches wazuh-alerts-* (size 0) once every --every, sending each try to the indexer
nodes in turn (a node that does not answer passes the try to the next: any node may answer), until
interrupted (SIGTERM, Ctrl-C) or --for has passed. It then prints the tries, those answered, those
answered with every shard (_shards.failed 0), that share, and the longest time without an answer
with every shard.`,
		Example: "  siemlab flow probe --dir /tmp/lab --json > probe.json &",
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if every <= 0 {
				return fmt.Errorf("%w: --every %s: want a positive interval", errUsage, every)
			}
			return nil
		},
		RunE: flowLab(open, openDist, &dir, func(cmd *cobra.Command, l flower) error {
			p, err := l.SearchProbe(every)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			res, err := p.Run(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(stdout, res)
			}
			fmt.Fprintln(stdout, res)
			return nil
		}),
	}
	c.Flags().StringVar(&dir, "dir", "", "lab directory")
	c.Flags().DurationVar(&every, "every", time.Second, "interval between searches")
	c.Flags().DurationVar(&dur, "for", 0, "stop after this long (0: until interrupted)")
	c.Flags().BoolVar(&asJSON, "json", false, "JSON report")
	return c
}

// flowLab opens the lab at *dir, single or distributed, and calls f with it.
func flowLab(open opener, openDist func(string) (*lab.Distributed, error), dir *string, f func(*cobra.Command, flower) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if lab.IsDistributed(*dir) {
			d, err := openDist(*dir)
			if err != nil {
				return err
			}
			return f(cmd, d)
		}
		l, err := open(*dir)
		if err != nil {
			return err
		}
		return f(cmd, l)
	}
}
