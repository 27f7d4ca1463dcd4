package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/internal/units/unitstest"
)

// Bodies as OpenSearch 2.11.1 answers them (the lab's node).
const (
	dsPathRepo    = `{"nodes":{"lc5U6I7-QZOY48WwbNxh1w":{"settings":{"path":{"repo":["/var/lib/siem-snaprepo"]}}}}}`
	dsRepo        = `{"siemctl":{"type":"fs","settings":{"location":"/var/lib/siem-snaprepo/siemctl"}}}`
	dsRepoMissing = `{"error":{"root_cause":[{"type":"repository_missing_exception","reason":"[siemctl] missing"}],"type":"repository_missing_exception","reason":"[siemctl] missing"},"status":404}`
	dsVerify      = `{"nodes":{"lc5U6I7-QZOY48WwbNxh1w":{"name":"node-1"}}}`
	dsSnapMissing = `{"error":{"root_cause":[{"type":"snapshot_missing_exception","reason":"[siemctl:%[1]s] is missing"}],"type":"snapshot_missing_exception","reason":"[siemctl:%[1]s] is missing"},"status":404}`
	dsStatus      = `{"snapshots":[{"snapshot":"%s","repository":"siemctl","uuid":"7XpDW8YLQnO9kLrMjUTBvA","state":"%s","include_global_state":true,"shards_stats":{"initializing":0,"started":1,"finalizing":0,"done":%d,"failed":0,"total":2},"stats":{"incremental":{"file_count":17,"size_in_bytes":1132155},"processed":{"file_count":4,"size_in_bytes":%d},"total":{"file_count":17,"size_in_bytes":1132155},"start_time_in_millis":1795470310278,"time_in_millis":668},"indices":{}}]}`
	dsInfo        = `{"snapshots":[{"snapshot":"%s","uuid":"7XpDW8YLQnO9kLrMjUTBvA","version_id":136327927,"version":"2.11.1","indices":[%s],"data_streams":[],"include_global_state":true,"state":"SUCCESS","start_time_in_millis":1795470310278,"duration_in_millis":2557,"failures":[],"shards":{"total":2,"failed":0,"successful":2}}]}`
)

const dsRunSnap = "siemctl-20250101t000000z-abcdef" // SnapshotName of the fake env's run id

// fakeRepo is a node with an fs repository: snapshots appear when taken
// (status STARTED once, then SUCCESS), restores allocate the indices.
type fakeRepo struct {
	mu          sync.Mutex
	indices     []string // alert indices the node holds
	snapIndices []string // what the snapshot lists
	taken       bool
	polls       int
	gets        int
	registered  bool
	secInit     bool
	notInit     []byte
	green       []byte
	// statuses are the _status bodies answered in turn (the last repeats);
	// none: STARTED once, then SUCCESS.
	statuses []string
	// recovery is the _cat/recovery body while restoring.
	recovery string
	// persistent are the node's persistent cluster settings (flat, as GET answers them).
	persistent map[string]any
}

func (f *fakeRepo) routes() map[string]indexertest.Route {
	h := func(fn http.HandlerFunc) indexertest.Route { return indexertest.Locked(&f.mu, fn) }
	quoted := func(ss []string) string {
		b, _ := json.Marshal(ss)
		return strings.Trim(string(b), "[]")
	}
	base := "/_snapshot/siemctl/" + dsRunSnap
	return map[string]indexertest.Route{
		"GET /_nodes/settings":            {Body: []byte(dsPathRepo)},
		"POST /_snapshot/siemctl/_verify": {Body: []byte(dsVerify)},
		"GET /_snapshot/siemctl": h(func(w http.ResponseWriter, _ *http.Request) {
			if !f.registered {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, dsRepoMissing)
				return
			}
			fmt.Fprint(w, dsRepo)
		}),
		"PUT /_snapshot/siemctl": h(func(w http.ResponseWriter, r *http.Request) {
			f.registered = true
			fmt.Fprint(w, `{"acknowledged":true}`)
		}),
		"PUT " + base: h(func(w http.ResponseWriter, r *http.Request) {
			f.taken = true
			fmt.Fprint(w, `{"accepted":true}`)
		}),
		"GET " + base + "/_status": h(func(w http.ResponseWriter, _ *http.Request) {
			f.polls++
			if len(f.statuses) > 0 {
				fmt.Fprint(w, f.statuses[min(f.polls, len(f.statuses))-1])
				return
			}
			if f.polls == 1 {
				fmt.Fprintf(w, dsStatus, dsRunSnap, "STARTED", 0, 283038)
				return
			}
			fmt.Fprintf(w, dsStatus, dsRunSnap, "SUCCESS", 2, 1132155)
		}),
		"GET " + base: h(func(w http.ResponseWriter, _ *http.Request) {
			if !f.taken {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprintf(w, dsSnapMissing, dsRunSnap)
				return
			}
			f.gets++
			if f.gets == 1 { // the first GET after the take: shards done, not finalised
				fmt.Fprint(w, strings.Replace(fmt.Sprintf(dsInfo, dsRunSnap, quoted(f.snapIndices)), `"state":"SUCCESS"`, `"state":"IN_PROGRESS"`, 1))
				return
			}
			fmt.Fprintf(w, dsInfo, dsRunSnap, quoted(f.snapIndices))
		}),
		"POST " + base + "/_restore": h(func(w http.ResponseWriter, r *http.Request) {
			f.indices = append(f.indices, f.snapIndices...)
			fmt.Fprint(w, `{"accepted":true}`)
		}),
		"GET /_cat/recovery/siem-alerts-4.x-*": h(func(w http.ResponseWriter, _ *http.Request) {
			if f.recovery == "" {
				fmt.Fprint(w, "[]")
				return
			}
			fmt.Fprint(w, f.recovery)
		}),
		"GET /_cat/shards": h(func(w http.ResponseWriter, _ *http.Request) {
			var rows []map[string]string
			for _, i := range f.indices {
				rows = append(rows, map[string]string{"index": i, "shard": "0", "prirep": "p", "state": "STARTED", "docs": "10", "store": "1kb", "node": "node-1"})
			}
			_ = json.NewEncoder(w).Encode(rows)
		}),
		"GET /_cluster/health": h(func(w http.ResponseWriter, _ *http.Request) {
			if !f.secInit {
				w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write(f.notInit)
				return
			}
			w.Write(f.green)
		}),
	}
}

