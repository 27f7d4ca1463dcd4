package diagnose

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/units"
)

// TestCertificateFinding: an indexer that died with an expired node certificate is explained by
// the certificate (which file, when), with the fix on the indexer's side, ahead of the generic
// log lines; a valid certificate gives no certificate finding.
func TestCertificateFinding(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "root-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: now.AddDate(-2, 0, 0), NotAfter: now.AddDate(8, 0, 0)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	nodeKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	node := func(from, to time.Time) []byte {
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node-1"},
			DNSNames: []string{"localhost"}, NotBefore: from, NotAfter: to, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &nodeKey.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	k8, _ := x509.MarshalPKCS8PrivateKey(nodeKey)
	for _, tc := range []struct {
		name string
		cert []byte
		want bool
		// running: the readiness wait ended with the node up and not answering, its log
		// saying what the certificate leads to (security not initialised, handshakes)
		running bool
	}{
		{"expired", node(now.AddDate(-1, 0, 0), now.AddDate(0, 0, -3)), true, false},
		{"valid", node(now.AddDate(0, 0, -1), now.AddDate(1, 0, 0)), false, false},
		{"expired, at the end of the readiness wait", node(now.AddDate(-1, 0, 0), now.AddDate(0, 0, -3)), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			conf := filepath.Join(root, "etc/siem-indexer")
			files := map[string][]byte{
				"opensearch.yml":        []byte("plugins.security.ssl.http.pemcert_filepath: certs/indexer.pem\nplugins.security.ssl.http.pemkey_filepath: certs/indexer-key.pem\nplugins.security.ssl.http.pemtrustedcas_filepath: certs/root-ca.pem\n"),
				"certs/indexer.pem":     tc.cert,
				"certs/indexer-key.pem": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k8}),
				"certs/root-ca.pem":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
			}
			for n, b := range files {
				_ = os.MkdirAll(filepath.Dir(filepath.Join(conf, n)), 0o755)
				if err := os.WriteFile(filepath.Join(conf, n), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(root, "none.yaml")})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Indexer.ConfigDir, cfg.Shipper.ConfigDir, cfg.Dashboard.ConfigDir = conf, filepath.Join(root, "none"), filepath.Join(root, "none")
			lines := []string{"[2026-11-27T12:00:01,000][ERROR][o.o.b.OpenSearchUncaughtExceptionHandler] [node-1] uncaught exception in thread [main]",
				"Caused by: java.security.cert.CertificateExpiredException: NotAfter: Tue Nov 24 12:00:00 UTC 2026"}
			st := units.UnitStatus{Name: "siem-indexer.service", ActiveState: "failed", SubState: "failed", Result: "exit-code"}
			if tc.running {
				st = units.UnitStatus{Name: "siem-indexer.service", ActiveState: "active", SubState: "running", MainPID: 4242}
				lines = []string{"[2026-11-27T12:00:01,000][INFO ][o.o.n.Node               ] [node-1] version[2.11.1], pid[4242], build[tar/x/2023-11-15T00:00:00Z], OS[Linux/6.8.0/amd64], JVM[Eclipse Adoptium/OpenJDK 64-Bit Server VM/17.0.9/17.0.9+9]",
					"[2026-11-27T12:00:40,000][ERROR][o.o.s.s.h.n.SecuritySSLNettyHttpServerTransport] [node-1] Exception during establishing a SSL connection: javax.net.ssl.SSLHandshakeException: Received fatal alert: bad_certificate",
					"[2026-11-27T12:00:55,000][ERROR][o.o.s.f.SecurityFilter   ] [node-1] OpenSearch Security not initialized for cluster:monitor/health"}
			}
			in := Input{Component: "indexer", Unit: st, Config: cfg,
				LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return lines, nil }}
			r := Diagnose(context.Background(), in, Host{Now: func() time.Time { return now }, ProcRoot: filepath.Join(root, "proc")})
			var cert *Finding
			for i := range r.Findings {
				if r.Findings[i].Kind == KindCertificate {
					cert = &r.Findings[i]
				}
			}
			if !tc.want {
				if cert != nil {
					t.Fatalf("certificate finding for a valid certificate: %+v", cert)
				}
				return
			}
			if cert == nil || r.Cause().Kind != KindCertificate {
				t.Fatalf("findings %+v", r.Findings)
			}
			certFile := filepath.Join(conf, "certs/indexer.pem")
			if !strings.Contains(cert.Cause, certFile+" expired on 2026-11-24") || !strings.Contains(cert.Fix, "replace "+certFile) ||
				strings.Contains(cert.Fix, "ca_file") || !strings.Contains(strings.Join(cert.Evidence, "\n"), "Exception") {
				t.Errorf("finding %+v", cert)
			}
		})
	}
}

// TestDashboardIndexerFinding: a dashboard whose opensearch.hosts points at a closed port, with
// the lines OpenSearch Dashboards logs then, is explained by its hosts with the fix that sets them.
func TestDashboardIndexerFinding(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "etc/siem-dashboard")
	_ = os.MkdirAll(conf, 0o755)
	if err := os.WriteFile(filepath.Join(conf, "dashboard.yml"), []byte("opensearch.hosts: https://127.0.0.1:1\nopensearch.username: kibanaserver\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(root, "none.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dashboard.ConfigDir = conf
	lines := []string{`{"type":"log","@timestamp":"2026-11-27T12:00:01Z","tags":["error","opensearch","data"],"pid":61,"message":"[ConnectionError]: connect ECONNREFUSED 127.0.0.1:1"}`}
	in := Input{Component: "dashboard", Unit: units.UnitStatus{Name: "siem-dashboard.service", ActiveState: "active", SubState: "running"}, Config: cfg,
		LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return lines, nil }}
	r := Diagnose(context.Background(), in, Host{ProcRoot: filepath.Join(root, "proc")})
	f := r.Cause()
	if f.Kind != KindDashboardIndexer || !strings.Contains(f.Cause, "https://127.0.0.1:1 (connection refused) does not answer") ||
		!strings.Contains(f.Fix, "set opensearch.hosts in "+filepath.Join(conf, "dashboard.yml")+" to the indexer ("+cfg.Indexer.URL) {
		t.Errorf("%+v", r.Findings)
	}
}
