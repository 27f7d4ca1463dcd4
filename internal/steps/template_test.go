package steps_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

// TestWazuhTemplateDefault: the wazuh profile's template_source is the exact
// manager version's wazuh-template.json where Wazuh's docs fetch it; the
// real 4.9.0 and 4.10.0 templates (served here through Deps.Fetch, the
// network is not reachable) are written to the shipper's config dir and
// loaded, each for its own version.
func TestWazuhTemplateDefault(t *testing.T) {
	tpl := map[string][]byte{
		"4.9.0":  wazuhreal.Read(t, "wazuh-v4.9.0", "wazuh-template.json"),
		"4.10.0": wazuhreal.Read(t, "wazuh-v4.10.0", "wazuh-template.json"),
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/filebeat"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "profile: wazuh\nroot: "+root+"\n")
	srv := templateServer(t, "wazuh")
	d := indexerDepsWith(t, srv, cfg, nil)
	var fetched []string
	d.Fetch = func(_ context.Context, url string) ([]byte, error) {
		fetched = append(fetched, url)
		for v, body := range tpl {
			if url == "https://raw.githubusercontent.com/wazuh/wazuh/v"+v+"/extensions/elasticsearch/7.x/wazuh-template.json" {
				return body, nil
			}
		}
		return nil, fmt.Errorf("fetch %s: HTTP 404", url)
	}
	e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all("4.10.0-1"), rundata.KeyPreviousVersions: all("4.9.0-1")})
	for _, tt := range []struct{ which, v string }{{"target", "4.10.0"}, {"previous", "4.9.0"}} {
		if _, err := run(t, d, e, "shipper.template", map[string]any{"version": tt.which}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(steps.TemplatePath(filepath.Join(root, "etc/filebeat"), "wazuh"))
		if err != nil || sha256.Sum256(got) != sha256.Sum256(tpl[tt.v]) {
			t.Fatalf("%s: the written template is not the real %s one (%v)", tt.which, tt.v, err)
		}
		put, ok := srv.Last("PUT /_template/wazuh")
		if !ok || sha256.Sum256(put.Body) != sha256.Sum256(tpl[tt.v]) {
			t.Fatalf("%s: PUT body is not the real %s template", tt.which, tt.v)
		}
	}
	if len(fetched) != 2 || !strings.Contains(fetched[0], "/v4.10.0/") || !strings.Contains(fetched[1], "/v4.9.0/") {
		t.Errorf("fetched %v", fetched)
	}
}

// TestTemplateSourceSafety: over real HTTP the template is size-capped and
// must be a JSON index template covering the alerts indices; a symlink
// planted at the temporary file is not followed.
func TestTemplateSourceSafety(t *testing.T) {
	real := wazuhreal.Read(t, "wazuh-v4.10.0", "wazuh-template.json")
	bodies := map[string][]byte{
		"/ok/4.10.0/t.json":        real,
		"/huge/4.10.0/t.json":      append([]byte(`{"index_patterns":["wazuh-alerts-4.x-*"],"x":"`), make([]byte, 17<<20)...),
		"/html/4.10.0/t.json":      []byte("<html>rate limited</html>"),
		"/siem/4.10.0/t.json":      []byte(`{"index_patterns":["siem-alerts-4.x-*"],"order":0}`),
		"/nopattern/4.10.0/t.json": []byte(`{"order":0,"mappings":{}}`),
	}
	hs := serveBodies(t, bodies, nil)
	root := t.TempDir()
	conf := filepath.Join(root, "etc/filebeat")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := templateServer(t, "wazuh")
	c := srv.Client(t)
	for _, tt := range []struct{ path, want string }{
		{"huge", "larger than"},
		{"html", "not a JSON object"},
		{"siem", "do not cover the alerts indices wazuh-alerts-4.x-*"},
		{"nopattern", "no index_patterns"},
		{"missing", "HTTP 404"},
		{"ok", ""},
	} {
		cfg := testConfig(t, "profile: wazuh\nroot: "+root+"\nshipper:\n  template_source: "+hs.URL+"/"+tt.path+"/{version}/t.json\n")
		d := depsWith(cfg, nil)
		d.Indexer = clientset.Of[steps.IndexerAPI](c)
		e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all("4.10.0-1")})
		_, err := run(t, d, e, "shipper.template", map[string]any{"version": "target"})
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.path, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.path, err, tt.want)
		}
	}
	// A symlink planted where the temporary file goes is replaced, never
	// written through.
	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := steps.TemplatePath(conf, "wazuh")
	if err := os.Symlink(victim, dst+".siemctl-tmp"); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "profile: wazuh\nroot: "+root+"\nshipper:\n  template_source: "+hs.URL+"/ok/{version}/t.json\n")
	d := depsWith(cfg, nil)
	d.Indexer = clientset.Of[steps.IndexerAPI](c)
	e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all("4.10.0-1")})
	if _, err := run(t, d, e, "shipper.template", map[string]any{"version": "target"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, victim); got != "keep" {
		t.Fatalf("written through a symlink: %q", got)
	}
}
