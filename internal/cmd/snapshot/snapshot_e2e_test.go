//go:build e2e

package snapshot_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

type captured struct {
	ID         string `json:"id"`
	Path       string `json:"path"`
	DurationMS int64  `json:"duration_ms"`
}

func capture(t *testing.T, l *e2e.Lab, label string) (captured, *snapshot.Document, []byte, e2e.Result) {
	t.Helper()
	r := l.Siemctl("snapshot", "capture", "--label", label, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("capture %s: exit %d\n%s\n%s", label, r.Code, r.Stdout, r.Stderr)
	}
	var c captured
	if err := json.Unmarshal([]byte(r.Stdout), &c); err != nil {
		t.Fatalf("capture output: %v\n%s", err, r.Stdout)
	}
	raw, err := os.ReadFile(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := snapshot.Unmarshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c, d, raw, r
}

// shape is the part of a lab snapshot that does not change between runs.
func shape(d *snapshot.Document) []byte {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(d.Components)) {
		c := d.Components[name]
		fmt.Fprintf(&b, "component %s unit=%s %s/%s package=%s reachable=%v\n", name, c.Unit.Name, c.Unit.ActiveState, c.Unit.SubState, c.PackageVersion, c.Reachable)
	}
	ix := d.Indexer
	fmt.Fprintf(&b, "indexer reachable=%v nodes=%d max_shards=%d allocation=%q\n", ix.Reachable, ix.NumberOfNodes, ix.MaxShardsPerNode, ix.Settings["cluster.routing.allocation.enable"])
	fmt.Fprintf(&b, "templates %s\nalerts_templates %s\npipelines %s\n", strings.Join(slices.Sorted(maps.Keys(ix.Templates)), ","),
		strings.Join(ix.AlertsTemplates, ","), strings.Join(slices.Sorted(maps.Keys(ix.Pipelines)), ","))
	m := d.Manager
	fmt.Fprintf(&b, "manager reachable=%v version=%s api_users=%s\n", m.Reachable, m.Version, strings.Join(m.APIUsers, ","))
	for _, n := range slices.Sorted(maps.Keys(m.Daemons)) {
		fmt.Fprintf(&b, "daemon %s %s\n", n, m.Daemons[n])
	}
	fmt.Fprintf(&b, "alerts reachable=%v\n", d.Alerts.Reachable)
	for _, h := range d.Health { // statuses are asserted in the test
		fmt.Fprintf(&b, "health %s\n", h.ID)
	}
	for _, e := range d.Errors {
		fmt.Fprintf(&b, "error %s\n", e.Part)
	}
	return []byte(b.String())
}

