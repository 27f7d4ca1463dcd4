package snapshot

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/siemctl/siemctl/internal/output"
)

func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(s)
}

// DiffJSON is the JSON form of a report.
type DiffJSON struct {
	From     Ref            `json:"from"`
	To       Ref            `json:"to"`
	Critical bool           `json:"critical"`
	Worst    Severity       `json:"worst"`
	Counts   map[string]int `json:"counts"`
	Changes  []Change       `json:"changes"`
}

// RenderDiffJSON writes a report as indented JSON ([] never null).
func RenderDiffJSON(w io.Writer, r Report) error {
	ch := r.Changes
	if ch == nil {
		ch = []Change{}
	}
	return writeJSON(w, DiffJSON{From: r.From, To: r.To, Critical: r.Critical(), Worst: r.Worst(), Counts: r.Counts(), Changes: ch})
}

// RenderListJSON writes the entries as a JSON array ([] when empty).
func RenderListJSON(w io.Writer, entries []Entry) error {
	if entries == nil {
		entries = []Entry{}
	}
	return writeJSON(w, entries)
}

// RenderDocumentText writes a human summary of one snapshot (`show`):
// aligned on a TTY, tab-separated otherwise; the full document is
// RenderDocumentJSON.
func RenderDocumentText(w io.Writer, d *Document, tty bool) error {
	tw := output.NewTable(w, tty)
	fmt.Fprintf(tw, "snapshot\t%s\n", d.ID)
	fmt.Fprintf(tw, "label\t%s\n", output.Dash(d.Label))
	fmt.Fprintf(tw, "taken at\t%s\n", d.TakenAt)
	fmt.Fprintf(tw, "host\t%s\n", output.Dash(d.Host))
	fmt.Fprintf(tw, "siemctl\t%s\n", output.Dash(d.SiemctlVersion))
	fmt.Fprintf(tw, "health\t%s\n", d.Summary.Status)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "COMPONENT\tUNIT\tSTATE\tPACKAGE\tAPI\tREACHABLE")
	for _, name := range sortedKeys(d.Components) {
		c := d.Components[name]
		state := output.Dash(c.Unit.ActiveState)
		if c.Unit.SubState != "" {
			state += "/" + c.Unit.SubState
		}
		reach := "yes"
		if !c.Reachable {
			reach = "no: " + oneLine(c.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, output.Dash(c.Unit.Name), state, output.Dash(c.PackageVersion), output.Dash(c.APIVersion), reach)
	}
	fmt.Fprintln(tw)
	ix := d.Indexer
	if ix.Reachable {
		fmt.Fprintf(tw, "cluster\t%s %s, %d node(s), %d active / %d unassigned shards\n", output.Dash(ix.ClusterName), output.Dash(ix.Status), ix.NumberOfNodes, ix.ActiveShards, ix.UnassignedShards)
		fmt.Fprintf(tw, "allocation\t%s\n", orQuote(ix.Settings["cluster.routing.allocation.enable"]))
		fmt.Fprintf(tw, "indices\t%d, %d docs, %s\n", d.Summary.Indices, d.Summary.Docs, output.Bytes(d.Summary.StoreBytes))
		fmt.Fprintf(tw, "templates\t%d (alerts: %s)\n", len(ix.Templates), output.Dash(strings.Join(ix.AlertsTemplates, ",")))
		fmt.Fprintf(tw, "pipelines\t%d\n", len(ix.Pipelines))
		for _, dk := range ix.Disk {
			fmt.Fprintf(tw, "disk %s\t%s of %s\n", dk.Node, pct(dk.Percent), output.Bytes(dk.TotalBytes))
		}
	} else {
		fmt.Fprintf(tw, "indexer\t%s\n", oneLine(ix.Error))
	}
	m := d.Manager
	if m.Reachable {
		fmt.Fprintf(tw, "manager\t%s, %d daemon(s), API users: %s\n", output.Dash(m.Version), len(m.Daemons), output.Dash(strings.Join(m.APIUsers, ",")))
		parts := make([]string, 0, len(m.Agents.ByStatus))
		for _, st := range sortedKeys(m.Agents.ByStatus) {
			parts = append(parts, fmt.Sprintf("%s %d", st, m.Agents.ByStatus[st]))
		}
		fmt.Fprintf(tw, "agents\t%d (%s)\n", m.Agents.Total, output.Dash(strings.Join(parts, ", ")))
	} else {
		fmt.Fprintf(tw, "manager\t%s\n", oneLine(m.Error))
	}
	if d.Alerts.Reachable {
		fmt.Fprintf(tw, "alerts\t%d in the last 5 min, newest %s\n", d.Alerts.Last5m, output.Dash(d.Alerts.Newest))
	} else {
		fmt.Fprintf(tw, "alerts\t%s\n", oneLine(d.Alerts.Error))
	}
	for _, e := range d.Errors {
		fmt.Fprintf(tw, "error %s\t%s\n", e.Part, oneLine(e.Error))
	}
	return tw.Render()
}

// RenderDocumentJSON writes the whole document as indented JSON.
func RenderDocumentJSON(w io.Writer, d *Document) error {
	d.normalize()
	b, err := Marshal(d)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	return nil
}
