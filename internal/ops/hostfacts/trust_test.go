package hostfacts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
)

var trustNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

type trustCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTrustCA(t *testing.T, cn string) trustCA {
	return newTrustCAFrom(t, cn, trustNow.AddDate(-2, 0, 0))
}

func newTrustCAFrom(t *testing.T, cn string, notBefore time.Time) trustCA {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn, Organization: []string{"Wazuh"}}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: notBefore, NotAfter: trustNow.AddDate(8, 0, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return trustCA{c, k, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca trustCA) issue(t *testing.T, key *ecdsa.PrivateKey, from, to time.Time) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "node-1", Organization: []string{"Wazuh"}},
		DNSNames: []string{"localhost", "node-1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: from, NotAfter: to}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(t *testing.T, k *ecdsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	testenv.WriteFile(t, path, data, 0o600)
}

// stackDirs lays out the indexer's, shipper's and dashboard's config directories as the real
// packages do (opensearch.yml with the http pem settings; filebeat.yml; opensearch_dashboards.yml
// with flat dotted keys), each trusting its own copy of ca.
func stackDirs(t *testing.T, ca trustCA, nodeCert, nodeKey []byte) (idx, ship, dash string) {
	root := t.TempDir()
	idx, ship, dash = filepath.Join(root, "etc/wazuh-indexer"), filepath.Join(root, "etc/filebeat"), filepath.Join(root, "etc/wazuh-dashboard")
	write(t, filepath.Join(idx, "opensearch.yml"), []byte(`network.host: "127.0.0.1"
node.name: "node-1"
plugins.security.ssl.http.pemcert_filepath: certs/indexer.pem
plugins.security.ssl.http.pemkey_filepath: certs/indexer-key.pem
plugins.security.ssl.http.pemtrustedcas_filepath: certs/root-ca.pem
plugins.security.ssl.transport.pemcert_filepath: certs/indexer.pem
`))
	write(t, filepath.Join(idx, "certs/indexer.pem"), nodeCert)
	write(t, filepath.Join(idx, "certs/indexer-key.pem"), nodeKey)
	write(t, filepath.Join(idx, "certs/root-ca.pem"), ca.pem)
	write(t, filepath.Join(ship, "filebeat.yml"), []byte("output.elasticsearch:\n  hosts: [\"127.0.0.1:9200\"]\n  protocol: https\n  username: ${username}\n  password: ${password}\n  ssl.certificate_authorities:\n    - "+filepath.Join(ship, "certs/root-ca.pem")+"\n"))
	write(t, filepath.Join(ship, "certs/root-ca.pem"), ca.pem)
	write(t, filepath.Join(dash, "opensearch_dashboards.yml"), []byte("server.host: 0.0.0.0\nopensearch.hosts: https://localhost:9200\nopensearch.ssl.verificationMode: certificate\nopensearch.ssl.certificateAuthorities: [\""+filepath.Join(dash, "certs/root-ca.pem")+"\"]\n"))
	write(t, filepath.Join(dash, "certs/root-ca.pem"), ca.pem)
	return idx, ship, dash
}

