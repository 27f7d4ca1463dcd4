package lab

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLoadDays(t *testing.T) {
	now := time.Date(2026, 3, 2, 23, 59, 0, 0, time.FixedZone("x", 5*3600)) // 18:59 UTC
	got := loadDays(now, 3)
	want := []string{"2026-02-27", "2026-02-28", "2026-03-01"}
	for i, d := range got {
		if d.Format("2006-01-02") != want[i] {
			t.Errorf("day %d = %s, want %s", i, d.Format("2006-01-02"), want[i])
		}
	}
}

func TestAlertGenShape(t *testing.T) {
	day := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	a, b := newAlertGen(7, "mgr"), newAlertGen(7, "mgr")
	var total int
	rules := map[string]bool{}
	for i := range 2000 {
		da, db := a.alert(day, i), b.alert(day, i)
		if !bytes.Equal(da, db) {
			t.Fatalf("doc %d differs for the same seed", i)
		}
		total += len(da)
		var doc struct {
			At        string `json:"@timestamp"`
			Timestamp string `json:"timestamp"`
			Rule      struct {
				ID     string   `json:"id"`
				Level  int      `json:"level"`
				Groups []string `json:"groups"`
			} `json:"rule"`
			Agent    struct{ ID, Name string } `json:"agent"`
			Manager  struct{ Name string }     `json:"manager"`
			ID       string                    `json:"id"`
			FullLog  string                    `json:"full_log"`
			Location string                    `json:"location"`
		}
		if err := json.Unmarshal(da, &doc); err != nil {
			t.Fatalf("doc %d: %v\n%s", i, err, da)
		}
		at, err := time.Parse(time.RFC3339, doc.At)
		if err != nil || at.Before(day) || !at.Before(day.AddDate(0, 0, 1)) {
			t.Errorf("doc %d: @timestamp %q not within %s (%v)", i, doc.At, day.Format("2006-01-02"), err)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000-0700", doc.Timestamp); err != nil {
			t.Errorf("doc %d: timestamp %q: %v", i, doc.Timestamp, err)
		}
		if doc.Rule.ID == "" || doc.Rule.Level < 3 || len(doc.Rule.Groups) == 0 || len(doc.Agent.ID) != 3 ||
			doc.Manager.Name != "mgr" || doc.ID == "" || doc.FullLog == "" || doc.Location == "" {
			t.Errorf("doc %d lacks a field an alert has: %s", i, da)
		}
		rules[doc.Rule.ID] = true
	}
	if len(rules) < len(loadRules) {
		t.Errorf("rules seen %v, want all %d kinds", rules, len(loadRules))
	}
	// Real Wazuh alerts are around a kilobyte; the size flag relies on a stable average.
	if avg := total / 2000; avg < 500 || avg > 2000 {
		t.Errorf("average document %d bytes, want 500..2000", avg)
	}
}

