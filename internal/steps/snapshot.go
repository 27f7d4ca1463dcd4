package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/snapshot"
)

type snapshotParams struct {
	Label string `yaml:"label"`
}

func (p *snapshotParams) Describe(pc engine.PlanContext) []string {
	return []string{
		"GET /_cluster/health, /_cluster/settings, /_template, /_ingest/pipeline, /_cat/indices, /_cat/shards, /_cat/allocation; manager GET /, /manager/info, /manager/status, /agents; dashboard GET /; systemd unit states; installed package versions",
		"write state_dir/snapshots/<id>.json labelled " + p.Label,
	}
}

func (p *snapshotParams) Validate() error { return validLabel("label", p.Label) }

type diffParams struct {
	Against string `yaml:"against"`
}

func (p *diffParams) Describe(pc engine.PlanContext) []string {
	return []string{"compare the run's latest snapshot with the one labelled " + p.Against + " (no index and no documents lost)"}
}

func (p *diffParams) Validate() error { return validLabel("against", p.Against) }

// validLabel checks the snapshot label of parameter name (required).
func validLabel(name, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required", name)
	}
	return snapshot.ValidateLabel(v)
}

func snapshotKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*snapshotParams]{
			Name: "snapshot.capture", Estimate: fixed[*snapshotParams](3 * time.Second), ReadOnly: true,
			New:  func() *snapshotParams { return &snapshotParams{} },
			Run:  runSnapshotCapture,
			Skip: skipSnapshotCapture,
		}),
		engine.Define(Spec[*diffParams]{
			Name: "snapshot.diff", Estimate: fixed[*diffParams](time.Second), ReadOnly: true,
			New: func() *diffParams { return &diffParams{} },
			Run: runSnapshotDiff,
		}),
	}
}

func snapshotsOf(env Env) (map[string]string, error) {
	m := map[string]string{}
	_, err := env.Get(rundata.KeySnapshots, &m)
	return m, err
}

// skipSnapshotCapture: a resumed run keeps the snapshot it already took.
func skipSnapshotCapture(_ context.Context, env Env, p *snapshotParams) (string, bool, error) {
	d := env.Deps()
	m, err := snapshotsOf(env)
	if err != nil {
		return "", false, err
	}
	id := m[p.Label]
	if id == "" || d.Snapshots == nil {
		return "", false, nil
	}
	if _, err := d.Snapshots.Resolve(id); err != nil {
		return "", false, nil
	}
	return "snapshot " + id + " (" + p.Label + ") already taken by this run", true, nil
}

func runSnapshotCapture(ctx context.Context, env Env, p *snapshotParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Snapshot == nil || d.Snapshots == nil {
		return engine.Outcome{}, errors.New("snapshots are not configured")
	}
	env.Waiting("capturing the stack's state")
	doc, err := d.Snapshot(ctx, p.Label)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("capture: %w", err)
	}
	path, err := d.Snapshots.Save(doc)
	if err != nil {
		return engine.Outcome{}, err
	}
	m, err := snapshotsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	m[p.Label] = doc.ID
	if err := env.Set(rundata.KeySnapshots, m); err != nil {
		return engine.Outcome{}, err
	}
	if err := env.Set(rundata.KeyLastSnapshot, doc.ID); err != nil {
		return engine.Outcome{}, err
	}
	s := doc.Summary
	msg := fmt.Sprintf("snapshot %s: %d indices, %d documents, cluster %s, health %s", doc.ID, s.Indices, s.Docs, output.Dash(s.ClusterStatus), output.Dash(s.Status))
	return engine.Outcome{Message: msg, Data: map[string]any{"id": doc.ID, "path": path, "docs": s.Docs, "indices": s.Indices}}, nil
}

func runSnapshotDiff(_ context.Context, env Env, p *diffParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Snapshots == nil {
		return engine.Outcome{}, errors.New("snapshots are not configured")
	}
	m, err := snapshotsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	fromRef := m[p.Against]
	if fromRef == "" {
		fromRef = "label:" + p.Against
	}
	var toRef string
	if _, err := env.Get(rundata.KeyLastSnapshot, &toRef); err != nil {
		return engine.Outcome{}, err
	}
	if toRef == "" {
		return engine.Outcome{}, errors.New("this run captured no snapshot to compare")
	}
	from, err := d.Snapshots.Get(fromRef)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("snapshot %s: %w", fromRef, err)
	}
	to, err := d.Snapshots.Get(toRef)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("snapshot %s: %w", toRef, err)
	}
	expect, err := versions(env, rundata.KeyExpectVersions)
	if err != nil {
		return engine.Outcome{}, err
	}
	opts := snapshot.DiffOptions{Expected: map[string]string{}}
	for comp, v := range expect {
		opts.Expected[comp] = v
	}
	if d.Config != nil {
		opts.DiskWarnPercent = float64(d.Config.Thresholds.DiskWarnPercent)
	}
	rep := snapshot.Diff(from, to, opts)
	sum := DiffSummary{From: from.ID, To: to.ID, Worst: rep.Worst().String(), Counts: rep.Counts(), Changes: []snapshot.Change{},
		DocsFrom: from.Summary.Docs, DocsTo: to.Summary.Docs}
	for _, c := range rep.Changes {
		if c.Severity >= snapshot.Warning {
			sum.Changes = append(sum.Changes, c)
		}
	}
	if err := env.Set(rundata.KeyDiff, sum); err != nil {
		return engine.Outcome{}, err
	}
	msg := fmt.Sprintf("%s → %s: documents %d → %d; %d critical, %d warning, %d info", from.ID, to.ID, from.Summary.Docs, to.Summary.Docs,
		sum.Counts["critical"], sum.Counts["warning"], sum.Counts["info"])
	if rep.Critical() {
		var crit []string
		for _, c := range rep.Changes {
			if c.Severity == snapshot.Critical {
				crit = append(crit, c.Message)
			}
		}
		return engine.Outcome{}, engine.NoGo("%s; critical: %s", msg, strings.Join(crit, "; "))
	}
	return engine.Outcome{Message: msg}, nil
}
