package steps_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/runbooks"
)

const (
	initialPrimaries     = "cluster.routing.allocation.node_initial_primaries_recoveries"
	concurrentRecoveries = "cluster.routing.allocation.node_concurrent_recoveries"
)

// clusterSettings answers GET and PUT _cluster/settings as OpenSearch does with flat_settings:
// values as strings, null removing a key, an acknowledged PUT echoing what changed.
func clusterSettings(srv *indexertest.Server, persistent map[string]string) (get func() map[string]string, puts func() []string) {
	var mu sync.Mutex
	var bodies []string
	srv.Set("GET /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"persistent": persistent, "transient": map[string]string{}})
	}})
	srv.Set("PUT /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		last, _ := srv.Last("PUT /_cluster/settings") // the fake has read the body
		b := last.Body
		bodies = append(bodies, string(b))
		var u struct{ Persistent map[string]any }
		if err := json.Unmarshal(b, &u); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for k, v := range u.Persistent {
			if v == nil {
				delete(persistent, k)
			} else {
				persistent[k] = strings.Trim(string(must(json.Marshal(v))), `"`)
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"acknowledged": true, "persistent": u.Persistent, "transient": map[string]any{}})
	}})
	return func() map[string]string {
			mu.Lock()
			defer mu.Unlock()
			return persistent
		}, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return bodies
		}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The raise records the value before (unset, or the site's own) once, even when the step runs
// again (resume); the restore puts exactly that back (null when it was unset) and does nothing
// when the run raised nothing.
func TestPrimariesRecoveriesRaiseAndRestore(t *testing.T) {
	for _, tc := range []struct {
		name string
		was  map[string]string
		want string // after the restore; "" = unset
	}{
		{"unset", map[string]string{"cluster.routing.allocation.enable": "primaries"}, ""},
		{"site value", map[string]string{initialPrimaries: "8"}, "8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := indexertest.NewServer(t, indexertest.Healthy())
			d := indexerDeps(t, srv)
			get, puts := clusterSettings(srv, tc.was)
			e := newEnv(d, nil)
			for range 2 { // the second run is a resumed step: the record stays the value before
				out, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"value": 32})
				if err != nil {
					t.Fatal(err)
				}
				if get()[initialPrimaries] != "32" || !strings.Contains(out.Message, "→ 32") {
					t.Fatalf("after the raise: %v, %q", get(), out.Message)
				}
			}
			var rec map[string]struct{ Was, Raised string }
			if ok, err := e.Get(rundata.KeyPrimariesRecoveries, &rec); !ok || err != nil || rec[initialPrimaries].Was != tc.want || rec[initialPrimaries].Raised != "32" {
				t.Fatalf("journaled %+v (%v %v), want was %q", rec, ok, err, tc.want)
			}
			// node_concurrent_recoveries is recorded too (a rollback may raise it) but not raised here
			if c, ok := rec[concurrentRecoveries]; !ok || c.Raised != "" {
				t.Fatalf("journaled %+v, want %s recorded, not raised", rec, concurrentRecoveries)
			}
			if _, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"restore": true}); err != nil {
				t.Fatal(err)
			}
			got, set := get()[initialPrimaries]
			if got != tc.want || set != (tc.want != "") {
				t.Fatalf("after the restore %s = %q (set %v), want %q", initialPrimaries, got, set, tc.want)
			}
			if p := puts(); !strings.Contains(p[0], `"persistent":{"`+initialPrimaries+`":"32"}`) ||
				tc.want == "" && !strings.Contains(p[len(p)-1], `"`+initialPrimaries+`":null`) {
				t.Errorf("PUT bodies %q", p)
			}
			// the finally-step after the restore: nothing left to change
			n := len(puts())
			if out, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"restore": true}); err != nil || len(puts()) != n || !strings.Contains(out.Message, "already") {
				t.Errorf("second restore: %q %v, %d PUTs", out.Message, err, len(puts())-n)
			}
		})
	}
}