func TestDiagnoseIndexerCert(t *testing.T) {
	ca, foreign := newTrustCA(t, "root-ca"), newTrustCA(t, "other-root-ca")
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	valid := ca.issue(t, key, trustNow.AddDate(-1, 0, 0), trustNow.AddDate(9, 0, 0))
	youngCA := newTrustCAFrom(t, "root-ca", trustNow.Add(-time.Hour))
	tests := []struct {
		name      string
		cert, key []byte
		siemctlCA []byte   // nil: the components' CA
		ca        *trustCA // nil: ca
		kinds     []string
		summary   string
		fix       string
		notFix    string
	}{
		{name: "valid", cert: valid, key: keyPEM(t, key)},
		{name: "expired", cert: ca.issue(t, key, trustNow.AddDate(-1, -1, 0), trustNow.AddDate(0, 0, -30)), key: keyPEM(t, key),
			kinds: []string{CauseExpired}, summary: "expired on 2026-10-28 (30 days ago)", fix: "issue a certificate for CN=node-1,O=Wazuh (SAN localhost, node-1, 127.0.0.1) signed by the CA in", notFix: "ca_file"},
		{name: "foreign CA", cert: foreign.issue(t, key, trustNow.AddDate(-1, 0, 0), trustNow.AddDate(1, 0, 0)), key: keyPEM(t, key),
			kinds: []string{CauseForeignCA}, summary: "is issued by CN=other-root-ca,O=Wazuh, not by the CA the indexer, shipper, dashboard trust", fix: "replace it", notFix: "ca_file"},
		// The lab's case: the CA is younger than the expired certificate's validity.
		{name: "expired, older than its CA", cert: youngCA.issue(t, key, trustNow.AddDate(-1, -1, 0), trustNow.AddDate(0, 0, -30)), key: keyPEM(t, key), ca: &youngCA,
			kinds: []string{CauseExpired}, summary: "expired on 2026-10-28", fix: "renew it", notFix: "ca_file"},
		{name: "key mismatch", cert: valid, key: keyPEM(t, otherKey),
			kinds: []string{CauseKeyMismatch}, summary: "do not belong together", fix: "put back the key"},
		{name: "siemctl trusts another CA", cert: valid, key: keyPEM(t, key), siemctlCA: foreign.pem,
			kinds: []string{CauseSiemctlCA}, summary: "did not sign the indexer certificate, which the indexer, shipper, dashboard accept", fix: "set indexer.ca_file to "},
		{name: "expired and foreign", cert: foreign.issue(t, key, trustNow.AddDate(-2, 0, 0), trustNow.AddDate(0, 0, -1)), key: keyPEM(t, key),
			kinds: []string{CauseExpired, CauseForeignCA}, notFix: "ca_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cca := ca
			if tt.ca != nil {
				cca = *tt.ca
			}
			idx, ship, dash := stackDirs(t, cca, tt.cert, tt.key)
			siemctlCA := filepath.Join(idx, "certs/root-ca.pem")
			if tt.siemctlCA != nil {
				siemctlCA = filepath.Join(t.TempDir(), "siemctl-ca.pem")
				write(t, siemctlCA, tt.siemctlCA)
			}
			in := IndexerTrustOf(idx, ship, dash, siemctlCA)
			in.Now = trustNow
			if len(in.Components) != 3 {
				t.Fatalf("components %+v", in.Components)
			}
			causes := DiagnoseIndexerCert(in)
			var kinds []string
			var all, fixes string
			for _, c := range causes {
				kinds = append(kinds, c.Kind)
				all += c.Summary + "\n"
				fixes += c.Fix + "\n"
			}
			if strings.Join(kinds, ",") != strings.Join(tt.kinds, ",") {
				t.Fatalf("kinds %v, want %v:\n%s", kinds, tt.kinds, all)
			}
			if !strings.Contains(all, tt.summary) || !strings.Contains(fixes, tt.fix) {
				t.Errorf("summary %q fix %q; want %q / %q", all, fixes, tt.summary, tt.fix)
			}
			if tt.notFix != "" && strings.Contains(fixes, tt.notFix) {
				t.Errorf("fix %q suggests %q", fixes, tt.notFix)
			}
			if tt.name == "siemctl trusts another CA" && !strings.Contains(fixes, filepath.Join(idx, "certs/root-ca.pem")) {
				t.Errorf("fix %q does not name the components' CA", fixes)
			}
			if tt.name == "expired" && !strings.Contains(fixes, filepath.Join(idx, "certs/indexer.pem")) {
				t.Errorf("fix %q does not name the certificate file", fixes)
			}
		})
	}
}

// TestDiagnoseServedCert: a node still serving an old certificate while its file is renewed needs
// a restart, not a new certificate.
func TestDiagnoseServedCert(t *testing.T) {
	ca := newTrustCA(t, "root-ca")
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	idx, ship, dash := stackDirs(t, ca, ca.issue(t, key, trustNow.AddDate(0, 0, -1), trustNow.AddDate(2, 0, 0)), keyPEM(t, key))
	old, _ := x509.ParseCertificate(func() []byte {
		b, _ := pem.Decode(ca.issue(t, key, trustNow.AddDate(-2, 0, 0), trustNow.AddDate(0, 0, -2)))
		return b.Bytes
	}())
	in := IndexerTrustOf(idx, ship, dash, filepath.Join(idx, "certs/root-ca.pem"))
	in.Now, in.Served = trustNow, old
	causes := DiagnoseIndexerCert(in)
	if len(causes) != 1 || causes[0].Kind != CauseStale || !strings.Contains(causes[0].Fix, "siemctl services restart indexer") {
		t.Fatalf("%+v", causes)
	}
}

func TestReadComponentConfs(t *testing.T) {
	ca := newTrustCA(t, "root-ca")
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	idx, ship, dash := stackDirs(t, ca, ca.issue(t, key, trustNow, trustNow.AddDate(1, 0, 0)), keyPEM(t, key))
	it, err := ReadIndexerTLS(idx)
	if err != nil || it.CertFile != filepath.Join(idx, "certs/indexer.pem") || it.CAFile != filepath.Join(idx, "certs/root-ca.pem") {
		t.Errorf("indexer %+v %v", it, err)
	}
	so, err := ReadShipperOutput(ship)
	if err != nil || strings.Join(so.Hosts, ",") != "127.0.0.1:9200" || so.Protocol != "https" || len(so.CAFiles) != 1 {
		t.Errorf("shipper %+v %v", so, err)
	}
	dc, err := ReadDashboardConf(dash)
	if err != nil || strings.Join(dc.Hosts, ",") != "https://localhost:9200" || dc.VerifyMode != "certificate" || len(dc.CAFiles) != 1 {
		t.Errorf("dashboard %+v %v", dc, err)
	}
}
