package upgrade

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/process"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// Evidence is everything the page and the bundle show about one run.
type Evidence struct {
	Report    RunReport         `json:"report"`
	Host      string            `json:"host"`
	Command   string            `json:"command"`
	Generated time.Time         `json:"generated"`
	Siemctl   string            `json:"siemctl"`
	Versions  []VersionRow      `json:"versions"`
	Gates     []GateRow         `json:"gates"`
	Timeline  []TimelineBar     `json:"timeline"`
	Snapshots map[string]string `json:"snapshots"` // label → id
	Journal   JournalFacts      `json:"journal"`
	// Agents is the agent upgrade run that followed this run (siemctl agents upgrade), wave by wave.
	Agents  *AgentsEvidence   `json:"agents,omitempty"`
	docs    map[string][]byte // snapshot id → document (bundle)
	journal []byte            // the raw journal (bundle)
	backups []BackupEvidence  // manifest (bundle)
}

// AgentsEvidence is an agent upgrade run as the page and the bundle show it.
type AgentsEvidence struct {
	RunID    string              `json:"run_id"`
	Target   string              `json:"target"`
	State    string              `json:"state"`
	Reason   string              `json:"reason,omitempty"`
	Started  time.Time           `json:"started"`
	Ended    time.Time           `json:"ended,omitzero"`
	Counts   map[string]int      `json:"counts"`
	Requests int                 `json:"requests"`
	Report   fleet.UpgradeReport `json:"report"`
	// PendingShown are the first of Report.Pending the page lists; PendingMore how many it leaves out.
	PendingShown []fleet.PendingAgent `json:"-"`
	PendingMore  int                  `json:"-"`
	Error        string               `json:"error,omitempty"`
}

// agentsEvidence is the latest agent upgrade run started since the stack run did (nil: none).
func agentsEvidence(stateDir string, since time.Time) *AgentsEvidence {
	r, err := fleet.UpgradeRunSince(stateDir, since)
	if err != nil {
		return &AgentsEvidence{Error: err.Error()}
	}
	if r == nil {
		return nil
	}
	a := &AgentsEvidence{RunID: r.ID, Target: r.Target, State: r.State, Reason: r.Reason, Started: r.Started, Ended: r.Ended,
		Counts: r.Counts(), Requests: r.Requests, Report: r.Report()}
	const shown = 100
	a.PendingShown = a.Report.Pending[:min(shown, len(a.Report.Pending))]
	a.PendingMore = len(a.Report.Pending) - len(a.PendingShown)
	return a
}

// VersionRow is one component's versions around the run: After is Target when the run succeeded,
// Before when it was rolled back, and "" while the run has not ended either way.
type VersionRow struct {
	Component string `json:"component"`
	Before    string `json:"before"`
	Target    string `json:"target"`
	After     string `json:"after"`
}

// GateRow is a gate's verdict and evidence.
type GateRow struct {
	Step     string   `json:"step"`
	Kind     string   `json:"kind"`
	Verdict  string   `json:"verdict"` // go | no-go | skipped | …
	Evidence []string `json:"evidence"`
}

// TimelineBar is one step (or undo) on the timeline, in seconds from the run's start.
type TimelineBar struct {
	Label  string  `json:"label"`
	Start  float64 `json:"start_s"`
	Length float64 `json:"duration_s"`
	Own    bool    `json:"siemctl_own_work"`
	Status string  `json:"status"`
}

// JournalFacts identify the journal the page was made from.
type JournalFacts struct {
	Events int    `json:"events"`
	SHA256 string `json:"sha256"`
}

