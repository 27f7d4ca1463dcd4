package emu

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Template returns the alerts index template (legacy _template body) for a manager version and the
// alerts index prefix it applies to (siem-alerts-4.x-, wazuh-alerts-4.x-). Its index settings are
// the real wazuh-template.json's: 3 shards, number_of_replicas 0 with auto_expand_replicas "0-1"
// (which wins: no replica on one node, one on two or more), refresh 5s, 10000 fields. Like the
// real one, "version" stays 1 while the mappings change between releases: 4.10 adds
// data.vulnerability.under_evaluation and data.vulnerability.scanner.source.
func Template(version, alertsPrefix string) []byte {
	kw := map[string]any{"type": "keyword"}
	props := map[string]any{
		"@timestamp": map[string]any{"type": "date"},
		"timestamp":  map[string]any{"type": "date", "format": "date_optional_time||epoch_millis"},
		"id":         kw,
		"full_log":   map[string]any{"type": "text"},
		"location":   kw,
		"rule": map[string]any{"properties": map[string]any{
			"id": kw, "level": map[string]any{"type": "long"}, "description": kw, "groups": kw,
			"firedtimes": map[string]any{"type": "long"}, "mail": map[string]any{"type": "boolean"},
			"pci_dss": kw, "gdpr": kw, "hipaa": kw, "nist_800_53": kw, "tsc": kw, "gpg13": kw,
			"mitre": map[string]any{"properties": map[string]any{"id": kw, "tactic": kw, "technique": kw}},
		}},
		"agent":   map[string]any{"properties": map[string]any{"id": kw, "name": kw, "ip": kw}},
		"manager": map[string]any{"properties": map[string]any{"name": kw}},
		"decoder": map[string]any{"properties": map[string]any{"parent": kw, "name": kw}},
		"predecoder": map[string]any{"properties": map[string]any{
			"program_name": kw, "timestamp": kw, "hostname": kw}},
		"data": map[string]any{"properties": map[string]any{
			"srcip": map[string]any{"type": "ip"}, "srcport": kw, "srcuser": kw, "dstuser": kw,
			"command": kw, "tty": kw, "pwd": kw,
		}},
		"error": map[string]any{"properties": map[string]any{"message": map[string]any{"type": "text"}, "processor": kw}},
	}
	if newer(version) {
		data := props["data"].(map[string]any)["properties"].(map[string]any)
		data["vulnerability"] = map[string]any{"properties": map[string]any{
			"under_evaluation": map[string]any{"type": "boolean"},
			"scanner":          map[string]any{"properties": map[string]any{"source": kw}},
		}}
	}
	tpl := map[string]any{
		"order":          0,
		"index_patterns": []string{alertsPrefix + "*"},
		"settings": map[string]any{
			"index.refresh_interval":           "5s",
			"index.number_of_shards":           "3",
			"index.number_of_replicas":         "0",
			"index.auto_expand_replicas":       "0-1",
			"index.mapping.total_fields.limit": 10000,
			"index.query.default_field":        []string{"full_log", "rule.description", "agent.name", "location"},
		},
		"mappings": map[string]any{
			"dynamic_templates": []any{map[string]any{"string_as_keyword": map[string]any{
				"mapping": map[string]any{"type": "keyword"}, "match_mapping_type": "string"}}},
			"date_detection": false,
			"properties":     props,
		},
		"version": 1,
	}
	b, err := json.MarshalIndent(tpl, "", "  ")
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// newer reports whether version is 4.10 or later.
func newer(version string) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > 4 || (ma == 4 && mi >= 10)
}
