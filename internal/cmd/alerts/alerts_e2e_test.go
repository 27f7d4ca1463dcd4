//go:build e2e

package alerts_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/lab/e2e"
)

type e2eProbe struct {
	OK       bool   `json:"ok"`
	Nonce    string `json:"nonce"`
	BrokenAt string `json:"broken_at"`
	RuleID   string `json:"rule_id"`
	Hops     []struct {
		Name      string  `json:"name"`
		State     string  `json:"state"`
		LatencyMS float64 `json:"latency_ms"`
	} `json:"hops"`
}

func labStack(t *testing.T, l *e2e.Lab) *factory.Clients {
	t.Helper()
	cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(l.Dir, "siemctl.yaml"), ExplicitPath: true, LookupEnv: os.LookupEnv})
	if err != nil {
		t.Fatal(err)
	}
	st := factory.NewClients(context.Background(), cfg, factory.ClientOptions{LookupEnv: os.LookupEnv, Timeout: 30 * time.Second})
	t.Cleanup(func() { st.Close() })
	if _, err := st.NeedIndexer(); err != nil {
		t.Fatal(err)
	}
	return st
}

func liveIndices(t *testing.T, st *factory.Clients, prefix string) []string {
	t.Helper()
	ix, err := st.NeedIndexer()
	if err != nil {
		t.Fatal(err)
	}
	list, err := ix.CatIndices(context.Background(), prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ix := range list {
		names = append(names, ix.Name)
	}
	sort.Strings(names)
	return names
}

// TestE2EAlertsLab: probe, search, count, tail and cleanup against a real lab,
// then the probe names the shipper when the shipper is stalled.
func TestE2EAlertsLab(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 300})
	ap := l.Profile.AlertsPrefix()
	st := labStack(t, l)

	// 1. The probe arrives, with a latency per hop.
	var pr e2eProbe
	r := l.Siemctl("alerts", "probe", "-o", "json", "--wait", "90s")
	if err := json.Unmarshal([]byte(r.Stdout), &pr); err != nil || r.Code != 0 || !pr.OK || len(pr.Hops) != 2 {
		t.Fatalf("probe: exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	for _, h := range pr.Hops {
		if h.State != "ok" || h.LatencyMS <= 0 {
			t.Errorf("hop %+v", h)
		}
	}
	if pr.RuleID != "5710" {
		t.Errorf("probe rule %q, want 5710", pr.RuleID)
	}
	t.Logf("probe: %s", strings.TrimSpace(r.Stderr))
	r = l.Siemctl("alerts", "probe")
	if r.Code != 0 || !strings.Contains(r.Stdout, "manager") || !strings.Contains(r.Stdout, "indexer") {
		t.Errorf("probe table: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	// 2. Search finds the probe's alert by its nonce; quotes, brackets and
	// slashes travel safely; a broken query is a usage error.
	r = l.Siemctl("alerts", "search", "-q", `data.srcuser:"siemctl-probe-`+pr.Nonce+`"`, "--since", "1h", "-o", "json")
	var sr struct {
		Total  int `json:"total"`
		Alerts []struct {
			RuleID string `json:"rule_id"`
			Level  int    `json:"rule_level"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sr); err != nil || r.Code != 0 || sr.Total != 1 || sr.Alerts[0].RuleID != "5710" || sr.Alerts[0].Level != 5 {
		t.Errorf("search nonce: exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	r = l.Siemctl("alerts", "search", "-q", `rule.id:[5700 TO 5720] AND full_log:"invalid user" AND NOT location:"/no/such/file"`, "--since", "1h")
	if r.Code != 0 || !strings.Contains(r.Stdout, "5710") {
		t.Errorf("search brackets: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, bad := range []string{`rule.id:[5710`, `full_log:"unbalanced`, `/unterminated`} {
		r = l.Siemctl("alerts", "search", "-q", bad)
		if r.Code != 2 || !strings.Contains(r.Stderr, "the indexer rejected the query") {
			t.Errorf("search %q: exit %d\n%s", bad, r.Code, r.Stderr)
		}
	}
	r = l.Siemctl("alerts", "search", "--since", "15")
	if r.Code != 2 || !strings.Contains(r.Stderr, `invalid duration "15"`) {
		t.Errorf("bad --since: exit %d %s", r.Code, r.Stderr)
	}

	// 3. Count and tail.
	r = l.Siemctl("alerts", "count", "--since", "1h", "-o", "json")
	var cr struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &cr); err != nil || r.Code != 0 || cr.Count < 2 {
		t.Errorf("count: exit %d %v %s %s", r.Code, err, r.Stdout, r.Stderr)
	}
	r = l.Siemctl("alerts", "tail", "--once", "-n", "5")
	if r.Code != 0 || len(strings.Split(strings.TrimSpace(r.Stdout), "\n")) < 3 || !strings.Contains(r.Stdout, "5710") {
		t.Errorf("tail --once: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = l.Siemctl("alerts", "tail", "--once", "-n", "3", "-o", "json")
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var a struct {
			Index string `json:"index"`
			DocID string `json:"doc_id"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Errorf("tail json line %q: %v", line, err)
		}
		if seen[a.Index+a.DocID] {
			t.Errorf("tail printed %s twice", a.DocID)
		}
		seen[a.Index+a.DocID] = true
	}

	// 4. Cleanup: old, unparsable and future-dated indices.
	labIx, err := st.NeedIndexer()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"2020.01.01", "2020.01.02", "2020.01.03-restored", "2099.01.01"} {
		if err := labIx.CreateIndex(context.Background(), ap+n, []byte(`{"settings":{"number_of_replicas":0}}`)); err != nil {
			t.Fatal(err)
		}
	}
	before := liveIndices(t, st, ap)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	r = l.Siemctl("alerts", "cleanup", "--older-than", "90d", "--plan-file", planFile, "-o", "json")
	var plan struct {
		Indices []struct {
			Name string `json:"name"`
		} `json:"indices"`
		Skipped []struct {
			Name, Reason string
		} `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil || r.Code != 0 {
		t.Fatalf("plan: exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	var planned []string
	for _, ix := range plan.Indices {
		planned = append(planned, ix.Name)
	}
	if strings.Join(planned, ",") != ap+"2020.01.01,"+ap+"2020.01.02" {
		t.Errorf("planned %v", planned)
	}
	r = l.Siemctl("alerts", "cleanup", "--older-than", "90x")
	if r.Code != 2 || !strings.Contains(r.Stderr, "invalid duration") {
		t.Errorf("bad age: exit %d %s", r.Code, r.Stderr)
	}
	r = l.Siemctl("alerts", "cleanup", "--apply", planFile)
	if r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Errorf("apply without --yes: exit %d %s", r.Code, r.Stderr)
	}
	b, _ := os.ReadFile(planFile)
	tampered := filepath.Join(t.TempDir(), "tampered.json")
	os.WriteFile(tampered, []byte(strings.Replace(string(b), ap+"2020.01.02", ap+"2099.01.01", 1)), 0o600)
	r = l.Siemctl("alerts", "cleanup", "--apply", tampered, "--yes")
	if r.Code != 3 || !strings.Contains(r.Stderr, "checksum mismatch") {
		t.Errorf("tampered: exit %d %s", r.Code, r.Stderr)
	}
	if got := liveIndices(t, st, ap); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("indices changed before the apply: %v → %v", before, got)
	}
	r = l.Siemctl("alerts", "cleanup", "--apply", planFile, "--yes")
	if r.Code != 0 || !strings.Contains(r.Stderr, "deleted 2 of 2") {
		t.Errorf("apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	after := liveIndices(t, st, ap)
	var want []string
	for _, n := range before {
		if n != ap+"2020.01.01" && n != ap+"2020.01.02" {
			want = append(want, n)
		}
	}
	if strings.Join(after, ",") != strings.Join(want, ",") {
		t.Errorf("after apply %v, want %v", after, want)
	}
	r = l.Siemctl("alerts", "cleanup", "--apply", planFile, "--yes")
	if r.Code != 0 || !strings.Contains(r.Stderr, "nothing to delete") {
		t.Errorf("re-apply: exit %d %s", r.Code, r.Stderr)
	}
	r = l.Siemctl("alerts", "cleanup", "--disk-above", "99", "-o", "json", "--plan-file", filepath.Join(t.TempDir(), "d.json"))
	if r.Code != 0 || !strings.Contains(r.Stdout, `"disk"`) {
		t.Errorf("disk-above plan: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
	}

	// 5. Shipper stalled: the probe names the shipper hop.
	l.MustSiemlab("fault", "shipper-stalled")
	r = l.Siemctl("alerts", "probe", "-o", "json", "--wait", "20s")
	pr = e2eProbe{}
	if err := json.Unmarshal([]byte(r.Stdout), &pr); err != nil || r.Code != 3 || pr.OK || pr.BrokenAt != "shipper" {
		t.Errorf("probe with the shipper stalled: exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if len(pr.Hops) == 2 && (pr.Hops[0].State != "ok" || pr.Hops[1].State != "failed") {
		t.Errorf("hops %+v", pr.Hops)
	}
	if !strings.Contains(r.Stderr, "broken at shipper") {
		t.Errorf("stderr %q", r.Stderr)
	}
	l.MustSiemlab("heal", "shipper-stalled")
	r = l.Siemctl("alerts", "probe", "--wait", "90s")
	if r.Code != 0 {
		t.Errorf("probe after heal: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
