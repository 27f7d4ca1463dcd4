package shipper

import "encoding/json"

// removedFields are the Beat bookkeeping fields the pipeline drops (as the Wazuh module does).
var removedFields = []string{"message", "ecs", "beat", "input_type", "tags", "count", "@version", "log", "offset",
	"type", "host", "fields", "event", "fileset", "service", "input"}

// Pipeline returns the ingest pipeline of the alerts fileset. Only ingest-common processors are used.
// Unlike the Wazuh module (on_failure: drop) a failing document is kept and records the failure in
// error.message / error.processor, so mapping problems are visible instead of silently lost.
func Pipeline() []byte {
	procs := []any{
		map[string]any{"json": map[string]any{"field": "message", "add_to_root": true}},
		map[string]any{"date": map[string]any{"field": "timestamp", "target_field": "@timestamp", "formats": []string{"ISO8601"}, "ignore_failure": false}},
		map[string]any{"date_index_name": map[string]any{"field": "timestamp", "date_rounding": "d",
			"index_name_prefix": "siem-alerts-4.x-", "index_name_format": "yyyy.MM.dd", "ignore_failure": false}},
	}
	for _, f := range removedFields {
		procs = append(procs, map[string]any{"remove": map[string]any{"field": f, "ignore_missing": true, "ignore_failure": true}})
	}
	p := map[string]any{
		"description": "SIEM alerts pipeline",
		"processors":  procs,
		"on_failure": []any{
			map[string]any{"set": map[string]any{"field": "error.message", "value": "{{ _ingest.on_failure_message }}"}},
			map[string]any{"set": map[string]any{"field": "error.processor", "value": "{{ _ingest.on_failure_processor_type }}"}},
		},
	}
	b, _ := json.MarshalIndent(p, "", "  ")
	return b
}
