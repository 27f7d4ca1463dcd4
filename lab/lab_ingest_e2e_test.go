//go:build e2e

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestE2EIngestPipeline proves that the prepared OpenSearch homes of both versions carry working
// ingest-common and lang-mustache modules: a pipeline with json, date, date_index_name, remove and
// set processors (templated values, on_failure) is stored in the real node and a document indexed
// through it lands in the dated index, on 2.11.1 and, after the package upgrade, on 2.19.3.
func TestE2EIngestPipeline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	l := upTest(ctx, t, 740, slog.LevelInfo)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	cache := &Cache{Dir: filepath.Join(home, ".cache", "siemlab")}
	for _, v := range SetOf(l.st.Version) { // the releases built with the installed one
		osv, _ := OpenSearchVersion(v)
		if ok, why := cache.Ready(osv); !ok {
			t.Errorf("cache of OpenSearch %s not ready after up: %s", osv, why)
		}
		if ok, why := homeReady(l.distDir(osv), osv, Modules); !ok {
			t.Errorf("lab farm of OpenSearch %s not ready: %s", osv, why)
		}
	}

	checkIngest(ctx, t, l, "2.11.1", "2024-03-05T10:11:12.000+0000", "2024.03.05")

	upgradeIndexer(ctx, t, l)
	checkIngest(ctx, t, l, "2.19.3", "2025-11-30T23:59:59.123+0000", "2025.11.30")
	c, err := l.indexer()
	if err != nil {
		t.Fatal(err)
	}
	// The pipeline stored by 2.11.1 survived the upgrade (cluster state) and still loads.
	if _, err := c.ok(ctx, http.MethodGet, "/_ingest/pipeline/siemlab-e2e-2.11.1", nil); err != nil {
		t.Errorf("pipeline of 2.11.1 after upgrade: %v", err)
	}
	assertDown(ctx, t, l)
}

