package lab

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
)

// The wazuh profile's certificates have the Wazuh certs tool's subjects (O and OU Wazuh), and
// OpenSearch's admin_dn and nodes_dn name them the way it prints them.
func TestGenerateCertsWazuh(t *testing.T) {
	c, err := GenerateCerts(CertOptions{Profile: Profiles["wazuh"], Bits: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ got, want string }{
		{c.Admin.Cert.Subject.String(), "CN=admin,OU=Wazuh,O=Wazuh,L=California,C=US"},
		{c.Node.Cert.Subject.String(), Profiles["wazuh"].DN("node-1")},
		{c.API.Cert.Subject.CommonName, "wazuh-manager"},
	} {
		if tc.got != tc.want {
			t.Errorf("subject %q, want %q", tc.got, tc.want)
		}
	}
	yml := opensearchYML(IndexerSpec{Profile: Profiles["wazuh"], Version: "4.9.0", Root: "/r", HTTPPort: 9200, TransPort: 9300})
	for _, want := range []string{`- "CN=admin,OU=Wazuh,O=Wazuh,L=California,C=US"`, `- "CN=node-1,OU=Wazuh,O=Wazuh,L=California,C=US"`,
		"pemtrustedcas_filepath: /r/etc/wazuh-indexer/certs/root-ca.pem", "path.data: /r/var/lib/wazuh-indexer", "cluster.name: wazuh-cluster"} {
		if !strings.Contains(yml, want) {
			t.Errorf("opensearch.yml lacks %q:\n%s", want, yml)
		}
	}
}

func TestGenerateCerts(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c, err := GenerateCerts(CertOptions{Now: now, Bits: 1024})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.CA.Cert)
	tests := []struct {
		name    string
		pair    CertPair
		dn      string
		usage   x509.ExtKeyUsage
		host    string // verified as server name when non-empty
		wantDNS []string
	}{
		{"node", c.Node, "CN=node-1,OU=Siem,O=Siem,L=California,C=US", x509.ExtKeyUsageServerAuth, "127.0.0.1", []string{"localhost", "node-1"}},
		{"node as client (transport)", c.Node, "CN=node-1,OU=Siem,O=Siem,L=California,C=US", x509.ExtKeyUsageClientAuth, "", nil},
		{"admin", c.Admin, Profiles["siem"].DN("admin"), x509.ExtKeyUsageClientAuth, "", nil},
		{"dashboard", c.Dashboard, "CN=dashboard,OU=Siem,O=Siem,L=California,C=US", x509.ExtKeyUsageServerAuth, "localhost", nil},
		{"manager API", c.API, "CN=siem-manager,OU=Siem,O=Siem,L=California,C=US", x509.ExtKeyUsageServerAuth, "127.0.0.1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pair.Cert.Subject.String(); got != tt.dn {
				t.Errorf("DN = %q, want %q", got, tt.dn)
			}
			_, err := tt.pair.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.host, KeyUsages: []x509.ExtKeyUsage{tt.usage}, CurrentTime: now})
			if err != nil {
				t.Errorf("verify: %v", err)
			}
			if tt.wantDNS != nil && len(tt.pair.Cert.DNSNames) != len(tt.wantDNS) {
				t.Errorf("DNS names = %v, want %v", tt.pair.Cert.DNSNames, tt.wantDNS)
			}
			block, _ := pem.Decode(tt.pair.KeyPEM)
			if block == nil || block.Type != "PRIVATE KEY" {
				t.Fatalf("key is not PKCS#8 PEM: %q", block)
			}
			if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
				t.Errorf("parse PKCS#8: %v", err)
			}
			if _, err := tls.X509KeyPair(tt.pair.CertPEM, tt.pair.KeyPEM); err != nil {
				t.Errorf("key does not match certificate: %v", err)
			}
		})
	}
	if !c.CA.Cert.IsCA || c.Node.Cert.IsCA {
		t.Error("CA flags wrong")
	}
	if got := c.Node.Cert.NotAfter.Sub(now); got < 3649*24*time.Hour {
		t.Errorf("validity %v, want 3650 days", got)
	}
	if !c.Node.Cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("node IPs = %v", c.Node.Cert.IPAddresses)
	}
	// An expired check: the certificate must not verify after its validity.
	if _, err := c.Node.Cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now.Add(3651 * 24 * time.Hour)}); err == nil {
		t.Error("verify after expiry succeeded")
	}

	dir := t.TempDir()
	if err := c.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"root-ca.pem": 0o644, "indexer-key.pem": 0o600, "admin-key.pem": 0o600, "admin.pem": 0o644, "api-key.pem": 0o600, "root-ca-key.pem": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
}

func TestGeneratePassword(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		p, err := GeneratePassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != 24 || seen[p] {
			t.Fatalf("password %q: bad length or repeated", p)
		}
		seen[p] = true
		// The manager's password policy (a letter of each case, a digit, a symbol), as siemctl applies it.
		if err := manager.ValidatePassword(p); err != nil {
			t.Fatalf("generated password fails the manager's policy: %v", err)
		}
	}
}
