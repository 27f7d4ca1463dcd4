//go:build e2e

package upgrade_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/probeevent"
)

// dataSafetyPortOffset: the snapshot-mode lab (its own offset: the other
// tests of this package use 550).
const dataSafetyPortOffset = 600

// realCounts: documents per alerts index that are not data-flow probe
// events (the health checks and the runs' probes add those at any time).
func (c *labClient) realCounts(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for idx := range c.alertCounts(t) {
		var r struct {
			Count int64 `json:"count"`
		}
		c.get(t, http.MethodGet, "/"+idx+"/_count?q="+url.QueryEscape("NOT data.srcuser:"+probeevent.UserPrefix+"*"), &r)
		out[idx] = r.Count
	}
	return out
}

// countsBefore: realCounts restricted to alerts timestamped before t (the
// rollback's own service restarts raise new alerts afterwards).
func (c *labClient) countsBefore(t *testing.T, before time.Time) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	q := fmt.Sprintf(`{"query":{"bool":{"must_not":{"prefix":{"data.srcuser":%q}},"filter":{"range":{"timestamp":{"lt":%q}}}}}}`,
		probeevent.UserPrefix, before.UTC().Format("2006-01-02T15:04:05.000Z"))
	for idx := range c.alertCounts(t) {
		var r struct {
			Count int64 `json:"count"`
		}
		c.send(t, http.MethodPost, "/"+idx+"/_count", "application/json", q, &r)
		out[idx] = r.Count
	}
	return out
}

// stableCounts waits until the shipper has caught up (two equal readings
// 10s apart) and returns the counts.
func (c *labClient) stableCounts(t *testing.T) map[string]int64 {
	t.Helper()
	prev := c.realCounts(t)
	for i := 0; i < 12; i++ {
		time.Sleep(10 * time.Second)
		cur := c.realCounts(t)
		if fmt.Sprint(cur) == fmt.Sprint(prev) {
			return cur
		}
		t.Logf("alerts still arriving: %v → %v", prev, cur)
		prev = cur
	}
	t.Fatalf("alert counts never settled: %v", prev)
	return nil
}