func checkIngest(ctx context.Context, t *testing.T, l *Lab, osv, timestamp, day string) {
	t.Helper()
	c, err := l.indexer()
	if err != nil {
		t.Fatal(err)
	}
	// The node runs osv and loaded both modules.
	body, err := c.ok(ctx, http.MethodGet, "/_nodes/_local/plugins,ingest", nil)
	if err != nil {
		t.Fatal(err)
	}
	var nodes struct {
		Nodes map[string]struct {
			Version string
			Modules []struct{ Name string }
			Ingest  struct{ Processors []struct{ Type string } }
		}
	}
	if err := json.Unmarshal(body, &nodes); err != nil || len(nodes.Nodes) != 1 {
		t.Fatalf("_nodes: %v %.300s", err, body)
	}
	for _, n := range nodes.Nodes {
		if n.Version != osv {
			t.Errorf("node version %s, want %s", n.Version, osv)
		}
		var mods, procs []string
		for _, m := range n.Modules {
			mods = append(mods, m.Name)
		}
		for _, p := range n.Ingest.Processors {
			procs = append(procs, p.Type)
		}
		for _, m := range []string{"ingest-common", "lang-mustache", "transport-netty4"} {
			if !slices.Contains(mods, m) {
				t.Errorf("OpenSearch %s: module %s not loaded (modules %v)", osv, m, mods)
			}
		}
		for _, p := range []string{"json", "date", "date_index_name", "remove", "set"} {
			if !slices.Contains(procs, p) {
				t.Errorf("OpenSearch %s: no %s processor (processors %v)", osv, p, procs)
			}
		}
	}

	id := "siemlab-e2e-" + osv
	prefix := "siemlab-e2e-" + osv + "-"
	pipeline := map[string]any{
		"description": "siemlab e2e",
		"processors": []any{
			map[string]any{"json": map[string]any{"field": "message", "add_to_root": true}},
			map[string]any{"date": map[string]any{"field": "timestamp", "target_field": "@timestamp", "formats": []string{"ISO8601"}}},
			map[string]any{"date_index_name": map[string]any{"field": "timestamp", "date_rounding": "d",
				"index_name_prefix": prefix, "index_name_format": "yyyy.MM.dd"}},
			map[string]any{"remove": map[string]any{"field": "message"}},
			map[string]any{"remove": map[string]any{"field": "beat", "ignore_missing": true}},
			map[string]any{"set": map[string]any{"field": "agent_copy", "value": "{{ agent.name }}"}},
		},
		"on_failure": []any{
			map[string]any{"set": map[string]any{"field": "error.message", "value": "{{ _ingest.on_failure_message }}"}},
			map[string]any{"set": map[string]any{"field": "error.processor", "value": "{{ _ingest.on_failure_processor_type }}"}},
		},
	}
	if _, err := c.ok(ctx, http.MethodPut, "/_ingest/pipeline/"+id, pipeline); err != nil {
		t.Fatalf("OpenSearch %s: PUT pipeline: %v", osv, err)
	}

	// A good document lands in the dated index, parsed, without message, with the rendered template.
	alert := fmt.Sprintf(`{"timestamp":%q,"rule":{"level":5,"description":"sshd: authentication failed"},"agent":{"name":"web-1"}}`, timestamp)
	body, err = c.ok(ctx, http.MethodPost, "/siemlab-e2e-src/_doc?refresh=true&pipeline="+id, map[string]any{"message": alert, "beat": map[string]any{"name": "x"}})
	if err != nil {
		t.Fatalf("OpenSearch %s: index through pipeline: %v", osv, err)
	}
	var res struct {
		Index string `json:"_index"`
		ID    string `json:"_id"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if want := prefix + day; res.Index != want {
		t.Fatalf("OpenSearch %s: document landed in %q, want %q (%s)", osv, res.Index, want, body)
	}
	body, err = c.ok(ctx, http.MethodGet, "/"+res.Index+"/_doc/"+res.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Source map[string]any `json:"_source"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	src := doc.Source
	if _, ok := src["message"]; ok {
		t.Errorf("OpenSearch %s: message not removed: %v", osv, src)
	}
	if _, ok := src["beat"]; ok {
		t.Errorf("OpenSearch %s: beat not removed: %v", osv, src)
	}
	if src["agent_copy"] != "web-1" {
		t.Errorf("OpenSearch %s: agent_copy = %v, want web-1 (mustache template rendered)", osv, src["agent_copy"])
	}
	if ts, _ := src["@timestamp"].(string); !strings.HasPrefix(ts, strings.ReplaceAll(day, ".", "-")+"T") {
		t.Errorf("OpenSearch %s: @timestamp = %v", osv, src["@timestamp"])
	}
	if rule, _ := src["rule"].(map[string]any); rule["level"] != float64(5) {
		t.Errorf("OpenSearch %s: rule = %v", osv, src["rule"])
	}

	// A bad timestamp runs on_failure: the document stays in the request's index with the failure
	// message rendered (not the template text).
	body, err = c.ok(ctx, http.MethodPost, "/siemlab-e2e-src/_doc?refresh=true&pipeline="+id, map[string]any{"message": `{"timestamp":"not-a-date"}`})
	if err != nil {
		t.Fatalf("OpenSearch %s: index failing document: %v", osv, err)
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Index != "siemlab-e2e-src" {
		t.Fatalf("OpenSearch %s: failing document: %v %s", osv, err, body)
	}
	body, err = c.ok(ctx, http.MethodGet, "/siemlab-e2e-src/_doc/"+res.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var failed struct {
		Source struct {
			Error struct{ Message, Processor string }
		} `json:"_source"`
	}
	if err := json.Unmarshal(body, &failed); err != nil {
		t.Fatal(err)
	}
	e := failed.Source.Error
	if e.Processor != "date" || e.Message == "" || strings.Contains(e.Message, "{{") {
		t.Errorf("OpenSearch %s: on_failure error = %+v, want processor date and a rendered message", osv, e)
	}
	t.Logf("OpenSearch %s: ingest ok (%s; failure: %s)", osv, res.Index, e.Message)
}
