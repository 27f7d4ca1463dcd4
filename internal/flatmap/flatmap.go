// Package flatmap flattens nested maps (decoded YAML or JSON) into dotted keys, the way
// OpenSearch, the dashboard and Filebeat read their settings: "path.logs" and
// "path: {logs: …}" name the same setting.
package flatmap

import "fmt"

// Flatten returns m's leaves under dotted keys ("server.ssl.enabled"); a nested map adds its
// key and a dot to its children's keys, an empty nested map adds nothing. Leaves (lists
// included) are kept as they are.
func Flatten(m map[string]any) map[string]any {
	out := map[string]any{}
	walk(out, "", m)
	return out
}

func walk(out map[string]any, prefix string, m map[string]any) {
	for k, v := range m {
		if prefix != "" {
			k = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			walk(out, k, sub)
			continue
		}
		out[k] = v
	}
}

// Lookup returns the setting key of a flattened map as text; ok is false when it is absent or
// null.
func Lookup(m map[string]any, key string) (s string, ok bool) {
	if v, ok := m[key]; ok && v != nil {
		return fmt.Sprint(v), true
	}
	return "", false
}

// List returns the setting key of a flattened map as a list of texts: a YAML list, or a single
// string as a list of one (the components accept both); nil when absent or of another kind.
func List(m map[string]any, key string) []string {
	switch v := m[key].(type) {
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	case string:
		return []string{v}
	}
	return nil
}
