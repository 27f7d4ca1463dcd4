package shipper

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// ingestCommon lists the ingest-common processors with the options this pipeline may use (OpenSearch
// modules/ingest-common). Anything else would fail to load into the lab's OpenSearch.
var ingestCommon = map[string]map[string]bool{
	"json":            {"field": true, "target_field": true, "add_to_root": true, "ignore_failure": true, "tag": true},
	"date":            {"field": true, "target_field": true, "formats": true, "timezone": true, "locale": true, "ignore_failure": true, "tag": true},
	"date_index_name": {"field": true, "index_name_prefix": true, "date_rounding": true, "date_formats": true, "timezone": true, "locale": true, "index_name_format": true, "ignore_failure": true, "tag": true},
	"remove":          {"field": true, "ignore_missing": true, "ignore_failure": true, "tag": true},
	"set":             {"field": true, "value": true, "override": true, "ignore_failure": true, "tag": true},
}

type doc map[string]any

func getPath(d doc, path string) (any, bool) {
	cur := any(map[string]any(d))
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func setPath(d doc, path string, v any) {
	m := map[string]any(d)
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// simulate runs the pipeline over a document like OpenSearch's _simulate (for the processors above).
func simulate(t *testing.T, pipeline []byte, src doc) (doc, string) {
	var p struct {
		Processors []map[string]map[string]any `json:"processors"`
		OnFailure  []map[string]map[string]any `json:"on_failure"`
	}
	if err := json.Unmarshal(pipeline, &p); err != nil {
		t.Fatal(err)
	}
	d := doc{"_source": map[string]any(src), "_index": "filebeat-7.10.2-2025.03.02"}
	run := func(procs []map[string]map[string]any, failMsg string) error {
		for _, pr := range procs {
			for typ, o := range pr {
				src := d["_source"].(map[string]any)
				err := func() error {
					switch typ {
					case "json":
						s, _ := src[o["field"].(string)].(string)
						var m map[string]any
						if err := json.Unmarshal([]byte(s), &m); err != nil {
							return fmt.Errorf("json: %w", err)
						}
						for k, v := range m {
							src[k] = v
						}
					case "date", "date_index_name":
						v, ok := getPath(doc(src), o["field"].(string))
						if !ok {
							return fmt.Errorf("field [%s] not present as part of path [%s]", o["field"], o["field"])
						}
						ts, err := time.Parse("2006-01-02T15:04:05.000-0700", v.(string))
						if err != nil {
							return err
						}
						if typ == "date" {
							setPath(doc(src), o["target_field"].(string), ts.UTC().Format("2006-01-02T15:04:05.000Z"))
						} else {
							d["_index"] = o["index_name_prefix"].(string) + ts.UTC().Format("2006.01.02")
						}
					case "remove":
						delete(src, o["field"].(string))
					case "set":
						setPath(doc(src), o["field"].(string), strings.ReplaceAll(o["value"].(string), "{{ _ingest.on_failure_message }}", failMsg))
					}
					return nil
				}()
				if err != nil && o["ignore_failure"] != true {
					return err
				}
			}
		}
		return nil
	}
	if err := run(p.Processors, ""); err != nil {
		if err := run(p.OnFailure, err.Error()); err != nil {
			t.Fatalf("on_failure failed: %v", err)
		}
	}
	return doc(d["_source"].(map[string]any)), d["_index"].(string)
}

func TestPipelineValidForOpenSearch(t *testing.T) {
	var p map[string]any
	if err := json.Unmarshal(Pipeline(), &p); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "description,on_failure,processors" {
		t.Fatalf("top-level keys %v", keys)
	}
	for _, list := range []string{"processors", "on_failure"} {
		for i, pr := range p[list].([]any) {
			m := pr.(map[string]any)
			if len(m) != 1 {
				t.Fatalf("%s[%d] has %d processors", list, i, len(m))
			}
			for typ, opts := range m {
				allowed, ok := ingestCommon[typ]
				if !ok {
					t.Fatalf("%s[%d]: processor %q is not in ingest-common", list, i, typ)
				}
				for k := range opts.(map[string]any) {
					if !allowed[k] {
						t.Fatalf("%s[%d]: %s has unknown option %q", list, i, typ, k)
					}
				}
			}
		}
		if list == "on_failure" {
			for _, pr := range p[list].([]any) {
				if _, drop := pr.(map[string]any)["drop"]; drop {
					t.Fatal("on_failure must not drop documents")
				}
			}
		}
	}
}

func TestPipelineSimulation(t *testing.T) {
	alert := `{"timestamp":"2025-03-02T23:31:07.412-0300","rule":{"id":"5710"},"agent":{"id":"000","name":"siem01"},"id":"1.0"}`
	src := doc{"message": alert, "fields": map[string]any{"index_prefix": "siem-alerts-4.x-"}, "agent": map[string]any{"type": "filebeat"},
		"log": map[string]any{"offset": 0}, "ecs": map[string]any{}, "host": map[string]any{}, "input": map[string]any{}}
	out, index := simulate(t, Pipeline(), src)
	if index != "siem-alerts-4.x-2025.03.03" {
		t.Fatalf("index %s (daily rounding is UTC)", index)
	}
	if out["@timestamp"] != "2025-03-03T02:31:07.412Z" || out["agent"].(map[string]any)["name"] != "siem01" {
		t.Fatalf("doc %v", out)
	}
	for _, f := range removedFields {
		if _, ok := out[f]; ok {
			t.Fatalf("field %s not removed", f)
		}
	}
	bad, index := simulate(t, Pipeline(), doc{"message": "not json"})
	if index != "filebeat-7.10.2-2025.03.02" || bad["error"] == nil || !strings.Contains(bad["error"].(map[string]any)["message"].(string), "json") {
		t.Fatalf("failure not recorded: %v %s", bad, index)
	}
}
