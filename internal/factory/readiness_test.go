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
	"github.com/siemctl/siemctl/internal/ops/diagnose"
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

// A shipper none of whose output hosts answers (a port mistyped in filebeat.yml, made by hand)
// while the indexer answers siemctl: not ready, named with filebeat.yml's hosts and exit class
// config mismatch; with the indexer silent too, or a TLS failure, it is health's to judge.
func TestShipperReadyNamesAMisdirectedOutput(t *testing.T) {
	const refused = "elasticsearch: https://127.0.0.1:13571...\n  parse url... OK\n  connection...\n    parse host... OK\n    dns lookup... OK\n    addresses: 127.0.0.1\n    dial up... ERROR dial tcp 127.0.0.1:13571: connect: connection refused\n"
	const badCA = "elasticsearch: https://127.0.0.1:13570...\n  parse url... OK\n  connection...\n    parse host... OK\n    dns lookup... OK\n    addresses: 127.0.0.1\n    dial up... OK\n  TLS...\n    security: server's certificate chain verification is enabled\n    handshake... ERROR x509: certificate signed by unknown authority\n"
	for _, tt := range []struct {
		name, transcript string
		indexerUp, ready bool
	}{
		{"output port mistyped, the indexer answers", refused, true, false},
		{"output refused, the indexer down too", refused, false, true},
		{"the output's CA refused", badCA, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=UTF-8")
				_, _ = w.Write([]byte(nodeRoot))
			}))
			defer srv.Close()
			url := srv.URL
			if !tt.indexerUp {
				srv.Close()
			}
			dir := t.TempDir()
			conf := filepath.Join(dir, "shipper")
			clitest.WriteFile(t, filepath.Join(conf, "filebeat.yml"), "output.elasticsearch:\n  hosts: [\"127.0.0.1:13571\"]\n", 0o600)
			bin := filepath.Join(dir, "filebeat")
			clitest.WriteFile(t, bin, "#!/bin/sh\ncase \"$*\" in *\"test config\"*) echo 'Config OK'; exit 0;; esac\nprintf '%s' '"+tt.transcript+"'\nexit 1\n", 0o755)
			pw := clitest.WriteSecret(t, dir, "pw", "Generated-1")
			ca := filepath.Join(dir, "ca.pem")
			clitest.WriteFile(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})), 0o600)
			cfg := clitest.LoadConfig(t, dir, "state_dir: \""+dir+"/state\"\nindexer: {url: \""+url+"\", ca_file: \""+ca+"\", password_file: \""+pw+"\"}\nshipper: {binary: \""+bin+"\", config_dir: \""+conf+"\"}\n")
			p := factory.NewClients(context.Background(), cfg, factory.ClientOptions{}).Ready()
			err := p.Ready(context.Background(), services.Component{Name: "shipper"})
			if tt.ready {
				if err != nil {
					t.Fatalf("not ready: %v", err)
				}
				return
			}
			var re *services.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, diagnose.ErrConfigMismatch) ||
				!strings.Contains(re.Cause, "its output https://127.0.0.1:13571 does not answer while the indexer answers siemctl at "+url) ||
				!strings.Contains(re.Fix, "set output.elasticsearch.hosts in "+filepath.Join(conf, "filebeat.yml")) {
				t.Fatalf("err %v (%+v)", err, re)
			}
		})
	}
}