// TestE2ESnapshotLab: a capture of the lab records every component up, the
// indices with their documents and no secret; stopping the dashboard turns
// up as a critical diff (exit 3); after heal nothing critical is left.
func TestE2ESnapshotLab(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 400})

	// siemlab up returns with the first alert searchable.
	if r := l.Siemctl("health", "--check", "alerts.flow", "--check", "units", "--check", "manager.api", "-o", "json"); r.Code != 0 {
		t.Fatalf("health right after siemlab up: exit %d: %s", r.Code, r.Stdout)
	}

	c, d, raw, r := capture(t, l, "pre")
	t.Logf("capture against the lab: %s wall (siemctl process), %d ms inside", r.Took.Round(time.Millisecond), c.DurationMS)
	for name, comp := range d.Components {
		if !comp.Reachable || comp.Unit.ActiveState != "active" || comp.PackageVersion == "" {
			t.Errorf("component %s: %+v", name, comp)
		}
	}
	// The lab has a disconnected agent by design: the agents check warns.
	if len(d.Errors) != 0 || (d.Summary.Status != "OK" && d.Summary.Status != "WARN") {
		t.Errorf("errors %+v, health %s: %+v", d.Errors, d.Summary.Status, d.Health)
	}
	for _, h := range d.Health {
		if h.Status != "OK" && h.ID != "agents" {
			t.Errorf("health %s %s: %s", h.ID, h.Status, h.Summary)
		}
	}
	var alertsDocs int64
	for _, ix := range d.Indexer.Indices {
		if strings.HasPrefix(ix.Name, l.Profile.AlertsPrefix()) {
			alertsDocs += ix.DocsCount
		}
	}
	if alertsDocs == 0 || d.Summary.Docs == 0 || d.Summary.StoreBytes == 0 {
		t.Errorf("no alerts documents recorded: %+v", d.Indexer.Indices)
	}
	if d.Manager.Agents.Total == 0 || len(d.Manager.Daemons) == 0 || d.Indexer.SettingsHash == "" || len(d.Indexer.Disk) == 0 {
		t.Errorf("manager/indexer sections incomplete: agents %+v daemons %d settings %q disk %+v",
			d.Manager.Agents, len(d.Manager.Daemons), d.Indexer.SettingsHash, d.Indexer.Disk)
	}
	gname := "e2e_capture_lab_shape"
	if l.Profile.Name != lab.DefaultProfile {
		gname += "_" + l.Profile.Name
	}
	golden.Assert(t, gname, shape(d))

	// No secret of the lab, in any usual encoding, anywhere in the file.
	secrets, _ := filepath.Glob(filepath.Join(l.Dir, "secrets", "*"))
	if len(secrets) == 0 {
		t.Fatal("the lab has no secrets to look for")
	}
	for _, p := range secrets {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			continue
		}
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(string(raw), form) || strings.Contains(r.Stdout+r.Stderr, form) {
				t.Errorf("secret of %s found in the snapshot or the output", filepath.Base(p))
			}
		}
	}

	// Capture time on the lab (a few runs).
	var took []time.Duration
	for i := range 3 {
		c, _, _, r := capture(t, l, fmt.Sprintf("timing-%d", i))
		took = append(took, time.Duration(c.DurationMS)*time.Millisecond)
		t.Logf("capture %d: %s wall, %d ms inside", i, r.Took.Round(time.Millisecond), c.DurationMS)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("capture against the lab: median %s, max %s (inside siemctl)", took[1], took[2])

	// Stop the dashboard: the diff shows its unit no longer active, critical.
	l.MustSiemlab("fault", "unit-stopped:"+l.Profile.DashboardUnit())
	_, post, _, _ := capture(t, l, "post")
	if post.Components["dashboard"].Reachable {
		t.Errorf("dashboard still reachable after the fault: %+v", post.Components["dashboard"])
	}
	dr := l.Siemctl("snapshot", "diff", "label:pre", "label:post", "-o", "json")
	if dr.Code != 3 {
		t.Errorf("diff exit %d, want 3\n%s\n%s", dr.Code, dr.Stdout, dr.Stderr)
	}
	var rep snapshot.DiffJSON
	if err := json.Unmarshal([]byte(dr.Stdout), &rep); err != nil {
		t.Fatalf("diff output: %v\n%s", err, dr.Stdout)
	}
	found := false
	for _, ch := range rep.Changes {
		if ch.Severity == snapshot.Critical && ch.Category == snapshot.CatUnit && ch.Key == l.Profile.DashboardUnit() {
			found = true
		}
	}
	if !found || !rep.Critical || rep.Changes[0].Severity != snapshot.Critical {
		t.Errorf("no critical unit change for the dashboard: %+v", rep.Changes)
	}
	table := l.Siemctl("snapshot", "diff", "label:pre", "label:post")
	t.Logf("diff pre → post (exit %d):\n%s", table.Code, table.Stdout)

	// Heal: the dashboard is back and nothing critical is left.
	l.MustSiemlab("heal", "unit-stopped:"+l.Profile.DashboardUnit())
	e2e.Eventually(t, 90*time.Second, 2*time.Second, func() error {
		r := l.Siemctl("health", "--check", "dashboard", "--check", "units", "-o", "json")
		if r.Code != 0 {
			return fmt.Errorf("health exit %d", r.Code)
		}
		return nil
	})
	capture(t, l, "healed")
	hr := l.Siemctl("snapshot", "diff", "label:pre", "label:healed")
	if hr.Code != 0 {
		t.Errorf("diff pre → healed: exit %d\n%s", hr.Code, hr.Stdout)
	}
	if lr := l.Siemctl("snapshot", "list"); lr.Code != 0 || strings.Count(lr.Stdout, "\n") != 7 {
		t.Errorf("list: exit %d\n%s", lr.Code, lr.Stdout)
	}
}