func TestPrimariesRecoveriesRestoreWithoutRaise(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	d := indexerDeps(t, srv)
	_, puts := clusterSettings(srv, map[string]string{initialPrimaries: "16"})
	out, err := run(t, d, newEnv(d, nil), "indexer.primaries_recoveries", map[string]any{"restore": true})
	if err != nil || !strings.Contains(out.Message, "SKIPPED") || len(puts()) != 0 {
		t.Fatalf("%q %v, PUTs %q", out.Message, err, puts())
	}
}

// A node that does not keep the value (another process resets it) fails the step.
func TestPrimariesRecoveriesReadBack(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	d := indexerDeps(t, srv)
	srv.Set("GET /_cluster/settings", indexertest.Route{File: "settings-empty.json"})
	srv.Set("PUT /_cluster/settings", indexertest.Route{File: "settings-put-ack.json"})
	_, err := run(t, d, newEnv(d, nil), "indexer.primaries_recoveries", map[string]any{"value": 32})
	if err == nil || !strings.Contains(err.Error(), "reads back unset (default 4)") {
		t.Fatalf("got %v", err)
	}
}

// healthBody is GET _cluster/health as OpenSearch 2.11.1 answers it for a single node holding
// primaries primary shards with one replica each (never assigned on one node).
func healthBody(status string, primaries int) []byte {
	return fmt.Appendf(nil, `{"cluster_name":"siem-lab","status":%q,"timed_out":false,"number_of_nodes":1,"number_of_data_nodes":1,"discovered_master":true,"discovered_cluster_manager":true,"active_primary_shards":%d,"active_shards":%d,"relocating_shards":0,"initializing_shards":0,"unassigned_shards":%d,"delayed_unassigned_shards":0,"number_of_pending_tasks":0,"number_of_in_flight_fetch":0,"task_max_waiting_in_queue_millis":0,"active_shards_percent_as_number":50.0}`,
		status, primaries, primaries, primaries)
}

// The raise counts the primaries once (a resumed step keeps the count before the stop) and a
// rollback raises node_concurrent_recoveries with the initial primaries; the restore puts back
// both exactly as they were before the upgrade, also from the record's first form.
func TestRecoveriesRecordAndRestoreBoth(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	d := indexerDeps(t, srv)
	get, puts := clusterSettings(srv, map[string]string{concurrentRecoveries: "6"})
	srv.Set("GET /_cluster/health", indexertest.Route{Body: healthBody("yellow", 1001)})
	e := newEnv(d, nil)
	out, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"value": 32})
	if err != nil || !strings.HasPrefix(out.Message, "1001 primary shards; node_initial_primaries_recoveries unset (default 4) → 32") {
		t.Fatalf("%q %v", out.Message, err)
	}
	srv.Set("GET /_cluster/health", indexertest.Route{Body: healthBody("yellow", 3)}) // the node after its start
	if out, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"value": 32, "concurrent": 16}); err != nil || !strings.HasPrefix(out.Message, "1001 primary shards") ||
		!strings.Contains(out.Message, "node_concurrent_recoveries 6 → 16") {
		t.Fatalf("second raise: %q %v", out.Message, err)
	}
	if p := puts(); !strings.Contains(p[len(p)-1], `"persistent":{"`+concurrentRecoveries+`":"16","`+initialPrimaries+`":"32"}`) {
		t.Errorf("PUT %s", p[len(p)-1])
	}
	if _, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"restore": true}); err != nil {
		t.Fatal(err)
	}
	if g := get(); g[concurrentRecoveries] != "6" || g[initialPrimaries] != "" {
		t.Fatalf("after the restore: %v", g)
	}
	if p := puts(); !strings.Contains(p[len(p)-1], `"persistent":{"`+concurrentRecoveries+`":"6","`+initialPrimaries+`":null}`) {
		t.Errorf("restore PUT %s", p[len(p)-1])
	}

	// A journal of an earlier version: {"was","raised"} of the initial primaries alone.
	get, _ = clusterSettings(srv, map[string]string{initialPrimaries: "32"})
	old := newEnv(d, map[string]any{rundata.KeyPrimariesRecoveries: json.RawMessage(`{"was":"8","raised":"32"}`)})
	if out, err := run(t, d, old, "indexer.primaries_recoveries", map[string]any{"restore": true}); err != nil || get()[initialPrimaries] != "8" {
		t.Fatalf("restore from the first form: %q %v, now %v", out.Message, err, get())
	}
}