// BackupEvidence is one backup the run made, with what proves it.
type BackupEvidence struct {
	What   string `json:"what"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	Files  int    `json:"files,omitempty"`
}

// WriteNew writes a report file atomically; it never writes through a link at that name.
func WriteNew(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link: give another file name", path)
	}
	if err := renameio.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// GatherEvidence reads the run's state, journal and snapshots.
func GatherEvidence(stateDir, run string, now time.Time) (*Evidence, error) {
	ri, err := engine.Status(stateDir, run)
	if err != nil {
		return nil, err
	}
	evs, _, err := engine.ReadJournal(stateDir, ri.ID)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(engine.JournalPath(stateDir, ri.ID))
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	sum := sha256.Sum256(raw)
	rd, _ := DecodeRunData(ri.Data)
	ev := &Evidence{Report: NewRunReport(ri, evs), Generated: now.UTC(), Siemctl: buildinfo.Get().Version,
		Snapshots: rd.Snaps, Journal: JournalFacts{Events: len(evs), SHA256: hex.EncodeToString(sum[:])},
		docs: map[string][]byte{}, journal: raw, Gates: []GateRow{}, Versions: []VersionRow{}}
	for _, e := range evs {
		if e.Type == engine.EvRunStart && ev.Host == "" {
			ev.Host, ev.Command = e.Host, e.Command
		}
	}
	for _, c := range config.Components {
		if rd.Previous[c] != "" || rd.Targets[c] != "" {
			row := VersionRow{Component: c, Before: rd.Previous[c], Target: rd.Targets[c]}
			switch ri.Status {
			case engine.StatusSucceeded:
				row.After = row.Target
			case engine.StatusRolledBack:
				row.After = row.Before
			}
			ev.Versions = append(ev.Versions, row)
		}
	}
	for _, s := range ri.Steps {
		if !strings.HasPrefix(s.Kind, "gate.") {
			continue
		}
		g := GateRow{Step: s.ID, Kind: s.Kind, Verdict: gateVerdict(s), Evidence: []string{}}
		for _, line := range []string{s.Reason, s.Error} {
			if line != "" {
				g.Evidence = append(g.Evidence, line)
			}
		}
		if s.Outcome != nil {
			if s.Outcome.Message != "" {
				g.Evidence = append(g.Evidence, s.Outcome.Message)
			}
			keys := make([]string, 0, len(s.Outcome.Data))
			for k := range s.Outcome.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				b, _ := json.Marshal(s.Outcome.Data[k])
				g.Evidence = append(g.Evidence, k+": "+string(b))
			}
		}
		ev.Gates = append(ev.Gates, g)
	}
	ev.Timeline = timeline(evs)
	ev.Agents = agentsEvidence(stateDir, ri.Started)
	store := &snapshot.Store{Dir: filepath.Join(stateDir, "snapshots")}
	for _, id := range rd.Snaps {
		doc, err := store.Get(id)
		if err != nil {
			continue // pruned since: the page says which ids it names
		}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err == nil {
			ev.docs[id] = b
		}
	}
	b := rd.Backups
	if b.Configs != "" {
		ev.backups = append(ev.backups, BackupEvidence{What: "configs archive", Path: b.Configs, SHA256: b.ConfigsSHA256})
	}
	if b.IndexerSecurity != "" {
		ev.backups = append(ev.backups, BackupEvidence{What: "indexer security config", Path: b.IndexerSecurity})
	}
	if b.IndexerData != "" {
		ev.backups = append(ev.backups, BackupEvidence{What: "indexer data copy", Path: b.IndexerData, Bytes: b.IndexerDataSize, Files: b.IndexerDataN})
	}
	if s := b.IndexerSnapshot; s != nil {
		ev.backups = append(ev.backups, BackupEvidence{What: fmt.Sprintf("indexer snapshot %s/%s (%d indices, incremental)", s.Repository, s.Name, len(s.Indices)), Path: s.Location, Bytes: s.IncrementalBytes})
	}
	return ev, nil
}

func gateVerdict(s engine.StepInfo) string {
	switch {
	case s.NoGo:
		return "no-go"
	case s.Status == "ok":
		return "go"
	default:
		return s.Status
	}
}

// timeline places each step and undo at its start, from the journal's start/end events.
func timeline(evs []engine.Event) []TimelineBar {
	var t0 time.Time
	starts := map[string]time.Time{}
	bars := []TimelineBar{}
	for _, e := range evs {
		switch e.Type {
		case engine.EvRunStart:
			if t0.IsZero() {
				t0 = e.Time
			}
		case engine.EvStepStart:
			starts["step "+e.Step] = e.Time
		case engine.EvUndoStart:
			starts["undo "+e.Step] = e.Time
		case engine.EvStepOK, engine.EvStepFail, engine.EvUndoOK, engine.EvUndoFail:
			key, label := "step "+e.Step, e.Step
			if e.Type == engine.EvUndoOK || e.Type == engine.EvUndoFail {
				key, label = "undo "+e.Step, "undo "+e.Step
			}
			st, ok := starts[key]
			if !ok || t0.IsZero() {
				continue
			}
			status := "ok"
			if e.Type == engine.EvStepFail || e.Type == engine.EvUndoFail {
				status = "failed"
			}
			bars = append(bars, TimelineBar{Label: label, Start: st.Sub(t0).Seconds(), Length: e.Duration.D().Seconds(),
				Own: OwnWork(e.Kind), Status: status})
		}
	}
	return bars
}

//go:embed report.html.tmpl
var reportTemplate string

var evidenceTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"secs": func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"pct": func(part, whole float64) string {
		if whole <= 0 {
			return "0"
		}
		return fmt.Sprintf("%.1f", 100*part/whole)
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"svg": timelineSVG,
	"ids": func(ids []string) string {
		if len(ids) <= 20 {
			return strings.Join(ids, ", ")
		}
		return fmt.Sprintf("%s, %s … %s (%d agents)", ids[0], ids[1], ids[len(ids)-1], len(ids))
	},
}).Parse(reportTemplate))

// RenderHTML is the offline page of ev (one file, no external resource).
func RenderHTML(ev *Evidence) ([]byte, error) {
	var b bytes.Buffer
	if err := evidenceTmpl.Execute(&b, ev); err != nil {
		return nil, fmt.Errorf("render report: %w", err)
	}
	return b.Bytes(), nil
}

// timelineSVG draws the bars as an inline SVG (no script, no external resource).
func timelineSVG(bars []TimelineBar) template.HTML {
	const labelW, chartW, rowH = 260.0, 640.0, 18.0
	end := 1.0
	for _, b := range bars {
		end = math.Max(end, b.Start+b.Length)
	}
	scale := chartW / end
	var s strings.Builder
	h := rowH*float64(len(bars)) + 30
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" role="img" aria-label="step timeline">`, labelW+chartW+60, h)
	for i, b := range bars {
		y := float64(i) * rowH
		class := "wait"
		if b.Own {
			class = "own"
		}
		if b.Status == "failed" {
			class += " failed"
		}
		fmt.Fprintf(&s, `<text x="%.0f" y="%.1f" class="lbl">%s</text>`, labelW-6, y+13, template.HTMLEscapeString(b.Label))
		fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.2f" height="%.0f" class="%s" data-step="%s" data-seconds="%.3f"><title>%s: %.2fs</title></rect>`,
			labelW+b.Start*scale, y+3, math.Max(b.Length*scale, 1), rowH-6, class, template.HTMLEscapeString(b.Label), b.Length,
			template.HTMLEscapeString(b.Label), b.Length)
	}
	axisY := rowH*float64(len(bars)) + 14
	step := niceStep(end / 6)
	for t := 0.0; t <= end+1e-9; t += step {
		fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" class="tick">%gs</text>`, labelW+t*scale, axisY, math.Round(t*10)/10)
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}

