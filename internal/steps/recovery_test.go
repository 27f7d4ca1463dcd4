package steps_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/steps"
)

const initialPrimaries = "cluster.routing.allocation.node_initial_primaries_recoveries"

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
			var rec struct{ Was, Raised string }
			if ok, err := e.Get(steps.KeyPrimariesRecoveries, &rec); !ok || err != nil || rec.Was != tc.want || rec.Raised != "32" {
				t.Fatalf("journaled %+v (%v %v), want was %q", rec, ok, err, tc.want)
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
	if err == nil || !strings.Contains(err.Error(), "reads back unset") {
		t.Fatalf("got %v", err)
	}
}
