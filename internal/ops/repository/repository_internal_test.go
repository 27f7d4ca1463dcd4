package repository

import (
	"strings"
	"testing"
)

func TestWithPathRepo(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{"absent (stock)", "cluster.name: siem\npath.data: /var/lib/siem-indexer\n", "path.data: /var/lib/siem-indexer\n\n# added by siemctl indexer repository prepare: snapshot repositories\npath.repo: [\"/srv/snap\"]\n", ""},
		{"scalar", "path.repo: /a\nnode.name: n\n", "path.repo: [\"/a\", \"/srv/snap\"]\nnode.name: n\n", ""},
		{"comma string", "path.repo: \"/a,/b\"\n", "path.repo: [\"/a\", \"/b\", \"/srv/snap\"]\n", ""},
		{"flow list", "path.repo: [/a, '/b']\n", "path.repo: [\"/a\", \"/b\", \"/srv/snap\"]\n", ""},
		{"block list", "path.repo:\n  - /a\n  - /b\nnode.name: n\n", "path.repo: [\"/a\", \"/b\", \"/srv/snap\"]\nnode.name: n\n", ""},
		{"nested", "path:\n  data: /d\n  repo: [/a]\n", "", "nested path: block"},
		{"broken yaml", "path.repo: [\n", "", "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withPathRepo([]byte(tt.in), "/srv/snap")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(got), tt.want) {
				t.Errorf("got\n%s\nwant suffix\n%s", got, tt.want)
			}
		})
	}
}
