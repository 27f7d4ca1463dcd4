package snapshot

import (
	"reflect"
	"strings"
	"testing"
)

// A document read back has every list sorted by its key (equal keys keep their order) and
// written as [], never null.
func TestUnmarshalNormalizes(t *testing.T) {
	d, err := Unmarshal([]byte(`{"schema_version":1,"id":"x",
		"indexer":{"alerts_templates":["b","a"],"indices":[{"name":"z"},{"name":"a"}],"disk":null},
		"manager":{"api_users":["wazuh-wui","admin"]},
		"health":[{"id":"disk","status":"WARN"},{"id":"agents","status":"OK"},{"id":"disk","status":"CRIT"}],
		"errors":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Indexer.AlertsTemplates; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("alerts_templates %v", got)
	}
	if got := d.Indexer.Indices; got[0].Name != "a" || got[1].Name != "z" {
		t.Errorf("indices %v", got)
	}
	if got := d.Manager.APIUsers; !reflect.DeepEqual(got, []string{"admin", "wazuh-wui"}) {
		t.Errorf("api_users %v", got)
	}
	want := []HealthResult{{ID: "agents", Status: "OK"}, {ID: "disk", Status: "WARN"}, {ID: "disk", Status: "CRIT"}}
	if !reflect.DeepEqual(d.Health, want) {
		t.Errorf("health %v, want %v (stable)", d.Health, want)
	}
	b, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") || !strings.Contains(string(b), `"disk": []`) || !strings.Contains(string(b), `"errors": []`) {
		t.Errorf("document holds null or lacks []:\n%s", b)
	}
}
