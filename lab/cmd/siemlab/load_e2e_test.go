//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
)

// checkLoad fills 40 daily indices through siemlab's load and checks them through the indexer's own
// API: every day present, the documents counted, the shard limit raised when the new indices need it.
func checkLoad(ctx context.Context, t *testing.T, l *lab.Lab, idx, pw string, hc *http.Client) {
	t.Helper()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, idx+path, strings.NewReader(body))
		req.SetBasicAuth("admin", pw)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// A low shard limit, as on a host that never raised it: 40 more shards do not fit in 60% of 50.
	if code, body := call(http.MethodPut, "/_cluster/settings", `{"persistent":{"cluster.max_shards_per_node":50}}`); code != 200 {
		t.Fatalf("set shard limit: %d %s", code, body)
	}
	defer call(http.MethodPut, "/_cluster/settings", `{"persistent":{"cluster.max_shards_per_node":null}}`)
	now := time.Now()
	rep, err := l.Load(ctx, lab.LoadOptions{Days: 40, Bytes: 4 << 20, Seed: 3, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indices != 40 || rep.Docs < 2000 || rep.SourceBytes < 4<<20 || rep.StoreBytes <= 0 {
		t.Errorf("load report %+v: want 40 indices, >= 2000 docs, >= 4 MiB", rep)
	}
	if rep.ShardLimitWas != 50 || rep.ShardLimit < 100 {
		t.Errorf("shard limit %d -> %d, want 50 -> >= 100", rep.ShardLimitWas, rep.ShardLimit)
	}
	_, body := call(http.MethodGet, "/_cat/indices/"+rep.Prefix+"*?format=json&h=index,docs.count,health", "")
	var rows []struct {
		Index  string `json:"index"`
		Docs   string `json:"docs.count"`
		Health string `json:"health"`
	}
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatalf("_cat/indices: %v\n%s", err, body)
	}
	today := rep.Prefix + now.UTC().Format("2006.01.02")
	var days int
	var docs int64
	for _, r := range rows {
		if r.Index == today {
			continue // the live index
		}
		days++
		n, _ := strconv.ParseInt(r.Docs, 10, 64)
		docs += n
		if r.Health != "green" {
			t.Errorf("%s is %s", r.Index, r.Health)
		}
	}
	if days != 40 || docs != rep.Docs {
		t.Errorf("indexer holds %d loaded indices with %d documents, load said 40 with %d", days, docs, rep.Docs)
	}
	// The documents are alerts siemctl can search: the newest loaded day has sshd failures.
	code, body := call(http.MethodPost, "/"+rep.Last+"/_count", `{"query":{"term":{"rule.id":"5710"}}}`)
	if code != 200 || strings.Contains(body, `"count":0`) {
		t.Errorf("count of rule 5710 in %s: %d %s", rep.Last, code, body)
	}
}
