package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/golden"
)

// clone deep-copies a document through its JSON form.
func clone(t *testing.T, d *Document) *Document {
	t.Helper()
	b, err := Unmarshal(mustMarshal(t, d))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func basePair(t *testing.T) (*Document, *Document) {
	t.Helper()
	a := docAt(t, fixedNow, 1, "pre")
	b := clone(t, a)
	b.ID, b.Label, b.TakenAt = "20261121T103000Z-a00002", "post", fixedNow.Add(time.Hour).Format(time.RFC3339)
	return a, b
}

func setComp(d *Document, name string, f func(*Component)) {
	c := d.Components[name]
	f(&c)
	d.Components[name] = c
}

func indexNamed(d *Document, name string) *Index {
	for i := range d.Indexer.Indices {
		if d.Indexer.Indices[i].Name == name {
			return &d.Indexer.Indices[i]
		}
	}
	panic("no index " + name)
}

type wantChange struct {
	sev      Severity
	cat, key string
}

func TestDiff(t *testing.T) {
	const today, yesterday = "siem-alerts-4.x-2026.11.21", "siem-alerts-4.x-2026.11.20"
	tests := []struct {
		name   string
		mutate func(a, b *Document)
		opts   DiffOptions
		want   []wantChange // exactly these, in this order
		crit   bool
	}{
		{name: "identical", mutate: func(a, b *Document) {}},
		{name: "index_disappeared", crit: true,
			mutate: func(a, b *Document) {
				b.Indexer.Indices = b.Indexer.Indices[:0:0]
				for _, x := range a.Indexer.Indices {
					if x.Name != yesterday {
						b.Indexer.Indices = append(b.Indexer.Indices, x)
					}
				}
			},
			want: []wantChange{{Critical, CatIndex, yesterday}}},
		{name: "index_removed_by_retention", opts: DiffOptions{IgnoreIndices: []string{"siem-alerts-4.x-2026.11.2?"}},
			mutate: func(a, b *Document) { b.Indexer.Indices = b.Indexer.Indices[:2] },
			want:   []wantChange{{Info, CatIndex, today}}},
		{name: "docs_decreased", crit: true,
			mutate: func(a, b *Document) {
				indexNamed(b, yesterday).DocsCount -= 210
				indexNamed(b, today).DocsCount += 500 // growth is not a change
				indexNamed(b, ".opendistro_security").DocsCount = 9
			},
			want: []wantChange{{Critical, CatDocs, yesterday}, {Warning, CatDocs, ".opendistro_security"}}},
		{name: "index_closed_and_red",
			crit: true,
			mutate: func(a, b *Document) {
				x := indexNamed(b, yesterday)
				x.Status, x.DocsCount = "close", 0
				indexNamed(b, today).Health = "red"
			},
			want: []wantChange{{Critical, CatIndex, today}, {Warning, CatIndex, yesterday}}},
		{name: "unit_inactive", crit: true,
			mutate: func(a, b *Document) {
				setComp(b, "dashboard", func(c *Component) { c.Unit.ActiveState, c.Unit.SubState = "failed", "failed"; c.Unit.NRestarts = 5 })
			},
			want: []wantChange{{Critical, CatUnit, "siem-dashboard.service"}, {Info, CatUnit, "siem-dashboard.service"}}},
		{name: "indexer_unreachable", crit: true,
			mutate: func(a, b *Document) {
				setComp(b, "indexer", func(c *Component) { c.Reachable, c.Error = false, "unreachable: connection refused"; c.APIVersion = "" })
				b.Indexer = Indexer{Error: "unreachable: connection refused"}
				b.Indexer.normalizeForTest()
			},
			// One critical change, not one per index.
			want: []wantChange{{Critical, CatComponent, "indexer"}, {Info, CatCluster, "indexer"}}},
		{name: "version_changed",
			mutate: func(a, b *Document) {
				setComp(b, "manager", func(c *Component) { c.PackageVersion, c.APIVersion = "4.9.1-1", "v4.9.1" })
			},
			want: []wantChange{{Warning, CatVersion, "manager/api"}, {Warning, CatVersion, "manager/package"}}},
		{name: "upgrade_as_expected",
			opts: DiffOptions{Expected: map[string]string{"indexer": "4.10.0-1", "manager": "4.10.0-1", "dashboard": "4.10.0-1"}},
			mutate: func(a, b *Document) {
				setComp(b, "indexer", func(c *Component) { c.PackageVersion, c.APIVersion = "4.10.0-1", "7.10.2-compat" })
				setComp(b, "manager", func(c *Component) { c.PackageVersion, c.APIVersion = "4.10.0-1", "v4.10.0" })
				setComp(b, "dashboard", func(c *Component) { c.PackageVersion = "4.10.0-1" })
				b.Manager.Agents.ByVersion["Wazuh v4.8.2"]--
				b.Manager.Agents.ByVersion["Wazuh v4.10.0"] = 1
			},
			want: []wantChange{{Info, CatAgents, "version/Wazuh v4.10.0"}, {Info, CatAgents, "version/Wazuh v4.8.2"},
				{Info, CatVersion, "dashboard/package"}, {Info, CatVersion, "indexer/api"}, {Info, CatVersion, "indexer/package"},
				{Info, CatVersion, "manager/api"}, {Info, CatVersion, "manager/package"}}},
		{name: "upgrade_not_reached",
			opts: DiffOptions{Expected: map[string]string{"manager": "4.10.0-1", "dashboard": "4.10.0-1"}},
			mutate: func(a, b *Document) {
				setComp(b, "manager", func(c *Component) { c.PackageVersion = "4.9.1-1" })
			},
			want: []wantChange{{Warning, CatVersion, "dashboard/package"}, {Warning, CatVersion, "manager/package"}}},
		{name: "package_removed", crit: true,
			mutate: func(a, b *Document) { setComp(b, "shipper", func(c *Component) { c.PackageVersion = "" }) },
			want:   []wantChange{{Critical, CatVersion, "shipper/package"}}},
		{name: "cluster_yellow_to_red", crit: true,
			mutate: func(a, b *Document) {
				b.Indexer.Status, b.Indexer.UnassignedShards = "red", 4
				b.Indexer.UnassignedByReason = map[string]int{"NODE_LEFT": 3, "INDEX_CREATED": 1}
			},
			want: []wantChange{{Critical, CatCluster, "status"}, {Warning, CatCluster, "unassigned_shards"}}},
		{name: "cluster_green_to_yellow",
			mutate: func(a, b *Document) { a.Indexer.Status = "green" },
			want:   []wantChange{{Warning, CatCluster, "status"}}},
		{name: "agents_lost",
			mutate: func(a, b *Document) {
				b.Manager.Agents.ByStatus["active"] = 1
				b.Manager.Agents.ByStatus["disconnected"] = 1
				b.Manager.Agents.Total = 3
				b.Manager.Agents.ByVersion["unknown"] = 0
			},
			want: []wantChange{{Warning, CatAgents, "active"}, {Warning, CatAgents, "total"}, {Info, CatAgents, "version/unknown"}}},
		{name: "templates_and_pipelines",
			mutate: func(a, b *Document) {
				b.Indexer.Templates["siem-agent"] = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
				b.Indexer.Templates["shadow"] = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
				delete(b.Indexer.Pipelines, "shipper-7.10.2-siem-alerts")
			},
			want: []wantChange{{Warning, CatPipeline, "shipper-7.10.2-siem-alerts"}, {Warning, CatTemplate, "siem-agent"}, {Info, CatTemplate, "shadow"}}},
		{name: "alerts_template_disappeared", crit: true,
			mutate: func(a, b *Document) {
				delete(b.Indexer.Templates, "siem")
				b.Indexer.AlertsTemplates = []string{}
			},
			want: []wantChange{{Critical, CatTemplate, "alerts"}, {Critical, CatTemplate, "siem"}}},
		{name: "alerts_template_replaced",
			mutate: func(a, b *Document) {
				delete(b.Indexer.Templates, "siem")
				b.Indexer.Templates["siem-v2"] = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
				b.Indexer.AlertsTemplates = []string{"siem-v2"}
			},
			want: []wantChange{{Warning, CatTemplate, "siem"}, {Info, CatTemplate, "siem-v2"}}},
		{name: "templates_not_read",
			mutate: func(a, b *Document) {
				b.Indexer.Templates = map[string]string{}
				b.Indexer.Errors["templates"] = "403 Forbidden"
			},
			want: []wantChange{{Info, CatCluster, "templates"}}},
		{name: "api_users_disappeared",
			mutate: func(a, b *Document) { b.Manager.APIUsers = []string{"siem-wui"} },
			want:   []wantChange{{Warning, CatAPIUsers, "siem"}}},
		{name: "settings_changed",
			mutate: func(a, b *Document) {
				b.Indexer.Settings["cluster.routing.allocation.disk.watermark.high"] = ""
				b.Indexer.Settings["cluster.routing.allocation.enable"] = "primaries"
				b.Indexer.SettingsHash = "sha256:other"
				b.Indexer.MaxShardsPerNode = 2000
			},
			want: []wantChange{{Warning, CatSettings, "cluster.routing.allocation.enable"},
				{Info, CatSettings, "cluster.max_shards_per_node"}, {Info, CatSettings, "cluster.routing.allocation.disk.watermark.high"}}},
		{name: "allocation_upper_case_all",
			// OpenSearch reads the value in any case: "ALL" is all, not a leftover.
			mutate: func(a, b *Document) { b.Indexer.Settings["cluster.routing.allocation.enable"] = "ALL" },
			want:   []wantChange{{Info, CatSettings, "cluster.routing.allocation.enable"}}},
		{name: "other_settings_changed",
			mutate: func(a, b *Document) { b.Indexer.SettingsHash = "sha256:other" },
			want:   []wantChange{{Info, CatSettings, "settings_hash"}}},
		{name: "alert_rate_zero",
			mutate: func(a, b *Document) { b.Alerts.Last5m = 0 },
			want:   []wantChange{{Warning, CatAlerts, "last_5m"}}},
		{name: "manager_daemon_and_health",
			mutate: func(a, b *Document) {
				b.Manager.Daemons["siem-remoted"] = "stopped"
				b.Health[2].Status, b.Health[2].Summary = "CRIT", "units not active"
				b.Health[0].Status = "OK"
			},
			want: []wantChange{{Warning, CatDaemon, "siem-remoted"}, {Warning, CatHealth, "units"}, {Info, CatHealth, "agents"}}},
		{name: "disk_crossed_threshold",
			mutate: func(a, b *Document) { b.Indexer.Disk[0].Percent = 88 },
			want:   []wantChange{{Warning, CatDisk, "node-1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := basePair(t)
			tc.mutate(a, b)
			rep := Diff(a, b, tc.opts)
			var got []string
			for _, c := range rep.Changes {
				got = append(got, fmt.Sprintf("%s %s %s", c.Severity, c.Category, c.Key))
			}
			var want []string
			for _, c := range tc.want {
				want = append(want, fmt.Sprintf("%s %s %s", c.sev, c.cat, c.key))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if rep.Critical() != tc.crit {
				t.Errorf("Critical() = %v, want %v", rep.Critical(), tc.crit)
			}
			// The text an operator reads of each report is the command's
			// (cmd/snapshot TestDiffTableEveryCase renders these goldens).
			var js bytes.Buffer
			if err := RenderDiffJSON(&js, rep); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "diff/"+tc.name+".json", js.Bytes())
			var parsed DiffJSON
			if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
				t.Fatalf("diff JSON does not parse: %v", err)
			}
			if parsed.Changes == nil || parsed.Critical != tc.crit || len(parsed.Changes) != len(rep.Changes) {
				t.Errorf("parsed JSON = %+v", parsed)
			}
		})
	}
}

// normalizeForTest gives an Indexer literal the empty collections a capture
// would have.
func (ix *Indexer) normalizeForTest() {
	d := Document{Indexer: *ix}
	d.normalize()
	*ix = d.Indexer
}

func TestDiffOrderIsStable(t *testing.T) {
	a, b := basePair(t)
	b.Indexer.Indices = nil
	b.Indexer.Status = "red"
	b.Alerts.Last5m = 0
	b.Indexer.Settings["cluster.routing.allocation.disk.watermark.low"] = "90%"
	setComp(b, "manager", func(c *Component) { c.PackageVersion = "4.9.1-1" })
	r1 := Diff(a, b, DiffOptions{})
	for i := 1; i < len(r1.Changes); i++ {
		p, c := r1.Changes[i-1], r1.Changes[i]
		if p.Severity < c.Severity || (p.Severity == c.Severity && (p.Category > c.Category || (p.Category == c.Category && p.Key > c.Key))) {
			t.Errorf("out of order at %d: %+v before %+v", i, p, c)
		}
	}
	for range 5 {
		r2 := Diff(a, b, DiffOptions{})
		if fmt.Sprint(r2.Changes) != fmt.Sprint(r1.Changes) {
			t.Fatal("diff order is not deterministic")
		}
	}
	if r1.Changes[0].Severity != Critical || r1.Changes[len(r1.Changes)-1].Severity != Info {
		t.Errorf("first %v last %v", r1.Changes[0].Severity, r1.Changes[len(r1.Changes)-1].Severity)
	}
}

func TestNormVersion(t *testing.T) {
	for in, want := range map[string]string{"Wazuh v4.10.0": "4.10.0", "v4.10.0": "4.10.0", "4.10.0-1": "4.10.0", "1:4.10.0-2": "4.10.0", "": ""} {
		if got := normVersion(in); got != want {
			t.Errorf("normVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSeverityText(t *testing.T) {
	for _, s := range []Severity{Info, Warning, Critical} {
		b, _ := s.MarshalText()
		var back Severity
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%v round trip: %v %v", s, back, err)
		}
	}
	var s Severity
	if err := s.UnmarshalText([]byte("fatal")); err == nil {
		t.Error("unknown severity accepted")
	}
}