// Below min_primaries the settings stay as they are (no PUT, the restore has nothing to put
// back) and the count is still recorded for the deadlines; at or above it the raise happens.
func TestPrimariesRecoveriesMinPrimaries(t *testing.T) {
	for _, tc := range []struct {
		primaries int
		raised    bool
	}{{52, false}, {199, false}, {200, true}, {1001, true}} {
		t.Run(fmt.Sprint(tc.primaries), func(t *testing.T) {
			srv := indexertest.NewServer(t, indexertest.Healthy())
			d := indexerDeps(t, srv)
			get, puts := clusterSettings(srv, map[string]string{})
			srv.Set("GET /_cluster/health", indexertest.Route{Body: healthBody("green", tc.primaries)})
			e := newEnv(d, nil)
			out, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"value": 32, "min_primaries": 200})
			if err != nil {
				t.Fatal(err)
			}
			if raised := get()[initialPrimaries] == "32"; raised != tc.raised || strings.HasPrefix(out.Message, "SKIPPED") == tc.raised {
				t.Fatalf("%d primaries: raised %v, %q; want raised %v", tc.primaries, raised, out.Message, tc.raised)
			}
			if !tc.raised && (len(puts()) != 0 || !strings.Contains(out.Message, fmt.Sprintf("%d primary shards, fewer than 200", tc.primaries))) {
				t.Fatalf("skipped raise: %q, PUTs %q", out.Message, puts())
			}
			var rec struct{ Primaries int }
			if ok, err := e.Get(rundata.KeyIndexerPrimaries, &rec); !ok || err != nil || rec.Primaries != tc.primaries {
				t.Fatalf("primaries recorded %+v (%v %v), want %d", rec, ok, err, tc.primaries)
			}
			out, err = run(t, d, e, "indexer.primaries_recoveries", map[string]any{"restore": true})
			if err != nil || strings.HasPrefix(out.Message, "SKIPPED") == tc.raised || get()[initialPrimaries] != "" {
				t.Fatalf("restore: %q %v, now %v", out.Message, err, get())
			}
		})
	}
	reg := must(steps.NewRegistry())
	k, _ := reg.Lookup("indexer.primaries_recoveries")
	for _, with := range []map[string]any{{"restore": true, "min_primaries": 200}, {"value": 32, "min_primaries": -1}} {
		if p, err := k.Decode(with); err == nil && p.Validate() == nil {
			t.Errorf("%v: accepted", with)
		}
	}
}

// A rollback run starts with the upgrade's recovery record and primaries count, as recorded.
func TestRollbackSeedCarriesRecoveries(t *testing.T) {
	rec := json.RawMessage(`{"` + initialPrimaries + `":{"was":"","raised":"32"},"` + concurrentRecoveries + `":{"was":"6"}}`)
	count := json.RawMessage(`{"primaries":1001,"status":"yellow"}`)
	rd, err := upgrade.DecodeRunData(map[string]json.RawMessage{rundata.KeyPreviousVersions: json.RawMessage(`{"indexer":"4.9.0-1"}`),
		rundata.KeyPrimariesRecoveries: rec, rundata.KeyIndexerPrimaries: count})
	if err != nil {
		t.Fatal(err)
	}
	seed, err := upgrade.RollbackSeed(rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]json.RawMessage{rundata.KeyPrimariesRecoveries: rec, rundata.KeyIndexerPrimaries: count} {
		if got, err := json.Marshal(seed[k]); err != nil || string(got) != string(want) {
			t.Errorf("seed %s = %s (%v), want %s", k, got, err, want)
		}
	}
}

