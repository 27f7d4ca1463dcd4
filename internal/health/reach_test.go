package health

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// dashboardConfDir writes the dashboard's config with opensearch.hosts as given (and its keystore).
func dashboardConfDir(t *testing.T, hosts string) string {
	t.Helper()
	dir := t.TempDir()
	conf := "server.port: 5601\nopensearch.hosts: " + hosts + "\nopensearch.ssl.verificationMode: certificate\nopensearch.username: kibanaserver\n"
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yml"), []byte(conf), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opensearch_dashboards.keystore"), []byte("1:AAAA"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDashboardCannotReachIndexer: the real dashboard's 503 "not ready yet" (or a red
// core:opensearch status) is CRIT with the reason found from this host: its opensearch.hosts not
// answering, the indexer itself down, or else its own credentials.
func TestDashboardCannotReachIndexer(t *testing.T) {
	notReady := DashboardAnswer{Status: 503, NotReady: "OpenSearch Dashboards server is not ready yet"}
	red := DashboardAnswer{Status: 302, Location: "/app/login?nextUrl=%2F", State: "red", OpenSearch: "Unable to retrieve version information from OpenSearch nodes."}
	tests := []struct {
		name      string
		ans       DashboardAnswer
		hosts     string
		indexerUp bool
		summary   string
		fix       string
	}{
		{"hosts nowhere", notReady, "https://127.0.0.1:1", true, `not ready: HTTP 503 "OpenSearch Dashboards server is not ready yet": its opensearch.hosts https://127.0.0.1:1 (connection refused) does not answer`,
			"set opensearch.hosts in "},
		{"indexer down", notReady, "https://127.0.0.1:1", false, "the indexer itself is not answering", "start the indexer first"},
		{"red after start", red, "https://127.0.0.1:1", true, "/api/status red: Unable to retrieve version information from OpenSearch nodes.", "set opensearch.hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := healthyWorld()
			w.dash = tt.ans
			if !tt.indexerUp {
				w.ix.infoErr = &netclient.Error{Op: "GET /", Kind: netclient.ErrUnreachable, Err: errors.New("connect: connection refused")}
			}
			e := w.env(t)
			e.Stack.Config.Dashboard.ConfigDir = dashboardConfDir(t, tt.hosts)
			r := runChecks(t, e, 5*time.Second, "dashboard")["dashboard"]
			if r.Status != Crit || !strings.Contains(r.Summary, tt.summary) || !strings.Contains(r.Fix, tt.fix) {
				t.Errorf("%s %q fix %q; want CRIT %q / %q (evidence %v)", r.Status, r.Summary, r.Fix, tt.summary, tt.fix, r.Evidence)
			}
			if tt.indexerUp && !strings.Contains(r.Fix, "siemctl services restart dashboard") {
				t.Errorf("fix %q does not restart the dashboard after the change", r.Fix)
			}
		})
	}
}

// TestShipperOutputInDefaultHealth: an unreachable output is CRIT without --deep.
func TestShipperOutputInDefaultHealth(t *testing.T) {
	w := healthyWorld()
	w.ship.outputOK = false
	r := runAll(t, w, false)["shipper"]
	if r.Status != Crit || !strings.Contains(r.Summary, "output unreachable") || !strings.Contains(r.Summary, "connection refused") || !strings.Contains(r.Fix, "output.elasticsearch.hosts") {
		t.Errorf("%s %q fix %q", r.Status, r.Summary, r.Fix)
	}
	if r := runAll(t, healthyWorld(), false)["shipper"]; r.Status != OK || r.Summary != "test config OK, test output OK" {
		t.Errorf("healthy: %s %q", r.Status, r.Summary)
	}
}

// slowShipper's output test never ends by itself (output hosts that do not answer).
type slowShipper struct{ fakeShipper }

func (slowShipper) TestOutput(ctx context.Context) (OutputTest, error) {
	<-ctx.Done()
	return OutputTest{}, ctx.Err()
}

func TestShipperOutputBoundedByTheDeadline(t *testing.T) {
	e := healthyWorld().env(t)
	e.Stack.Shipper = slowShipper{}
	r := runChecks(t, e, 300*time.Millisecond, "shipper")["shipper"]
	if r.Status != Unknown {
		t.Errorf("%s %q", r.Status, r.Summary)
	}
}

// TestCertificateCausesNameTheComponentSide: a certificate cause replaces the generic advice in
// certs and indexer.api, and secrets no longer says the TLS is fine.
func TestCertificateCausesNameTheComponentSide(t *testing.T) {
	w := healthyWorld()
	w.ix.infoErr = &netclient.Error{Op: "GET /", Kind: netclient.ErrTLS, Err: errors.New("x509: certificate has expired or is not yet valid")}
	e := w.env(t)
	cause := hostfacts.TLSCause{Kind: hostfacts.CauseExpired, File: "/etc/siem-indexer/certs/indexer.pem",
		Summary: "indexer certificate /etc/siem-indexer/certs/indexer.pem expired on 2026-10-28 (30 days ago); the shipper and dashboard reject it",
		Fix:     "renew it: issue a certificate for CN=node-1 … replace /etc/siem-indexer/certs/indexer.pem (and its key …), then siemctl services restart indexer"}
	calls := 0
	e.Stack.IndexerTLS = func(context.Context) ([]hostfacts.TLSCause, error) { calls++; return []hostfacts.TLSCause{cause}, nil }
	res := runChecks(t, e, 5*time.Second, "certs", "indexer.api", "secrets")
	for _, id := range []string{"certs", "indexer.api"} {
		r := res[id]
		if r.Status != Crit || !strings.Contains(r.Summary, "expired on 2026-10-28") || !strings.Contains(r.Fix, "replace /etc/siem-indexer/certs/indexer.pem") || strings.Contains(r.Fix, "ca_file") {
			t.Errorf("%s: %s %q fix %q", id, r.Status, r.Summary, r.Fix)
		}
	}
	if s := res["secrets"]; strings.Contains(s.Summary, "TLS verified") || !strings.Contains(s.Summary, "fails it (see certs)") {
		t.Errorf("secrets: %q", s.Summary)
	}
	if calls != 1 {
		t.Errorf("the certificate was judged %d times in one run", calls)
	}
}