// niceStep rounds a tick interval to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

type bundleFile struct {
	name string
	data []byte
}

// bundleFiles are the bundle's members, SHA256SUMS over them, and its signature when asked.
func bundleFiles(ev *Evidence, page []byte, signKey string) ([]bundleFile, error) {
	runJSON, err := json.MarshalIndent(ev.Report, "", "  ")
	if err != nil {
		return nil, err
	}
	backups, err := json.MarshalIndent(struct {
		Backups []BackupEvidence `json:"backups"`
	}{append([]BackupEvidence{}, ev.backups...)}, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []bundleFile{{"report.html", page}, {"run.json", append(runJSON, '\n')}, {"journal.jsonl", ev.journal}, {"backups.json", append(backups, '\n')}}
	if ev.Agents != nil {
		agents, err := json.MarshalIndent(ev.Agents, "", "  ")
		if err != nil {
			return nil, err
		}
		files = append(files, bundleFile{"agents.json", append(agents, '\n')})
	}
	ids := make([]string, 0, len(ev.docs))
	for id := range ev.docs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		files = append(files, bundleFile{"snapshots/" + id + ".json", ev.docs[id]})
	}
	var sums strings.Builder
	for _, f := range files {
		h := sha256.Sum256(f.data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), f.name)
	}
	files = append(files, bundleFile{"SHA256SUMS", []byte(sums.String())})
	if signKey != "" {
		sig, err := sshSign(signKey, []byte(sums.String()))
		if err != nil {
			return nil, err
		}
		files = append(files, bundleFile{"SHA256SUMS.sig", sig})
	}
	return files, nil
}

// sshSign signs data with ssh-keygen -Y sign in a private temp dir.
func sshSign(key string, data []byte) ([]byte, error) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		return nil, errors.New("--sign-key needs ssh-keygen (package openssh-client)")
	}
	dir, err := os.MkdirTemp("", "siemctl-sign-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	msg := filepath.Join(dir, "SHA256SUMS")
	if err := os.WriteFile(msg, data, 0o600); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, errOut, code, err := process.ExecRunner{}.Run(ctx, nil, "ssh-keygen", "-Y", "sign", "-f", key, "-n", "siemctl-report", msg)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh-keygen -Y sign with %s: %v: %s (an unencrypted key or a running ssh-agent is needed off a terminal)", key, err, strings.TrimSpace(string(out)+"\n"+string(errOut)))
	}
	sig, err := os.ReadFile(msg + ".sig")
	if err != nil {
		return nil, fmt.Errorf("ssh-keygen wrote no signature: %w", err)
	}
	return sig, nil
}

// tarGz packs files (mode 0644, owner root, mtime t) in order.
func tarGz(files []bundleFile, t time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: t, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, bytes.NewReader(f.data)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Bundle is the evidence bundle of ev (a tar.gz of the page, the raw evidence and SHA256SUMS,
// signed with signKey when given) and the number of files in it.
func Bundle(ev *Evidence, page []byte, signKey string) ([]byte, int, error) {
	files, err := bundleFiles(ev, page, signKey)
	if err != nil {
		return nil, 0, err
	}
	data, err := tarGz(files, ev.Generated)
	return data, len(files), err
}