// The kinds that wait for the primaries add timeout_per_primary for each: the count the run
// recorded before the indexer stopped, a snapshot's shards for its restore, else the node's
// active primaries now; nothing when the node does not answer or without the parameter.
func TestPrimariesBudget(t *testing.T) {
	counted := map[string]any{rundata.KeyIndexerPrimaries: map[string]any{"primaries": 1001, "status": "yellow"}}
	snap := map[string]any{rundata.KeyIndexerPrimaries: map[string]any{"primaries": 1001},
		rundata.KeyBackups: steps.Backups{IndexerSnapshot: &steps.DataSnapshot{Name: dsRunSnap, Shards: 1200}}}
	half := map[string]any{"timeout_per_primary": "500ms"}
	for _, tc := range []struct {
		name   string
		kind   string
		with   map[string]any
		seed   map[string]any
		down   bool
		extra  time.Duration
		reason string
	}{
		{"security, counted", "indexer.security_apply", half, counted, false, 500500 * time.Millisecond, "500ms × 1001 primary shards, counted before the indexer stopped"},
		{"health, counted", "gate.cluster_health", map[string]any{"status": "yellow", "timeout_per_primary": "500ms"}, counted, true, 500500 * time.Millisecond, "counted before"},
		{"health, the node now", "gate.cluster_health", map[string]any{"status": "yellow", "timeout_per_primary": "1s"}, nil, false, 1001 * time.Second, "1s × 1001 primary shards, active on the indexer now"},
		{"health, nothing known", "gate.cluster_health", map[string]any{"status": "yellow", "timeout_per_primary": "1s"}, nil, true, 0, "1s per primary shard, count unknown: none recorded and the indexer does not answer"},
		{"health without the parameter", "gate.cluster_health", map[string]any{"status": "yellow"}, counted, false, 0, ""},
		{"restore, the snapshot's shards", "restore.indexer_snapshot", half, snap, true, 600 * time.Second, "500ms × 1200 primary shards, the shards of snapshot " + dsRunSnap},
		{"restore, counted", "restore.indexer_snapshot", half, counted, true, 500500 * time.Millisecond, "counted before"},
		{"capped", "indexer.security_apply", map[string]any{"timeout_per_primary": "1m"},
			map[string]any{rundata.KeyIndexerPrimaries: map[string]any{"primaries": 100000}}, true, 24 * time.Hour, "1m0s × 100000 primary shards"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := indexertest.NewServer(t, indexertest.Healthy())
			srv.Set("GET /_cluster/health", indexertest.Route{Body: healthBody("yellow", 1001)})
			d := indexerDeps(t, srv)
			if tc.down {
				srv.Close()
			}
			k, p := kind(t, tc.kind, tc.with)
			b, ok := k.(engine.Budgeter[*steps.Deps])
			if !ok {
				t.Fatalf("%s asks for no budget", tc.kind)
			}
			extra, why, err := b.Budget(context.Background(), newEnv(d, tc.seed), p)
			if err != nil || extra != tc.extra || !strings.Contains(why, tc.reason) || tc.reason == "" && why != "" {
				t.Fatalf("budget %s %q %v, want %s %q", extra, why, err, tc.extra, tc.reason)
			}
			if tc.reason != "" && !slices.ContainsFunc(p.Describe(&steps.Planning{Config: d.Config}), func(l string) bool { return strings.HasPrefix(l, "deadline: the step's timeout + ") }) {
				t.Errorf("describe %q names no deadline", p.Describe(&steps.Planning{Config: d.Config}))
			}
		})
	}
	for _, bad := range []string{"2m", "-1s"} {
		k, _ := kind(t, "gate.cluster_health", map[string]any{"status": "yellow"})
		p, err := k.Decode(map[string]any{"status": "yellow", "timeout_per_primary": bad})
		if err == nil {
			err = p.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), "want 0 to 1m") {
			t.Errorf("timeout_per_primary %s: %v", bad, err)
		}
	}
}

