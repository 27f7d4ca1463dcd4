package lab

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A real OpenSearch answer to GET wazuh-alerts-*/_search?size=0 (2.19, two indices of 3 shards).
const probeFull = `{"took":3,"timed_out":false,"_shards":{"total":6,"successful":6,"skipped":0,"failed":0},"hits":{"max_score":null,"hits":[]}}`

// One shard's copies all on a stopped node: the search answers 200 with the failure listed.
const probePartial = `{"took":5,"timed_out":false,"_shards":{"total":6,"successful":5,"skipped":0,"failed":1,"failures":[{"shard":1,"index":"wazuh-alerts-4.x-2026.11.28","node":null,"reason":{"type":"no_shard_available_action_exception","reason":null}}]},"hits":{"max_score":null,"hits":[]}}`

const probeUnavailable = `{"error":{"root_cause":[],"type":"search_phase_execution_exception","reason":"all shards failed","phase":"query","grouped":true,"failed_shards":[]},"status":503}`

func TestSearchProbe(t *testing.T) {
	// Two nodes, /a and /b, on one TLS server. Node b refuses every search (503); node a answers
	// in turn: full, partial, 500, full; the fifth search to a ends the run.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var a atomic.Int32 // searches that reached node a
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/wazuh-alerts-*/_search") || r.URL.Query().Get("size") != "0" {
			t.Errorf("unexpected request %s", r.URL)
		}
		if strings.HasPrefix(r.URL.Path, "/b/") {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(probeUnavailable))
			return
		}
		switch a.Add(1) {
		case 1, 4:
			_, _ = w.Write([]byte(probeFull))
		case 2:
			_, _ = w.Write([]byte(probePartial))
		case 3:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":{"type":"exception","reason":"boom"},"status":500}`))
		default:
			cancel()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	p := &SearchProbe{URLs: []string{srv.URL + "/a", srv.URL + "/b"}, User: "admin", Password: "s3cret", Client: srv.Client(), Every: 20 * time.Millisecond}
	res, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// try 1 starts at a: full; try 2 at b (503) then a: partial; try 3 at a (500) then b (503):
	// none; try 4 at b (503) then a: full; try 5 is cut by the end of the run and not counted.
	if res.Tries != 4 || res.Answered != 3 || res.AllShards != 2 || res.Share != 0.5 {
		t.Errorf("tries/answered/all shards/share = %d/%d/%d/%v, want 4/3/2/0.5", res.Tries, res.Answered, res.AllShards, res.Share)
	}
	if res.ByNode[srv.URL+"/a"] != 3 || res.ByNode[srv.URL+"/b"] != 0 {
		t.Errorf("by node = %v, want a 3, b 0", res.ByNode)
	}
	// The gap runs from try 1's answer to try 4's: within the run, not zero (ticks may be dropped
	// on a loaded machine, so no lower bound in intervals).
	if res.LongestGap <= 0 || res.LongestGap > res.Took || res.LongestGapS != res.LongestGap.Seconds() {
		t.Errorf("longest gap %s (%v s), want above 0 and at most the run's %s", res.LongestGap, res.LongestGapS, res.Took)
	}
	if !strings.Contains(res.LastFailure, "no node answered") || !strings.Contains(res.LastFailure, "HTTP 500 exception boom") ||
		!strings.Contains(res.LastFailure, "HTTP 503 search_phase_execution_exception all shards failed") {
		t.Errorf("last failure %q, want both nodes' refusals", res.LastFailure)
	}
	for _, want := range []string{"4 tries", "3 answered", "2 with every shard (50.00%)"} {
		if !strings.Contains(res.String(), want) {
			t.Errorf("summary %q lacks %q", res.String(), want)
		}
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tries":4`, `"share_all_shards":0.5`, `"longest_gap_s":`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON %s lacks %s", data, want)
		}
	}
}

func TestSearchProbe_AllFullAndBadCredentials(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`Unauthorized`))
			return
		}
		_, _ = w.Write([]byte(probeFull))
	}))
	defer srv.Close()
	run := func(pw string) SearchProbeResult {
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		p := &SearchProbe{URLs: []string{srv.URL}, User: "admin", Password: pw, Client: srv.Client(), Every: 10 * time.Millisecond}
		res, err := p.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run("s3cret")
	if res.Tries == 0 || res.AllShards != res.Tries || res.Share != 1 || res.LongestGap != 0 || res.LastFailure != "" {
		t.Errorf("healthy node: %+v, want every try answered with every shard and no gap", res)
	}
	res = run("wrong")
	if res.Tries == 0 || res.Answered != 0 || res.Share != 0 || !strings.Contains(res.LastFailure, "HTTP 401") || res.LongestGap <= 0 {
		t.Errorf("refused credentials: %+v, want no try answered, HTTP 401 named, a gap", res)
	}
	if _, err := (&SearchProbe{}).Run(context.Background()); err == nil {
		t.Error("a probe without URLs ran")
	}
}

// A pattern that matches no index answers 200 with no shard: the probe searched nothing, so the
// try is not counted as answered with every shard (a probe of the wrong pattern cannot pass).
func TestSearchProbeNoShardIsNotWhole(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32 // searches so far
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/siem-alerts-*/_search") {
			t.Errorf("unexpected request %s, want the probe's Index", r.URL)
		}
		if n.Add(1) > 2 {
			cancel()
			<-r.Context().Done()
			return
		}
		_, _ = w.Write([]byte(`{"took":1,"timed_out":false,"_shards":{"total":0,"successful":0,"skipped":0,"failed":0},"hits":{"max_score":0.0,"hits":[]}}`))
	}))
	defer srv.Close()
	p := &SearchProbe{URLs: []string{srv.URL}, Client: srv.Client(), Every: 20 * time.Millisecond, Index: "siem-alerts-*"}
	res, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tries != 2 || res.Answered != 2 || res.AllShards != 0 || !strings.Contains(res.LastFailure, "no shard of siem-alerts-*") {
		t.Errorf("tries/answered/all shards = %d/%d/%d, last failure %q; want 2/2/0 and the empty pattern named", res.Tries, res.Answered, res.AllShards, res.LastFailure)
	}
}
