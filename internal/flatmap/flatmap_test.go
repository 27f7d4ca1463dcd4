package flatmap

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestFlatten: nested maps and dotted keys name the same settings; lists and scalars stay
// leaves; an empty map adds nothing.
func TestFlatten(t *testing.T) {
	doc := `
server.port: 5601
server:
  ssl:
    enabled: true
opensearch.hosts: ["https://a:9200", "https://b:9200"]
path: {}
`
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"server.port":        5601,
		"server.ssl.enabled": true,
		"opensearch.hosts":   []any{"https://a:9200", "https://b:9200"},
	}
	if got := Flatten(m); !reflect.DeepEqual(got, want) {
		t.Fatalf("Flatten = %#v, want %#v", got, want)
	}
	if got := Flatten(nil); len(got) != 0 {
		t.Fatalf("Flatten(nil) = %#v, want empty", got)
	}
}

// TestLookupList: a present setting is its text; null and absent are not there; a single string
// is a list of one.
func TestLookupList(t *testing.T) {
	m := map[string]any{"port": 5601, "user": "", "gone": nil, "hosts": []any{"a", 9200}, "ca": "/ca.pem"}
	for _, tc := range []struct {
		key  string
		want string
		ok   bool
	}{{"port", "5601", true}, {"user", "", true}, {"gone", "", false}, {"absent", "", false}} {
		if s, ok := Lookup(m, tc.key); s != tc.want || ok != tc.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.key, s, ok, tc.want, tc.ok)
		}
	}
	if got := List(m, "hosts"); !reflect.DeepEqual(got, []string{"a", "9200"}) {
		t.Errorf("List(hosts) = %q", got)
	}
	if got := List(m, "ca"); !reflect.DeepEqual(got, []string{"/ca.pem"}) {
		t.Errorf("List(ca) = %q", got)
	}
	if got := List(m, "port"); got != nil {
		t.Errorf("List(port) = %q, want nil", got)
	}
}