// The plan shows the deadline of each step that waits for the primaries, with the count the
// indexer answers now: those of the embedded upgrade runbook, and the snapshot restore undo.
func TestDeadlinesOfTheUpgradeRunbook(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	srv.Set("GET /_cluster/health", indexertest.Route{Body: healthBody("yellow", 1001)})
	d := indexerDeps(t, srv)
	reg, err := steps.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := engine.LoadPlan(runbooks.FS, runbooks.Upgrade, reg, engine.Selection{}, &steps.Planning{Config: d.Config})
	if err != nil {
		t.Fatal(err)
	}
	dls := upgrade.Deadlines(context.Background(), plan, d, nil)
	want := []string{"indexer/health", "indexer/security", "indexer/snapshot undo"}
	if got := slices.Sorted(maps.Keys(dls)); !slices.Equal(got, want) {
		t.Fatalf("deadlines for %v, want %v", got, want)
	}
	if dl := dls["indexer/security"]; dl.Total() != 5*time.Minute+500500*time.Millisecond ||
		dl.String() != "13m20.5s: timeout 5m0s + 8m20.5s (500ms × 1001 primary shards, active on the indexer now, none counted yet)" {
		t.Errorf("indexer/security: %s", dl)
	}
	if dl := dls["indexer/snapshot undo"]; dl.Timeout != 2*time.Hour || dl.Extra != 500500*time.Millisecond {
		t.Errorf("indexer/snapshot undo: %s", dl)
	}
}

// restore.indexer_snapshot with recoveries raises both settings on the empty cluster before the
// restore, keeping the values the upgrade recorded; the restore step puts those back.
func TestSnapshotRestoreRaisesRecoveries(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22", "siem-alerts-4.x-2026.11.23"}
	f := &fakeRepo{registered: true, secInit: true, taken: true, gets: 1, snapIndices: idx}
	d, srv := snapshotDeps(t, "snapshot", f)
	d.Shipper = clientset.Of[steps.ShipperAPI](&pipelineShipper{})
	get, _ := clusterSettings(srv, map[string]string{})
	upgrade := json.RawMessage(`{"` + initialPrimaries + `":{"was":"8","raised":"32"},"` + concurrentRecoveries + `":{"was":"6"}}`)
	e := newEnv(d, map[string]any{rundata.KeyPrimariesRecoveries: upgrade, rundata.KeyBackups: steps.Backups{IndexerDataAside: "/var/lib/siem-indexer.siemctl-x",
		IndexerSnapshot: &steps.DataSnapshot{Repository: "siemctl", Location: "/var/lib/siem-snaprepo/siemctl", Name: dsRunSnap, Indices: idx, Shards: 2}}})
	out, err := run(t, d, e, "restore.indexer_snapshot", map[string]any{"recoveries": 32})
	if err != nil {
		t.Fatal(err)
	}
	if g := get(); g[initialPrimaries] != "32" || g[concurrentRecoveries] != "32" ||
		!strings.Contains(out.Message, "node_initial_primaries_recoveries 8 → 32, node_concurrent_recoveries 6 → 32") {
		t.Fatalf("settings %v, %q", g, out.Message)
	}
	var order []string
	for _, r := range srv.Requests() {
		if k := r.Method + " " + r.Path; k == "PUT /_cluster/settings" || strings.HasSuffix(k, "/_restore") {
			order = append(order, k)
		}
	}
	if len(order) != 2 || order[0] != "PUT /_cluster/settings" {
		t.Errorf("requests %v: the settings must be raised before the restore", order)
	}
	if _, err := run(t, d, e, "indexer.primaries_recoveries", map[string]any{"restore": true}); err != nil {
		t.Fatal(err)
	}
	if g := get(); g[initialPrimaries] != "8" || g[concurrentRecoveries] != "6" {
		t.Fatalf("after the restore step: %v", g)
	}
}
