package agents

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
)

// ListOptions are the inputs of `agents list`.
type ListOptions struct {
	IO        *output.IOStreams
	Fleet     Fleet
	Output    string
	Timeout   time.Duration
	Status    []string
	OlderThan string
	PageSize  int
}

// NewCmdList builds `agents list`.
func NewCmdList(f *cli.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Fleet: fleetFrom(f)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List agents (streamed page by page; agent_control when the API is down)",
		Long: `List the agents through the manager API, page by page: rows are printed as pages arrive
and -o json is streamed as one array, so memory stays flat with 100,000 agents. --timeout bounds
the wait for each page, not the whole listing.

When the API is down (unreachable, timing out, daemons not ready) the agents are listed with
the agent control tool instead (id, name, registration IP and status only), and stderr says so.
--older-than needs the API.`,
		Example: `  siemctl agents list
  siemctl agents list --status disconnected --older-than 7d
  siemctl agents list --status active,pending -o json | jq length`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := fleet.ValidateStatuses(opts.Status); err != nil {
				return usage(err)
			}
			if cmd.Flags().Changed("older-than") {
				if err := fleet.ValidateOlderThan(opts.OlderThan); err != nil {
					return usage(err)
				}
			}
			if opts.PageSize < 1 || opts.PageSize > 100000 {
				return cli.FlagErrorf("--page-size %d: use 1 to 100000", opts.PageSize)
			}
			return cli.Run(cmd.Context(), runF, runList, opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.Status, "status", nil, "only agents with this status: active, disconnected, never_connected, pending (repeatable or comma-separated)")
	cmd.Flags().StringVar(&opts.OlderThan, "older-than", "", "only agents whose last keep-alive (registration for never_connected) is older than this: 30m, 12h, 7d")
	cmd.Flags().IntVar(&opts.PageSize, "page-size", fleet.DefaultPageSize, "agents per API request (1-100000)")
	_ = cmd.RegisterFlagCompletionFunc("status", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return fleet.Statuses, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// rowJSON is the stable JSON form of a listed agent.
type rowJSON struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	IP            string   `json:"ip"`
	Status        string   `json:"status"`
	Version       string   `json:"version"`
	LastKeepAlive *string  `json:"last_keep_alive"`
	DateAdd       *string  `json:"date_add"`
	Group         []string `json:"group"`
	OS            string   `json:"os"`
	NodeName      string   `json:"node_name"`
}

func timePtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func runList(ctx context.Context, opts *ListOptions) error {
	api, tools, err := opts.Fleet.open(ctx)
	if err != nil {
		return err
	}

	bw := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	var emit func(r *fleet.Row) error
	var finish func(n int) error
	if opts.Output == "json" {
		emit, finish = jsonStream(bw)
	} else {
		emit, finish = tableStream(bw, opts.IO)
	}
	lst, err := fleet.List(ctx, api, tools, fleet.ListQuery{Status: opts.Status, OlderThan: opts.OlderThan, PageSize: opts.PageSize,
		PageTimeout: opts.Timeout, ToolTimeout: opts.Timeout}, emit)
	if lst.Source == fleet.SourceTool {
		fmt.Fprintf(opts.IO.ErrOut, "warning: the manager API is down (%v); listed with agent_control: id, name, registration IP and status only\n", lst.APIErr)
	}
	if err != nil {
		// Close what was written so far (a JSON array stays valid) and
		// report the failure.
		_ = finish(lst.Count)
		_ = bw.Flush()
		return usage(err)
	}
	if err := finish(lst.Count); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if opts.Output != "json" && lst.Count == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no agents match")
	}
	return nil
}

// jsonStream writes one JSON array, element by element.
func jsonStream(w io.Writer) (func(r *fleet.Row) error, func(n int) error) {
	first := true
	var buf []byte
	emit := func(r *fleet.Row) error {
		j := rowJSON{ID: r.ID, Name: r.Name, IP: r.IP, Status: r.Status, Version: r.Version, LastKeepAlive: timePtr(r.LastKeepAlive),
			DateAdd: timePtr(r.DateAdd), Group: r.Group, OS: r.OS, NodeName: r.NodeName}
		var err error
		buf, err = json.MarshalIndent(j, "  ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n  "
		if first {
			sep, first = "[\n  ", false
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		_, err = w.Write(buf)
		return err
	}
	finish := func(int) error {
		if first {
			_, err := io.WriteString(w, "[]\n")
			return err
		}
		_, err := io.WriteString(w, "\n]\n")
		return err
	}
	return emit, finish
}

var listHeader = []string{"id", "name", "ip", "status", "version", "last keep-alive", "os"}

// tableStream prints rows as they come: tab-separated off a terminal; on a
// terminal the first rows fix the column widths (later, longer cells widen
// only their own row).
func tableStream(w io.Writer, ios *output.IOStreams) (func(r *fleet.Row) error, func(n int) error) {
	tty := ios.IsStdoutTTY()
	p := ios.Colors()
	if !tty {
		header := false
		emit := func(r *fleet.Row) error {
			if !header {
				header = true
				if _, err := io.WriteString(w, strings.Join(listHeader, "\t")+"\n"); err != nil {
					return err
				}
			}
			_, err := io.WriteString(w, strings.Join([]string{r.ID, r.Name, output.Dash(r.IP), r.Status, output.Dash(r.Version), timeStr(r.LastKeepAlive, false), output.Dash(r.OS)}, "\t")+"\n")
			return err
		}
		return emit, func(int) error { return nil }
	}
	const sample = 500
	var pending [][]string
	var widths []int
	flushPending := func() error {
		widths = make([]int, len(listHeader))
		all := append([][]string{upper(listHeader)}, pending...)
		for _, r := range all {
			for i, c := range r {
				widths[i] = max(widths[i], len(c))
			}
		}
		for _, r := range all {
			if err := writeAligned(w, r, widths, p); err != nil {
				return err
			}
		}
		pending = nil
		return nil
	}
	emit := func(r *fleet.Row) error {
		cells := []string{r.ID, r.Name, output.Dash(r.IP), r.Status, output.Dash(r.Version), timeStr(r.LastKeepAlive, true), output.Dash(r.OS)}
		if widths == nil {
			pending = append(pending, cells)
			if len(pending) >= sample {
				return flushPending()
			}
			return nil
		}
		return writeAligned(w, cells, widths, p)
	}
	finish := func(n int) error {
		if widths == nil && len(pending) > 0 {
			return flushPending()
		}
		return nil
	}
	return emit, finish
}

func upper(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}

const statusCol = 3

func writeAligned(w io.Writer, cells []string, widths []int, p *output.Palette) error {
	var b strings.Builder
	for i, c := range cells {
		pad := widths[i] - len(c) + 2
		if i == statusCol {
			c = statusColor(p, c)
		}
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", max(pad, 1)))
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
