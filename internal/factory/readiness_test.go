package factory_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/ops/services"
)

// GET / of a real OpenSearch 2.11.1 node (the lab's wazuh-cluster/node-1).
const nodeRoot = `{
  "name" : "node-1",
  "cluster_name" : "wazuh-cluster",
  "cluster_uuid" : "9vVwSOlTRLyLzWJUh7ZzPQ",
  "version" : {
    "distribution" : "opensearch",
    "number" : "2.11.1",
    "build_type" : "tar",
    "build_hash" : "6b1986e964d440be9137eba1413015c31c5a7752",
    "build_date" : "2023-11-29T21:43:10.135035992Z",
    "build_snapshot" : false,
    "lucene_version" : "9.7.0",
    "minimum_wire_compatibility_version" : "7.10.0",
    "minimum_index_compatibility_version" : "7.0.0"
  },
  "tagline" : "The OpenSearch Project: https://opensearch.org/"
}
`

// python3 -m http.server's directory listing.
const httpServerRoot = `<!DOCTYPE HTML>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Directory listing for /</title>
</head>
<body>
<h1>Directory listing for /</h1>
<hr>
<ul>
<li><a href="h35/">h35/</a></li>
</ul>
<hr>
</body>
</html>
`

// Ready means the indexer answers as itself: its node, cluster and version,
// with the names its opensearch.yml sets; any other answer on its address
// is services.ErrNotItself.
func TestIndexerReadyIsItsIdentity(t *testing.T) {
	for _, tt := range []struct {
		name, ctype, body string
		status            int
		yml               string
		ready             bool
		want              string
	}{
		{"the node", "application/json; charset=UTF-8", nodeRoot, 200, "cluster.name: wazuh-cluster\nnode.name: node-1\n", true, ""},
		{"a directory listing", "text/html; charset=utf-8", httpServerRoot, 200, "cluster.name: wazuh-cluster\n", false, "invalid JSON"},
		{"a 404 page", "text/html", "<html><body>Not Found</body></html>", 404, "", false, "404"},
		{"another cluster's node", "application/json", nodeRoot, 200, "cluster.name: siem-cluster\nnode.name: node-1\n", false, `opensearch.yml sets cluster.name "siem-cluster"`},
		{"security plugin still loading", "text/plain; charset=UTF-8", "OpenSearch Security not initialized.", 503, "", true, ""},
		{"its security refuses siemctl's user", "application/json", `{"error":"Unauthorized"}`, 401, "", true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			dir := t.TempDir()
			conf := filepath.Join(dir, "conf")
			clitest.WriteFile(t, filepath.Join(conf, "opensearch.yml"), tt.yml, 0o644)
			pw := clitest.WriteSecret(t, dir, "pw", "Generated-1")
			ca := filepath.Join(dir, "ca.pem")
			clitest.WriteFile(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})), 0o600)
			cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\nindexer: {url: \""+srv.URL+"\", ca_file: "+ca+", config_dir: "+conf+", password_file: "+pw+"}\n")
			p := factory.NewClients(context.Background(), cfg, factory.ClientOptions{}).Ready()
			if p["indexer"] == nil {
				t.Fatalf("no indexer probe: %v", cfg.Indexer)
			}
			err := p.Ready(context.Background(), services.Component{Name: "indexer"})
			if tt.ready {
				if err != nil {
					t.Fatalf("not ready: %v", err)
				}
				return
			}
			if !errors.Is(err, services.ErrNotItself) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want ErrNotItself with %q", err, tt.want)
			}
		})
	}
}