func snapshotDeps(t *testing.T, mode string, f *fakeRepo) (*steps.Deps, *indexertest.Server) {
	t.Helper()
	f.notInit, f.green = indexertest.Fixture(t, "security-not-initialized-503.txt"), indexertest.Fixture(t, "health-green.json")
	srv := indexertest.NewServer(t, f.routes())
	c := srv.Client(t)
	root := t.TempDir()
	d := depsWith(testConfig(t, fmt.Sprintf("indexer:\n  data_safety: %s\n  data_dir: %s/data\n  config_dir: %s/etc\nshipper:\n  config_dir: %s/shipper\n", mode, root, root, root)), newUnits(true))
	d.Indexer = clientset.Of[steps.IndexerAPI](c)
	// The node keeps the persistent settings it is given (null removes one).
	srv.Set("GET /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"persistent": f.persistent, "transient": map[string]any{}})
	}})
	srv.Set("PUT /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, _ *http.Request) {
		var body struct {
			Persistent map[string]any `json:"persistent"`
		}
		last, _ := srv.Last("PUT /_cluster/settings") // the fake read the body already
		_ = json.Unmarshal(last.Body, &body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.persistent == nil {
			f.persistent = map[string]any{}
		}
		for k, v := range body.Persistent {
			if v == nil {
				delete(f.persistent, k)
				continue
			}
			if n, ok := v.(float64); ok {
				v = fmt.Sprint(n) // OpenSearch answers every scalar as a string
			}
			f.persistent[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"acknowledged":true,"persistent":{},"transient":{}}`)
	}})
	d.Disk = func(string) (steps.DiskUsage, error) {
		return steps.DiskUsage{TotalBytes: 100 << 30, FreeBytes: 50 << 30, UsedPercent: 50}, nil
	}
	writeFile(t, filepath.Join(root, "data/nodes/0/indices/a/0/index/_0.cfs"), strings.Repeat("x", 4096), 0o640)
	return d, srv
}

func TestSnapshotTakeVerifiesAndRecords(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22", "siem-alerts-4.x-2026.11.23"}
	f := &fakeRepo{registered: true, secInit: true, indices: append([]string{".opendistro_security"}, idx...), snapIndices: idx}
	d, srv := snapshotDeps(t, "snapshot", f)
	e := newEnv(d, nil)
	out, err := run(t, d, e, "indexer.snapshot_take", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The time budget measures this host's snapshot rate from the outcome
	// the kind declares (its budget role).
	if r := steps.RoleOf("indexer.snapshot_take"); r.Measures != steps.RateSnapshot || r.Phase != "backups" || !r.MovesData {
		t.Errorf("budget role %+v", r)
	} else if b, ok := out.Data[r.MeasuredBytes].(int64); !ok || b <= 0 {
		t.Errorf("outcome %s = %v (%T): no bytes to measure the rate from", r.MeasuredBytes, out.Data[r.MeasuredBytes], out.Data[r.MeasuredBytes])
	}
	if req, _ := srv.Last("PUT /_snapshot/siemctl/" + dsRunSnap); string(req.Body) != `{"ignore_unavailable":true,"include_global_state":true,"indices":"siem-alerts-4.x-*"}` {
		t.Errorf("create body %s", req.Body)
	}
	if !strings.Contains(out.Message, "SUCCESS: 2 indices, 2 shards, 1.1 MiB copied (incremental)") {
		t.Errorf("message %q", out.Message)
	}
	if w := strings.Join(e.waits, "\n"); !strings.Contains(w, "25% of 1.1 MiB incremental, 0/2 shards") || !strings.Contains(w, "shards done, finalising") {
		t.Errorf("progress not reported: %v", e.waits)
	}
	b := backupsOf(t, e)
	if b.IndexerSnapshot == nil || b.IndexerSnapshot.Name != dsRunSnap || b.IndexerSnapshot.Location != "/var/lib/siem-snaprepo/siemctl" || len(b.IndexerSnapshot.Indices) != 2 {
		t.Fatalf("recorded %+v", b.IndexerSnapshot)
	}
	// A resumed run does not take it again.
	if out, err := run(t, d, e, "indexer.snapshot_take", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED: snapshot "+dsRunSnap+"/siemctl already taken") {
		t.Fatalf("second take: %q %v", out.Message, err)
	}
	// backup.indexer_data records the mode and copies nothing.
	out, err = run(t, d, e, "backup.indexer_data", nil)
	if err != nil || !strings.Contains(out.Message, "no copy of") {
		t.Fatalf("backup.indexer_data in snapshot mode: %q %v", out.Message, err)
	}
	if b := backupsOf(t, e); b.IndexerDataMode != "snapshot" || b.IndexerData != "" {
		t.Errorf("backups %+v", b)
	}
	if _, err := os.Stat(filepath.Join(d.Config.BackupDir, e.RunID(), "indexer-data")); err == nil {
		t.Error("snapshot mode copied the data directory")
	}
}

// indexer.snapshot_start starts the snapshot and returns without waiting; indexer.snapshot_take
// then follows that snapshot (no second PUT) to the end, verifies and records it. Outside
// snapshot mode, and once the snapshot is recorded, the start is skipped.
func TestSnapshotStartThenTakeFollows(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22", "siem-alerts-4.x-2026.11.23"}
	f := &fakeRepo{registered: true, secInit: true, indices: append([]string{".opendistro_security"}, idx...), snapIndices: idx}
	d, srv := snapshotDeps(t, "snapshot", f)
	e := newEnv(d, nil)
	puts := func() (n int) {
		for _, r := range srv.Requests() {
			if r.Method == http.MethodPut && r.Path == "/_snapshot/siemctl/"+dsRunSnap {
				n++
			}
		}
		return n
	}
	out, err := run(t, d, e, "indexer.snapshot_start", nil)
	if err != nil || !strings.Contains(out.Message, "snapshot siemctl/"+dsRunSnap+" started (2 alert indices)") {
		t.Fatalf("start: %q %v", out.Message, err)
	}
	if puts() != 1 || f.polls != 0 {
		t.Fatalf("start: %d snapshot PUTs, %d status polls; want 1 and none (it does not wait)", puts(), f.polls)
	}
	if b := backupsOf(t, e); b.IndexerSnapshot != nil {
		t.Fatalf("the start recorded a snapshot that is not complete: %+v", b.IndexerSnapshot)
	}
	out, err = run(t, d, e, "indexer.snapshot_take", nil)
	if err != nil || !strings.Contains(out.Message, "SUCCESS: 2 indices, 2 shards") {
		t.Fatalf("take after start: %q %v", out.Message, err)
	}
	if puts() != 1 || f.polls < 2 {
		t.Errorf("take after start: %d snapshot PUTs (want the started one only), %d status polls", puts(), f.polls)
	}
	if b := backupsOf(t, e); b.IndexerSnapshot == nil || b.IndexerSnapshot.Name != dsRunSnap || len(b.IndexerSnapshot.Indices) != 2 {
		t.Fatalf("recorded %+v", b.IndexerSnapshot)
	}
	// Resumed after the take: nothing to start.
	if out, err := run(t, d, e, "indexer.snapshot_start", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED: snapshot "+dsRunSnap+"/siemctl already taken") {
		t.Fatalf("start after the take: %q %v", out.Message, err)
	}
	// Copy mode: skipped, nothing sent.
	dc, srvc := snapshotDeps(t, "copy", &fakeRepo{registered: true, secInit: true})
	if out, err := run(t, dc, newEnv(dc, nil), "indexer.snapshot_start", nil); err != nil || out.Message != "SKIPPED: data safety is copy: no snapshot (backup.indexer_data secures the data)" {
		t.Fatalf("copy mode: %q %v", out.Message, err)
	}
	for _, r := range srvc.Requests() {
		if strings.HasPrefix(r.Path, "/_snapshot") {
			t.Errorf("copy mode sent %s %s", r.Method, r.Path)
		}
	}
}

func TestSnapshotTakeRefusesIncompleteSnapshot(t *testing.T) {
	f := &fakeRepo{registered: true, secInit: true, indices: []string{"siem-alerts-4.x-2026.11.22", "siem-alerts-4.x-2026.11.23"}, snapIndices: []string{"siem-alerts-4.x-2026.11.22"}}
	d, _ := snapshotDeps(t, "snapshot", f)
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "indexer.snapshot_take", nil); err == nil || !strings.Contains(err.Error(), "does not list 1 alert indices: siem-alerts-4.x-2026.11.23") {
		t.Fatalf("err %v", err)
	}
	if b := backupsOf(t, e); b.IndexerSnapshot != nil {
		t.Error("an incomplete snapshot was recorded")
	}
	// backup.indexer_data refuses to go on without a snapshot.
	if _, err := run(t, d, e, "backup.indexer_data", nil); err == nil || !strings.Contains(err.Error(), "recorded no snapshot") {
		t.Fatalf("backup without snapshot: %v", err)
	}
}

func TestSnapshotModeWithoutPathRepoIsNoGo(t *testing.T) {
	f := &fakeRepo{secInit: true}
	d, srv := snapshotDeps(t, "snapshot", f)
	srv.Set("GET /_nodes/settings", indexertest.Route{Body: []byte(`{}`)})
	e := newEnv(d, nil)
	_, err := run(t, d, e, "gate.data_safety", nil)
	var ng *engine.NoGoError
	if !errors.As(err, &ng) || !strings.Contains(ng.Reason, "no path.repo") || !strings.Contains(ng.Reason, "siemctl indexer repository prepare") {
		t.Fatalf("gate: %v", err)
	}
	if _, err := run(t, d, e, "indexer.snapshot_take", nil); err == nil || !strings.Contains(err.Error(), "siemctl indexer repository prepare") {
		t.Fatalf("take: %v", err)
	}
	// Not registered, but path.repo covers its location: usable, the take registers it.
	srv.Set("GET /_nodes/settings", indexertest.Route{Body: []byte(dsPathRepo)})
	out, err := run(t, d, e, "gate.data_safety", nil)
	if err != nil || !strings.Contains(out.Message, "snapshot into siemctl at /var/lib/siem-snaprepo/siemctl") || !strings.Contains(out.Message, "not registered yet: registered by indexer/snapshot") {
		t.Fatalf("gate, repository not registered under path.repo: %q %v", out.Message, err)
	}
	if f.registered {
		t.Fatal("the read-only gate registered the repository")
	}
	// A configured location path.repo does not cover: the advice names prepare.
	d.Config.Indexer.SnapshotLocation = "/srv/elsewhere"
	if _, err := run(t, d, e, "gate.data_safety", nil); !errors.As(err, &ng) || !strings.Contains(ng.Reason, `repository "siemctl" is not registered and its location /srv/elsewhere is not under path.repo /var/lib/siem-snaprepo; run siemctl indexer repository prepare`) {
		t.Fatalf("gate, location outside path.repo: %v", err)
	}
}

// The take registers a repository that is not registered yet at its
// location under path.repo, verifies it and takes the snapshot.
func TestSnapshotTakeRegistersTheRepository(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22"}
	f := &fakeRepo{secInit: true, indices: idx, snapIndices: idx}
	d, srv := snapshotDeps(t, "snapshot", f)
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "indexer.snapshot_take", nil); err != nil {
		t.Fatal(err)
	}
	if req, ok := srv.Last("PUT /_snapshot/siemctl"); !ok || !strings.Contains(string(req.Body), `"location":"/var/lib/siem-snaprepo/siemctl"`) || !f.registered {
		t.Fatalf("repository not registered: %s", req.Body)
	}
	if _, ok := srv.Last("POST /_snapshot/siemctl/_verify"); !ok {
		t.Error("the registered repository was not verified")
	}
}

func TestDataSafetyGateCost(t *testing.T) {
	f := &fakeRepo{registered: true, secInit: true}
	d, _ := snapshotDeps(t, "copy", f)
	e := newEnv(d, nil)
	out, err := run(t, d, e, "gate.data_safety", nil)
	if err != nil || !strings.Contains(out.Message, "data safety copy: 4.0 KiB to copy into "+d.Config.BackupDir) || strings.Contains(out.Message, "set-aside") {
		t.Fatalf("copy cost: %q %v", out.Message, err)
	}
	// Data directories kept aside by earlier rollbacks are named, with the
	// command that removes them; other names next to it are not counted.
	writeFile(t, filepath.Join(rundata.AsidePath(d.Config.Indexer.DataDir, "20261101T100000Z-0a1b2c"), "x"), strings.Repeat("a", 3000), 0o640)
	writeFile(t, filepath.Join(d.Config.Indexer.DataDir+".siemctl-restore", "x"), "b", 0o640)
	out, err = run(t, d, e, "gate.data_safety", nil)
	if err != nil || !strings.Contains(out.Message, "warning: 1 set-aside data directory ("+d.Config.Indexer.DataDir+".siemctl-<run-id>) kept from earlier rollbacks, 2.9 KiB: see siemctl upgrade prune --dry-run") {
		t.Fatalf("set-aside warning: %q %v", out.Message, err)
	}
	d.Disk = func(string) (steps.DiskUsage, error) {
		return steps.DiskUsage{TotalBytes: 1 << 30, FreeBytes: 1 << 20, UsedPercent: 99}, nil
	}
	var ng *engine.NoGoError
	if _, err := run(t, d, e, "gate.data_safety", nil); !errors.As(err, &ng) || !strings.Contains(ng.Reason, "1.0 MiB free, 64.0 MiB needed") {
		t.Fatalf("copy without room: %v", err)
	}
	// snapshot mode: the first snapshot may copy all the data, which fits here
	d2, _ := snapshotDeps(t, "snapshot", f)
	out, err = run(t, d2, newEnv(d2, nil), "gate.data_safety", nil)
	if err != nil || !strings.Contains(out.Message, "data safety snapshot into siemctl at /var/lib/siem-snaprepo/siemctl: 4.0 KiB of data, first snapshot") {
		t.Fatalf("snapshot cost: %q %v", out.Message, err)
	}
	// Skipped kinds say why.
	if out, err := run(t, d, e, "indexer.snapshot_take", nil); err != nil || out.Message != "SKIPPED: data safety is copy: no snapshot (backup.indexer_data secures the data)" {
		t.Fatalf("take in copy mode: %q %v", out.Message, err)
	}
	if out, err := run(t, d, e, "restore.indexer_snapshot", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED: data safety is copy") {
		t.Fatalf("restore in copy mode: %q %v", out.Message, err)
	}
}

func TestSnapshotRollbackRestoresIntoTheOldVersion(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22", "siem-alerts-4.x-2026.11.23"}
	f := &fakeRepo{registered: true, secInit: true, indices: idx, snapIndices: idx}
	d, srv := snapshotDeps(t, "snapshot", f)
	tool := &secTool{}
	d.Exec = tool
	sh := &pipelineShipper{}
	d.Shipper = clientset.Of[steps.ShipperAPI](sh)
	secDir := filepath.Join(t.TempDir(), "indexer-security")
	writeFile(t, filepath.Join(secDir, "config.yml"), "config", 0o600)
	writeFile(t, filepath.Join(secDir, "internal_users.yml"), "users", 0o600)
	if err := os.MkdirAll(filepath.Join(d.Config.Indexer.ConfigDir, "opensearch-security"), 0o750); err != nil {
		t.Fatal(err)
	}
	tmpl := steps.TemplatePath(d.Config.Shipper.ConfigDir, d.Config.Shipper.TemplateName)
	writeFile(t, tmpl, `{"index_patterns":["siem-alerts-4.x-*"],"order":0}`, 0o644)
	srv.Set("PUT /_template/"+d.Config.Shipper.TemplateName, indexertest.Route{Body: []byte(`{"acknowledged":true}`)})
	e := newEnv(d, map[string]any{rundata.KeyBackups: steps.Backups{IndexerSecurity: secDir}})
	if _, err := run(t, d, e, "indexer.snapshot_take", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, d, e, "backup.indexer_data", nil); err != nil {
		t.Fatal(err)
	}
	// Before the data was set aside the restore has nothing to do.
	if out, err := run(t, d, e, "restore.indexer_snapshot", nil); err != nil || !strings.Contains(out.Message, "SKIPPED: the data directory was not replaced") {
		t.Fatalf("restore before set-aside: %q %v", out.Message, err)
	}
	// restore.indexer_data: stop, set the new data aside, leave an empty dir.
	dataDir := d.Config.Indexer.DataDir
	if err := os.Chmod(dataDir, 0o750); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, d, e, "restore.indexer_data", nil)
	if err != nil {
		t.Fatal(err)
	}
	aside := dataDir + ".siemctl-20250101t000000z-abcdef"
	if readFile(t, filepath.Join(aside, "nodes/0/indices/a/0/index/_0.cfs")) != strings.Repeat("x", 4096) || !strings.Contains(out.Message, "set aside as "+aside) {
		t.Fatalf("aside: %q", out.Message)
	}
	if ents, err := os.ReadDir(dataDir); err != nil || len(ents) != 0 {
		t.Fatalf("data dir not empty: %v %v", ents, err)
	}
	if fi, _ := os.Stat(dataDir); fi.Mode().Perm() != 0o750 {
		t.Errorf("data dir mode %v", fi.Mode())
	}
	u, _ := d.Units(context.Background())
	if st, _ := u.Status(context.Background(), "siem-indexer.service"); st[0].IsActive() {
		t.Error("the indexer was not stopped before its data was set aside")
	}
	if out, err := run(t, d, e, "restore.indexer_data", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED: the new version's data is already set aside") {
		t.Fatalf("second restore.indexer_data: %q %v", out.Message, err)
	}
	// The old version starts empty: no security index, no repository, no indices.
	f.mu.Lock()
	f.indices, f.registered, f.secInit = nil, false, false
	// _cat/recovery as 2.11.1 lists it while restoring (bytes=b): the
	// snapshot's shards half done and done, and a shard of another index
	// recovering from its own store, which is not counted.
	f.recovery = `[{"index":"siem-alerts-4.x-2026.11.22","shard":"0","type":"snapshot","stage":"index","snapshot":"` + dsRunSnap + `","bytes_recovered":"2048","bytes_total":"4096"},` +
		`{"index":"siem-alerts-4.x-2026.11.23","shard":"0","type":"snapshot","stage":"done","snapshot":"` + dsRunSnap + `","bytes_recovered":"1000","bytes_total":"1000"},` +
		`{"index":"siem-alerts-4.x-2026.11.24","shard":"0","type":"existing_store","stage":"done","snapshot":"n/a","bytes_recovered":"0","bytes_total":"0"}]`
	f.mu.Unlock()
	tool.onRun = func() { f.mu.Lock(); f.secInit = true; f.mu.Unlock() }
	e.takeMeasures()
	out, err = run(t, d, e, "restore.indexer_snapshot", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ms := e.takeMeasures(); len(ms) == 0 || ms[0] != (engine.Measure{What: "restore", Unit: engine.UnitBytes, Done: 3048, Total: 5096, Detail: "1/2 shards recovered"}) {
		t.Errorf("restore progress %+v", ms)
	}
	if len(tool.argv) != 1 || !strings.Contains(out.Message, "security re-initialised from "+secDir) || !strings.Contains(out.Message, "restored 2 indices from snapshot siemctl/"+dsRunSnap) {
		t.Fatalf("restore: %q, tool %v", out.Message, tool.argv)
	}
	if sh.pipelines != 1 || !strings.Contains(out.Message, "shipper pipelines loaded") {
		t.Errorf("the shipper's pipelines were not loaded into the empty cluster (%d)", sh.pipelines)
	}
	if readFile(t, filepath.Join(d.Config.Indexer.ConfigDir, "opensearch-security", "internal_users.yml")) != "users" {
		t.Error("the security backup was not installed before security init")
	}
	want := `{"ignore_unavailable":true,"include_global_state":false,"indices":"siem-alerts-4.x-2026.11.22,siem-alerts-4.x-2026.11.23"}`
	if req, _ := srv.Last("POST /_snapshot/siemctl/" + dsRunSnap + "/_restore"); string(req.Body) != want || !f.registered {
		t.Errorf("restore body %s (registered %v)", req.Body, f.registered)
	}
	if req, ok := srv.Last("PUT /_template/" + d.Config.Shipper.TemplateName); !ok || string(req.Body) != `{"index_patterns":["siem-alerts-4.x-*"],"order":0}` || !strings.Contains(out.Message, "template "+d.Config.Shipper.TemplateName+" loaded") {
		t.Errorf("the alerts template was not loaded into the empty cluster: %q", req.Body)
	}
	if req, _ := srv.Last("PUT /_snapshot/siemctl"); !strings.Contains(string(req.Body), `"location":"/var/lib/siem-snaprepo/siemctl"`) {
		t.Errorf("repository registered with %s", req.Body)
	}
	if out, err := run(t, d, e, "restore.indexer_snapshot", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED: all 2 indices of snapshot") {
		t.Fatalf("second restore: %q %v", out.Message, err)
	}
}

// A snapshot-mode rollback puts back the site's persistent cluster settings (issue 26 §4): the
// old version starts on an empty data directory and the restore cannot bring the global state
// back. Not the ones the run changes itself (their own steps put them back), not archived.*.
func TestSnapshotRollbackPutsBackPersistentSettings(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22"}
	site := map[string]any{"search.max_buckets": "12345", "cluster.routing.allocation.awareness.attributes": "zone",
		"cluster.routing.allocation.awareness.force.zone.values": []any{"a", "b"}}
	persistent := map[string]any{"cluster.routing.allocation.enable": "primaries", "cluster.routing.allocation.node_initial_primaries_recoveries": "32",
		"archived.indices.breaker.type": "hierarchy"}
	for k, v := range site {
		persistent[k] = v
	}
	f := &fakeRepo{registered: true, secInit: true, indices: idx, snapIndices: idx, persistent: persistent}
	d, srv := snapshotDeps(t, "snapshot", f)
	d.Shipper = clientset.Of[steps.ShipperAPI](&pipelineShipper{})
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "indexer.snapshot_take", nil); err != nil {
		t.Fatal(err)
	}
	var b steps.Backups
	if _, err := e.Get(rundata.KeyBackups, &b); err != nil {
		t.Fatal(err)
	}
	// the old version restarted on an empty data directory: no settings but the raise of this run
	b.IndexerDataMode, b.IndexerDataAside = "snapshot", d.Config.Indexer.DataDir+".aside"
	if err := e.Set(rundata.KeyBackups, b); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.indices, f.persistent = nil, map[string]any{"cluster.routing.allocation.node_initial_primaries_recoveries": "32"}
	f.mu.Unlock()
	out, err := run(t, d, e, "restore.indexer_snapshot", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	got := f.persistent
	f.mu.Unlock()
	want := map[string]any{"cluster.routing.allocation.node_initial_primaries_recoveries": "32"}
	for k, v := range site {
		want[k] = v
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("persistent settings after the rollback:\n got %v\nwant %v", got, want)
	}
	if req, _ := srv.Last("PUT /_cluster/settings"); strings.Contains(string(req.Body), "archived.") || strings.Contains(string(req.Body), "allocation.enable") {
		t.Errorf("put back what the run changes itself or archived.*: %s", req.Body)
	}
	if !strings.Contains(out.Message, "3 persistent settings put back as recorded before the upgrade: cluster.routing.allocation.awareness.attributes, cluster.routing.allocation.awareness.force.zone.values, search.max_buckets") {
		t.Errorf("restore message %q", out.Message)
	}
}

// restore.indexer_snapshot waits for the old indexer to answer (the
// services operation's readiness wait), but not for one whose unit died:
// it fails at once with what systemd saw.
func TestSnapshotRestoreDoesNotWaitForADeadIndexer(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22"}
	f := &fakeRepo{registered: true, secInit: true, snapIndices: idx}
	d, srv := snapshotDeps(t, "snapshot", f)
	srv.Set("GET /_cluster/health", indexertest.Route{Status: 500, Body: []byte(`{"error":{"type":"exception","reason":"boom"},"status":500}`)})
	u, _ := d.Units(context.Background())
	u.(*unitstest.Fake).Set(units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: units.Failed, SubState: "failed",
		Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1})
	e := newEnv(d, map[string]any{rundata.KeyBackups: steps.Backups{IndexerDataMode: "snapshot", IndexerDataAside: d.Config.Indexer.DataDir + ".aside",
		IndexerSnapshot: &steps.DataSnapshot{Repository: "siemctl", Name: dsRunSnap, Indices: idx}}})
	_, err := run(t, d, e, "restore.indexer_snapshot", nil)
	if err == nil || !strings.Contains(err.Error(), "siem-indexer.service is not running (exit-code (exit status 1)); its log says why") {
		t.Fatalf("restore with a dead indexer: %v", err)
	}
}

// hookRunner records the environment of the data hooks.
type hookRunner struct {
	env  []string
	argv []string
	code int
}

func (h *hookRunner) Run(_ context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error) {
	h.env, h.argv = env, append([]string{name}, args...)
	return []byte("lvcreate -s -n siem-data-snap vg/siem-data\nLogical volume \"siem-data-snap\" created.\n"), nil, h.code, nil
}

func TestCommandModeHooks(t *testing.T) {
	root := t.TempDir()
	take, restore := filepath.Join(root, "take"), filepath.Join(root, "restore")
	writeFile(t, take, "#!/bin/sh\n", 0o755)
	writeFile(t, restore, "#!/bin/sh\n", 0o755)
	cfg := testConfig(t, fmt.Sprintf("indexer:\n  data_safety: command\n  data_dir: %s/data\n  data_hook_take: [%s, take]\n  data_hook_restore: [%s]\n", root, take, restore))
	if err := os.MkdirAll(cfg.Indexer.DataDir, 0o750); err != nil {
		t.Fatal(err)
	}
	u := newUnits(false)
	d := depsWith(cfg, u)
	d.Disk = func(string) (steps.DiskUsage, error) { return steps.DiskUsage{FreeBytes: 1}, nil }
	h := &hookRunner{}
	d.Exec = h
	e := newEnv(d, nil)
	out, err := run(t, d, e, "gate.data_safety", nil)
	if err != nil || !strings.Contains(out.Message, "data safety command: site hook "+take+" (cost: the site's)") {
		t.Fatalf("gate: %q %v", out.Message, err)
	}
	out, err = run(t, d, e, "backup.indexer_data", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h.argv, " ") != take+" take" || !strings.Contains(strings.Join(h.env, " "), "SIEMCTL_RUN_ID=20250101T000000Z-abcdef") || !strings.Contains(strings.Join(h.env, " "), "SIEMCTL_DATA_DIR="+cfg.Indexer.DataDir) {
		t.Fatalf("hook argv %v env %v", h.argv, h.env)
	}
	if out.Data["output"] == nil || !strings.Contains(fmt.Sprint(out.Data["output"]), `Logical volume "siem-data-snap" created.`) {
		t.Errorf("hook output not recorded: %v", out.Data)
	}
	// A failed take fails the step (the run rolls back; nothing was installed).
	h.code = 5
	e2 := newEnv(d, nil)
	if _, err := run(t, d, e2, "backup.indexer_data", nil); err == nil || !strings.Contains(err.Error(), "exited 5") {
		t.Fatalf("failed take: %v", err)
	}
	h.code = 0
	if _, err := run(t, d, e, "restore.indexer_data", nil); err != nil || strings.Join(h.argv, " ") != restore {
		t.Fatalf("restore hook: %v %v", err, h.argv)
	}
	// Hooks that are not executable are a no-go before anything changes.
	if err := os.Chmod(restore, 0o644); err != nil {
		t.Fatal(err)
	}
	var ng *engine.NoGoError
	if _, err := run(t, d, e, "gate.data_safety", nil); !errors.As(err, &ng) || !strings.Contains(ng.Reason, "is not an executable file") {
		t.Fatalf("gate with a broken hook: %v", err)
	}
}

// secTool is the security init tool: it initialises security when run.
type secTool struct {
	argv  [][]string
	onRun func()
}

func (s *secTool) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
	s.argv = append(s.argv, append([]string{name}, args...))
	if s.onRun != nil {
		s.onRun()
	}
	return []byte("Done with success\n"), nil, 0, nil
}

func TestRollbackBringsSaysWhatComesBack(t *testing.T) {
	for _, tt := range []struct {
		b    steps.Backups
		want string
	}{
		{steps.Backups{}, "exactly as copied when the indexer stopped for the upgrade; documents indexed after it are not brought back"},
		{steps.Backups{IndexerDataMode: "copy"}, "exactly as copied when the indexer stopped for the upgrade; documents indexed after it are not brought back"},
		{steps.Backups{IndexerDataMode: "snapshot", IndexerSnapshot: &steps.DataSnapshot{Name: dsRunSnap}}, "as of snapshot " + dsRunSnap + " (taken while the old version still ran); documents indexed after it are not brought back"},
		{steps.Backups{IndexerDataMode: "snapshot", IndexerSnapshot: &steps.DataSnapshot{Name: dsRunSnap}}, "data directory is kept aside (siemctl upgrade prune removes it later)"},
		{steps.Backups{IndexerDataMode: "command"}, "site's restore hook"},
	} {
		if got := steps.RollbackBrings(tt.b); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q lacks %q", tt.b, got, tt.want)
		}
	}
	for mode, want := range map[string]string{
		"auto":     "data safety auto (preflight/data-safety picks a snapshot when the repository is usable, else a cold copy): a rollback brings back the indexer data as of that snapshot or copy, not documents indexed after it",
		"snapshot": "data safety snapshot: a rollback means restoring the alert indices as of snapshot siemctl-<run-id>",
		"copy":     "data safety copy: a rollback means restoring the indexer data directory exactly as copied",
	} {
		c := testConfig(t, "indexer:\n  data_safety: "+mode+"\n")
		if got := steps.DataSafetyPromise(c); !strings.Contains(got, want) {
			t.Errorf("%s: %q lacks %q", mode, got, want)
		}
	}
}

// pipelineShipper counts pipeline setups.
type pipelineShipper struct{ pipelines int }

func (p *pipelineShipper) Describe(shipper.Op) []string { return nil }
func (p *pipelineShipper) SetupPipelines(context.Context) error {
	p.pipelines++
	return nil
}
func (p *pipelineShipper) SetupIndexManagement(context.Context) error { return nil }
func (p *pipelineShipper) TestOutput(context.Context) (shipper.Report, error) {
	return shipper.Report{}, nil
}

// indexer.data_safety auto (the default): snapshot when the repository is
// usable, else copy when it fits, else no-go naming prepare and path.repo;
// the choice is recorded so every later step and the rollback agree.
func TestDataSafetyAutoChooses(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22"}
	var ng *engine.NoGoError

	f := &fakeRepo{registered: true, secInit: true, indices: idx, snapIndices: idx}
	d, _ := snapshotDeps(t, "auto", f)
	e := newEnv(d, nil)
	out, err := run(t, d, e, "gate.data_safety", nil)
	if err != nil || !strings.HasPrefix(out.Message, "data safety auto → snapshot into siemctl at /var/lib/siem-snaprepo/siemctl: 4.0 KiB of data, first snapshot") {
		t.Fatalf("auto with a usable repository: %q %v", out.Message, err)
	}
	if b := backupsOf(t, e); b.DataSafety != "snapshot" || !strings.Contains(b.DataSafetyWhy, "usable") {
		t.Fatalf("recorded %+v", b)
	}
	if out, err := run(t, d, e, "indexer.snapshot_take", nil); err != nil || strings.HasPrefix(out.Message, "SKIPPED") {
		t.Fatalf("take after auto chose snapshot: %q %v", out.Message, err)
	}

	// No path.repo: copy, with the reason.
	f2 := &fakeRepo{secInit: true}
	d2, srv2 := snapshotDeps(t, "auto", f2)
	srv2.Set("GET /_nodes/settings", indexertest.Route{Body: []byte(`{}`)})
	e2 := newEnv(d2, nil)
	out, err = run(t, d2, e2, "gate.data_safety", nil)
	if err != nil || !strings.HasPrefix(out.Message, "data safety auto → copy: 4.0 KiB to copy into "+d2.Config.BackupDir) || !strings.Contains(out.Message, "no usable snapshot repository: the indexer has no path.repo") {
		t.Fatalf("auto without path.repo: %q %v", out.Message, err)
	}
	if out, err := run(t, d2, e2, "indexer.snapshot_take", nil); err != nil || out.Message != "SKIPPED: data safety is copy: no snapshot (backup.indexer_data secures the data)" {
		t.Fatalf("take after auto chose copy: %q %v", out.Message, err)
	}
	// …and no room for the copy either: no-go naming both ways out.
	d2.Disk = func(string) (steps.DiskUsage, error) {
		return steps.DiskUsage{TotalBytes: 1 << 30, FreeBytes: 1 << 20, UsedPercent: 99}, nil
	}
	if _, err := run(t, d2, newEnv(d2, nil), "gate.data_safety", nil); !errors.As(err, &ng) ||
		!strings.Contains(ng.Reason, "no path.repo") || !strings.Contains(ng.Reason, "1.0 MiB free, 64.0 MiB needed") ||
		!strings.Contains(ng.Reason, "siemctl indexer repository prepare (it adds path.repo") {
		t.Fatalf("auto without path.repo nor room: %v", err)
	}

	// Without the gate (left out), the first step that needs the mode resolves it.
	f3 := &fakeRepo{registered: true, secInit: true, indices: idx, snapIndices: idx}
	d3, _ := snapshotDeps(t, "auto", f3)
	e3 := newEnv(d3, nil)
	if _, err := run(t, d3, e3, "indexer.snapshot_take", nil); err != nil {
		t.Fatal(err)
	}
	if b := backupsOf(t, e3); b.DataSafety != "snapshot" || b.IndexerSnapshot == nil {
		t.Fatalf("lazily resolved: %+v", b)
	}
}

// After a first snapshot the cost is the data written since it: the files
// of the data directory newer than the repository's index-N.
func TestSnapshotCostIsIncremental(t *testing.T) {
	f := &fakeRepo{registered: true, secInit: true}
	d, srv := snapshotDeps(t, "snapshot", f)
	repoRoot := t.TempDir()
	loc := filepath.Join(repoRoot, "siemctl")
	srv.Set("GET /_nodes/settings", indexertest.Route{Body: []byte(`{"nodes":{"n":{"settings":{"path":{"repo":["` + repoRoot + `"]}}}}}`)})
	srv.Set("GET /_snapshot/siemctl", indexertest.Route{Body: []byte(`{"siemctl":{"type":"fs","settings":{"location":"` + loc + `"}}}`)})
	last := time.Now().Add(-time.Hour)
	writeFile(t, filepath.Join(loc, "index-3"), "{}", 0o644)
	old := filepath.Join(d.Config.Indexer.DataDir, "nodes/0/indices/a/0/index/_0.cfs")
	newer := filepath.Join(d.Config.Indexer.DataDir, "nodes/0/indices/a/0/index/_1.cfs")
	writeFile(t, newer, strings.Repeat("n", 10000), 0o640)
	for p, mt := range map[string]time.Time{filepath.Join(loc, "index-3"): last, old: last.Add(-time.Hour), newer: last.Add(30 * time.Minute)} {
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, d, newEnv(d, nil), "gate.data_safety", nil)
	if err != nil || !strings.Contains(out.Message, "13.8 KiB of data, incremental: about 9.8 KiB written since the last snapshot ("+last.UTC().Format(time.RFC3339)+")") ||
		!strings.Contains(out.Message, "64.0 MiB needed") {
		t.Fatalf("incremental cost: %q %v", out.Message, err)
	}
	var cost struct {
		Need int64 `json:"need_bytes"`
	}
	raw, _ := json.Marshal(out.Data["cost"])
	if err := json.Unmarshal(raw, &cost); err != nil || cost.Need != 64<<20+10000 {
		t.Fatalf("need %d, want 64 MiB + 10000: %v", cost.Need, err)
	}
}