// A bulk refused whole (429: the node's circuit breaker) is sent again; of a partly refused one
// only the refused documents are; another refusal fails.
func TestBulkRetry(t *testing.T) {
	var got []string
	answers := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"type":"circuit_breaking_exception"},"status":429}`)
		},
		func(w http.ResponseWriter) {
			io.WriteString(w, `{"errors":true,"items":[{"index":{"status":201}},{"index":{"status":429,"error":{"type":"es_rejected_execution_exception"}}},{"index":{"status":201}}]}`)
		},
		func(w http.ResponseWriter) { io.WriteString(w, `{"errors":false}`) },
		func(w http.ResponseWriter) {
			io.WriteString(w, `{"errors":true,"items":[{"index":{"status":400,"error":{"type":"mapper_parsing_exception"}}}]}`)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		answers[len(got)-1](w)
	}))
	defer srv.Close()
	c := &indexerClient{base: srv.URL, user: "admin", password: "x", hc: srv.Client(), pause: time.Millisecond}
	body := "{\"index\":{}}\n{\"n\":1}\n{\"index\":{}}\n{\"n\":2}\n{\"index\":{}}\n{\"n\":3}\n"
	n, err := c.bulkRetry(t.Context(), []byte(body))
	if err != nil || n != 3 {
		t.Fatalf("indexed %d, %v", n, err)
	}
	if len(got) != 3 || got[0] != body || got[1] != body || got[2] != "{\"index\":{}}\n{\"n\":2}\n" {
		t.Fatalf("requests:\n%q", got)
	}
	if _, err := c.bulkRetry(t.Context(), []byte("{\"index\":{}}\n{\"n\":\"x\"}\n")); err == nil || !strings.Contains(err.Error(), "mapper_parsing_exception") {
		t.Fatalf("a refused document: %v", err)
	}
}

// The bodies hold every day's share of documents, oldest first, each about bulkBytes.
func TestLoadBodies(t *testing.T) {
	days := loadDays(time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), 5)
	var rep LoadReport
	next := loadBodies(newAlertGen(1, "m"), "p-", days, 20000, 30000, &rep)
	perIndex := map[string]int{}
	var bodies, docs int
	for b, last := next(); b != nil; b, last = next() {
		bodies++
		// last is the newest day the body holds; the first body holds the first day alone
		if !strings.Contains(string(b), `"p-`+days[last].Format("2006.01.02")+`"`) || last+1 < len(days) && strings.Contains(string(b), `"p-`+days[last+1].Format("2006.01.02")+`"`) {
			t.Errorf("body %d: last day %d wrong", bodies, last)
		}
		if bodies == 1 && last != 0 {
			t.Errorf("the first body holds days up to %d, want the first day alone", last)
		}
		if len(b) > 30000+4000 {
			t.Errorf("body of %d bytes", len(b))
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		for i := 0; i < len(lines); i += 2 {
			var m struct {
				Index struct {
					Index string `json:"_index"`
				} `json:"index"`
			}
			if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
				t.Fatal(err)
			}
			perIndex[m.Index.Index]++
			docs++
		}
	}
	if len(perIndex) != 5 || docs != int(rep.Docs) || rep.SourceBytes < 5*20000 || bodies < 3 {
		t.Fatalf("%d bodies, %d docs (report %d, %d bytes) per index %v", bodies, docs, rep.Docs, rep.SourceBytes, perIndex)
	}
	if perIndex["p-2026.03.05"] == 0 || perIndex["p-2026.03.09"] == 0 {
		t.Errorf("days %v", perIndex)
	}
}

// An index creation the node refuses for memory (429 from its parent circuit breaker, TRANSIENT)
// or a timed-out cluster state update (503) is sent again; a PERMANENT breaker fails at once; a
// node that keeps refusing fails after loadTries with the fix named.
func TestCreateLoadIndexRetry(t *testing.T) {
	const breaker = `{"error":{"root_cause":[{"type":"circuit_breaking_exception","reason":"[parent] Data too large, data for [<http_request>] would be [1530082560/1.4gb], which is larger than the limit of [1530082099/1.4gb]","bytes_wanted":1530082560,"bytes_limit":1530082099,"durability":"%s"}],"type":"circuit_breaking_exception","reason":"[parent] Data too large, data for [<http_request>] would be [1530082560/1.4gb], which is larger than the limit of [1530082099/1.4gb]","bytes_wanted":1530082560,"bytes_limit":1530082099,"durability":"%s"},"status":429}`
	transient := strings.ReplaceAll(breaker, "%s", "TRANSIENT")
	permanent := strings.ReplaceAll(breaker, "%s", "PERMANENT")
	timeout := `{"error":{"root_cause":[{"type":"process_cluster_event_timeout_exception","reason":"failed to process cluster event (create-index [siem-alerts-4.x-2026.01.02], cause [api]) within 30s"}],"type":"process_cluster_event_timeout_exception","reason":"failed to process cluster event (create-index [siem-alerts-4.x-2026.01.02], cause [api]) within 30s"},"status":503}`
	created := `{"acknowledged":true,"shards_acknowledged":false,"index":"siem-alerts-4.x-2026.01.02"}`
	type answer struct {
		code int
		body string
	}
	for _, tc := range []struct {
		name    string
		answers []answer
		tries   int
		wantErr string
	}{
		{"breaker then created", []answer{{429, transient}, {503, timeout}, {200, created}}, 3, ""},
		{"permanent breaker", []answer{{429, permanent}}, 1, "(permanent)"},
		{"always refused", nil, loadTries, "--indexer-heap"},
		{"other error", []answer{{400, `{"error":{"type":"illegal_argument_exception","reason":"bad mapping"},"status":400}`}}, 1, "bad mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tries int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPut || r.URL.Path != "/siem-alerts-4.x-2026.01.02" {
					t.Errorf("%s %s", r.Method, r.URL.Path)
				}
				a := answer{429, transient}
				if tries < len(tc.answers) {
					a = tc.answers[tries]
				}
				tries++
				w.WriteHeader(a.code)
				io.WriteString(w, a.body)
			}))
			defer srv.Close()
			c := &indexerClient{base: srv.URL, user: "admin", password: "x", hc: srv.Client(), pause: time.Millisecond}
			err := c.createLoadIndex(t.Context(), "siem-alerts-4.x-2026.01.02", json.RawMessage(`{"properties":{}}`))
			if tries != tc.tries {
				t.Errorf("%d requests, want %d", tries, tc.tries)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