// TestE2EDataSafetyCountsHelper is run by TestE2EDataSafetySnapshot's
// upgrade (SIEMCTL_TEST_EXEC_AT) right before the snapshot is taken: the
// shipper is stopped then, so these are the counts the snapshot holds.
func TestE2EDataSafetyCountsHelper(t *testing.T) {
	out := os.Getenv("SIEMCTL_E2E_COUNTS_OUT")
	if out == "" {
		t.Skip("helper process of TestE2EDataSafetySnapshot")
	}
	b, err := json.Marshal(newLabClient(t, os.Getenv("SIEMCTL_E2E_COUNTS_LAB")).realCounts(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// seedAlerts bulk-indexes n alert documents into each of days' daily indices.
func (c *labClient) seedAlerts(t *testing.T, n int, days ...string) {
	t.Helper()
	var b strings.Builder
	for _, d := range days {
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `{"index":{"_index":"%s%s","_id":"seed-%s-%d"}}`+"\n", c.prof.AlertsPrefix(), d, d, i)
			fmt.Fprintf(&b, `{"timestamp":"%sT10:00:%02d.000+0000","rule":{"id":"5710","level":5,"description":"sshd: Attempt to login using a non-existent user"},"agent":{"id":"000","name":"manager"},"data":{"srcuser":"seed%d","srcip":"192.0.2.%d"},"location":"/var/log/auth.log"}`+"\n", strings.ReplaceAll(d, ".", "-"), i%60, i, i%250+1)
		}
	}
	var r struct {
		Errors bool `json:"errors"`
	}
	if c.send(t, http.MethodPost, "/_bulk?refresh=true", "application/x-ndjson", b.String(), &r); r.Errors {
		t.Fatal("bulk: errors in the answer")
	}
}

// putPersistent sets a persistent cluster setting as a site would.
func (c *labClient) putPersistent(t *testing.T, key, value string) {
	t.Helper()
	body := fmt.Sprintf(`{"persistent":{%q:%q}}`, key, value)
	c.send(t, http.MethodPut, "/_cluster/settings", "application/json", body, nil)
	if v := c.persistent(t, key); v != value {
		t.Fatalf("%s reads %q after setting it to %q", key, v, value)
	}
}

// TestE2EDataSafetySnapshot: indexer.data_safety snapshot on a stock-like
// indexer (no path.repo): prepare the repository, upgrade 4.9.0 → 4.10.0
// with a snapshot instead of a copy, roll back into OpenSearch 2.11.1 from
// the snapshot, every alert index back with its documents and the site's
// persistent cluster settings (issue 26 §4).
func TestE2EDataSafetySnapshot(t *testing.T) {
	l := upOld(t, dataSafetyPortOffset)
	c := newLabClient(t, l.Dir)
	c.seedAlerts(t, 25, "2026.11.19", "2026.11.20", "2026.11.21")
	if n := len(c.realCounts(t)); n < 4 {
		t.Fatalf("the lab has %d alerts indices, want the seeded three and today's", n)
	}
	var before map[string]int64     // right before the upgrade, once the shipper caught up
	var atSnapshot map[string]int64 // when the snapshot was taken: what the rollback must bring back
	snap := []string{"SIEMCTL_INDEXER_DATA_SAFETY=snapshot"}

	t.Run("plan-without-path-repo", func(t *testing.T) {
		r := siemctlEnv(t, l, snap, "upgrade", "plan", "--to", "4.10.0")
		mustCode(t, r, 3, "upgrade plan in snapshot mode without path.repo")
		if !strings.Contains(r.Stdout, "no path.repo") || !strings.Contains(r.Stdout, "siemctl indexer repository prepare") {
			t.Errorf("the plan does not say path.repo is missing and how to add it:\n%s", lines(r.Stdout, "data-safety"))
		}
	})

	t.Run("prepare", func(t *testing.T) {
		r := l.Siemctl("indexer", "repository", "prepare", "--dry-run")
		mustCode(t, r, 0, "repository prepare --dry-run")
		if !strings.Contains(r.Stderr, "dry run: nothing is changed") || !strings.Contains(r.Stdout, "path.repo") {
			t.Errorf("dry run:\n%s\n%s", r.Stdout, r.Stderr)
		}
		r = l.Siemctl("indexer", "repository", "prepare", "--yes")
		mustCode(t, r, 0, "repository prepare --yes")
		t.Logf("prepare:\n%s", r.Stderr)
		r = l.Siemctl("indexer", "repository", "-o", "json")
		mustCode(t, r, 0, "repository show")
		var rep struct {
			PathRepo []string `json:"path_repo"`
			Verified bool     `json:"verified"`
			Location string   `json:"location"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || !rep.Verified || len(rep.PathRepo) == 0 {
			t.Fatalf("repository show after prepare: %v %s", err, r.Stdout)
		}
		if fi, err := os.Stat(rep.Location); err != nil || !fi.IsDir() {
			t.Errorf("location %s: %v", rep.Location, err)
		}
		if r := l.Siemctl("indexer", "repository", "prepare", "--yes"); r.Code != 0 || !strings.Contains(r.Stderr, "nothing to do") {
			t.Errorf("second prepare: exit %d\n%s", r.Code, r.Stderr)
		}
		healthOK(t, l)
	})

	t.Run("plan", func(t *testing.T) {
		r := siemctlEnv(t, l, snap, "upgrade", "plan", "--to", "4.10.0")
		mustCode(t, r, 0, "upgrade plan in snapshot mode")
		if !strings.Contains(r.Stdout, "data safety snapshot into siemctl") || !strings.Contains(r.Stdout, "first snapshot") {
			t.Errorf("the plan does not show the mode and its cost:\n%s", lines(r.Stdout, "data-safety", "data safety"))
		}
	})

	// indexer.data_safety auto (the default) chooses the prepared repository.
	t.Run("plan-auto", func(t *testing.T) {
		r := l.Siemctl("upgrade", "plan", "--to", "4.10.0")
		mustCode(t, r, 0, "upgrade plan with the default data safety")
		if !strings.Contains(r.Stdout, "data safety auto → snapshot into siemctl") {
			t.Errorf("auto did not choose the prepared repository:\n%s", lines(r.Stdout, "data-safety", "data safety"))
		}
	})

	t.Run("apply", func(t *testing.T) {
		c.putPersistent(t, "search.max_buckets", "12345") // the site's own setting: the rollback puts it back
		before = c.stableCounts(t)
		t.Logf("alerts before (without probe events): %v", before)
		countsFile := filepath.Join(t.TempDir(), "at-snapshot.json")
		hook := fmt.Sprintf("indexer/snapshot=SIEMCTL_E2E_COUNTS_OUT=%s SIEMCTL_E2E_COUNTS_LAB=%s %s -test.run '^TestE2EDataSafetyCountsHelper$'", countsFile, l.Dir, os.Args[0])
		r := siemctlEnv(t, l, append(snap, "SIEMCTL_TEST_EXEC_AT="+hook), "upgrade", "apply", "--to", "4.10.0", "--yes")
		mustCode(t, r, 0, "upgrade apply in snapshot mode")
		b, err := os.ReadFile(countsFile)
		if err == nil {
			err = json.Unmarshal(b, &atSnapshot)
		}
		if err != nil {
			t.Fatalf("counts at the snapshot: %v", err)
		}
		t.Logf("alerts when the snapshot was taken (shipper stopped): %v", atSnapshot)
		for idx, n := range before {
			if atSnapshot[idx] < n {
				t.Errorf("when the snapshot was taken index %s had %d documents, %d before the run", idx, atSnapshot[idx], n)
			}
		}
		t.Logf("data safety steps:\n%s", lines(r.Stderr, "indexer/snapshot", "indexer/backup-data", "preflight/data-safety"))
		wantPackages(t, l.Dir, "4.10.0-1")
		if v := c.openSearchVersion(t); v != "2.19.3" {
			t.Errorf("OpenSearch %s after the upgrade, want 2.19.3", v)
		}
		healthOK(t, l)
		after := c.realCounts(t)
		// the manager's own events during the run are alerts too: none lost, some added
		for idx, n := range before {
			if after[idx] < n {
				t.Errorf("after the upgrade index %s has %d documents, had %d", idx, after[idx], n)
			}
		}
		t.Logf("alerts after the upgrade (without probe events): %v", after)
		st := status(t, l)
		logTime(t, "snapshot-mode upgrade", st)
		for _, s := range st.Steps {
			if s.ID == "indexer/snapshot" && s.Status != "ok" {
				t.Errorf("indexer/snapshot %s, want ok", s.Status)
			}
		}
		if !strings.Contains(r.Stderr, "no copy of") {
			t.Errorf("indexer/backup-data did not record the snapshot instead of copying:\n%s", lines(r.Stderr, "indexer/backup-data"))
		}
	})

	t.Run("rollback", func(t *testing.T) {
		// Alerts raised during the upgrade (after the snapshot) are what a
		// snapshot rollback cannot bring back; alerts raised by the
		// rollback's own restarts come after mark.
		upgraded := c.stableCounts(t)
		mark := time.Now()
		r := siemctlEnv(t, l, snap, "rollback", "--yes")
		mustCode(t, r, 0, "rollback from the snapshot")
		t.Logf("restore steps:\n%s", lines(r.Stderr, "restore/indexer-data", "restore/indexer-snapshot"))
		wantPackages(t, l.Dir, "4.9.0-1")
		if v := c.openSearchVersion(t); v != "2.11.1" {
			t.Errorf("OpenSearch %s after the rollback, want 2.11.1", v)
		}
		healthOK(t, l)
		after := c.countsBefore(t, mark)
		t.Logf("alerts after the upgrade %v; after the rollback, raised before it: %v", upgraded, after)
		var idx []string
		if len(atSnapshot) < len(before) {
			t.Fatalf("no counts from the snapshot's moment: %v", atSnapshot)
		}
		for i, n := range atSnapshot {
			idx = append(idx, i)
			// Nothing the snapshot holds is lost. More is possible and right: an alert the manager
			// wrote after the snapshot that the shipper had not sent when the rollback stopped it is
			// sent by the real Filebeat once the old version runs again (its registry goes on).
			if after[i] < n {
				t.Errorf("after the rollback index %s has %d documents raised before it, the snapshot holds %d (%d before the upgrade, %d after it)", i, after[i], n, before[i], upgraded[i])
			}
		}
		for i, n := range after {
			if _, ok := atSnapshot[i]; !ok && n > 0 {
				t.Errorf("after the rollback index %s has %d documents that were not there before", i, n)
			}
		}
		sort.Strings(idx)
		t.Logf("alert indices back: %s", strings.Join(idx, ", "))
		st := status(t, l)
		if st.Status != engine.StatusSucceeded {
			t.Errorf("rollback run %s", st.Status)
		}
		logTime(t, "snapshot-mode rollback", st)
		// The restore raised the empty cluster's recovery settings first; they are back as before the upgrade.
		if !strings.Contains(r.Stderr, "node_concurrent_recoveries unset (default 2) → 32") || !strings.Contains(r.Stderr, "indexer/recoveries-back ok") {
			t.Errorf("the restore did not raise the recovery settings:\n%s", lines(r.Stderr, "restore/indexer-snapshot", "recoveries-back"))
		}
		for _, k := range []string{"node_initial_primaries_recoveries", "node_concurrent_recoveries"} {
			if v := c.persistent(t, "cluster.routing.allocation."+k); v != "" {
				t.Errorf("%s %s after the rollback, unset before the upgrade", k, v)
			}
		}
		// The old version started on an empty data directory: the site's persistent settings are back.
		if v := c.persistent(t, "search.max_buckets"); v != "12345" || !strings.Contains(r.Stderr, "persistent settings put back as recorded before the upgrade: search.max_buckets") {
			t.Errorf("search.max_buckets %q after the rollback, 12345 before the upgrade:\n%s", v, lines(r.Stderr, "restore/indexer-snapshot"))
		}

		// The new version's data directory the rollback set aside: the plan
		// warns, prune removes it (a dry run first), and nothing else.
		aside := ".siemctl-" + strings.ToLower(st.RunID)
		r = l.Siemctl("upgrade", "prune", "--dry-run")
		mustCode(t, r, 0, "upgrade prune --dry-run")
		if !strings.Contains(r.Stdout, aside+" (") {
			t.Errorf("prune --dry-run does not list the set-aside %s:\n%s", aside, r.Stdout)
		}
		r = l.Siemctl("upgrade", "plan", "--to", "4.10.0")
		if !strings.Contains(r.Stdout, "set-aside data directory") {
			t.Errorf("the plan does not warn of the set-aside data directory:\n%s", lines(r.Stdout, "data-safety", "data safety"))
		}
		r = l.Siemctl("upgrade", "prune", "--yes", "-o", "json")
		mustCode(t, r, 0, "upgrade prune --yes")
		var pr struct {
			Removed []struct {
				Path string `json:"path"`
			} `json:"removed"`
			Freed int64 `json:"freed_bytes"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &pr); err != nil || len(pr.Removed) != 1 || !strings.HasSuffix(pr.Removed[0].Path, aside) || pr.Freed <= 0 {
			t.Fatalf("prune: %+v %v\n%s", pr, err, r.Stderr)
		}
		if _, err := os.Lstat(pr.Removed[0].Path); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", pr.Removed[0].Path, err)
		}
		healthOK(t, l)
	})

	// A red cluster after the indexer upgrade: the automatic rollback's undos
	// set the new data aside, start the old version empty and restore this
	// run's (incremental) snapshot into it.
	t.Run("red-cluster-rolls-back-from-snapshot", func(t *testing.T) {
		seen := c.realCounts(t)
		fault := fmt.Sprintf("%s fault --dir %s cluster-red", filepath.Join(binDir, "siemlab"), l.Dir)
		r := siemctlEnv(t, l, append(snap, "SIEMCTL_TEST_EXEC_AT=indexer/health="+fault), "upgrade", "apply", "--to", "4.10.0", "--yes")
		mustCode(t, r, 10, "apply in snapshot mode with a red cluster after the indexer upgrade")
		t.Logf("automatic rollback:\n%s", lines(r.Stderr, "indexer/snapshot", "indexer/health", "undo ", "run "))
		st := status(t, l)
		if st.Status != engine.StatusRolledBack {
			t.Errorf("run %s, want rolled-back", st.Status)
		}
		logTime(t, "snapshot-mode auto-rollback", st)
		if !strings.Contains(r.Stderr, "undo indexer/snapshot (restore.indexer_snapshot) …  deadline 2h") {
			t.Errorf("the snapshot restore undo has no deadline for its shards:\n%s", lines(r.Stderr, "undo indexer/snapshot"))
		}
		l.Siemlab("heal", "cluster-red")
		wantPackages(t, l.Dir, "4.9.0-1")
		if v := c.openSearchVersion(t); v != "2.11.1" {
			t.Errorf("OpenSearch %s after the automatic rollback, want 2.11.1", v)
		}
		healthOK(t, l)
		if v := c.persistent(t, "cluster.routing.allocation.node_concurrent_recoveries"); v != "" {
			t.Errorf("node_concurrent_recoveries %s after the automatic rollback, unset before the upgrade", v)
		}
		after := c.realCounts(t)
		for i, n := range seen {
			if after[i] < n {
				t.Errorf("after the automatic rollback index %s has %d documents, had %d before the run", i, after[i], n)
			}
		}
	})
}
