package conformance

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestCasesCoverEveryFormat: for every operation the table exercises, every
// parameter the real specification gives one of Wazuh's string formats (or
// a boolean, integer or enum) has a case the real validator refuses on that
// parameter, so a target that skips one parameter's check (the emulator once
// took older_than=2w) fails the table.
func TestCasesCoverEveryFormat(t *testing.T) {
	s := loadSpec(t)
	const base = "http://conformance.invalid"
	router := s.router(t, base)
	type op struct{ method, path string }
	refused := map[op][]*http.Request{}
	var ops []op
	for _, c := range Cases {
		req, err := http.NewRequest(c.method, base+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		route, _, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("case %q: no operation %s %s in the real specification", c.name, c.method, c.path)
		}
		k := op{c.method, route.Path}
		if !slices.Contains(ops, k) {
			ops = append(ops, k)
		}
		if c.want == 400 && c.code == 0 {
			refused[k] = append(refused[k], req)
		}
	}
	for _, o := range ops {
		pi := s.doc.Paths.Find(o.path)
		params := append(slices.Clone(pi.Parameters), pi.GetOperation(o.method).Parameters...)
		for _, p := range params {
			v := p.Value
			if !checked(v) {
				continue
			}
			found := false
			for _, req := range refused[o] {
				switch v.In {
				case "query":
					found = found || req.URL.Query().Has(v.Name)
				case "path":
					found = found || pathHasBadValue(o.path, req.URL, v.Name)
				}
			}
			if !found {
				t.Errorf("%s %s: no case gives %s parameter %s a value the real validator refuses (%s)", o.method, o.path, v.In, v.Name, describe(v))
			}
		}
	}
}

// checked reports whether the validator checks the parameter's value
// beyond "a string": a Wazuh format, a type or an enum.
func checked(p *openapi3.Parameter) bool {
	if p.Schema == nil || p.Schema.Value == nil || p.Name == "pretty" || p.Name == "wait_for_complete" {
		return false // pretty and wait_for_complete: booleans on every operation, covered once ("pretty not a boolean")
	}
	sc := p.Schema.Value
	if sc.Items != nil && sc.Items.Value != nil {
		sc = sc.Items.Value
	}
	_, wazuh := wazuhFormats[sc.Format]
	return wazuh || len(sc.Enum) > 0 || sc.Type.Is("boolean") || sc.Type.Is("integer")
}

func describe(p *openapi3.Parameter) string {
	sc := p.Schema.Value
	if sc.Items != nil && sc.Items.Value != nil {
		sc = sc.Items.Value
	}
	if sc.Format != "" {
		return "format " + sc.Format
	}
	return strings.Join(sc.Type.Slice(), ",")
}

// pathHasBadValue reports whether u fills the template's {name} with
// something other than digits (the path ids are "numbers").
func pathHasBadValue(template string, u *url.URL, name string) bool {
	ts, us := strings.Split(template, "/"), strings.Split(u.Path, "/")
	for i := range ts {
		if ts[i] == "{"+name+"}" && i < len(us) {
			return strings.Trim(us[i], "0123456789") != "" || len(us[i]) < 3
		}
	}
	return false
}
