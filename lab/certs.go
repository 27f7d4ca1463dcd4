package lab

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
)

// CertPair is a PEM certificate and its PKCS#8 PEM key.
type CertPair struct {
	CertPEM []byte
	KeyPEM  []byte
	Cert    *x509.Certificate
	key     *rsa.PrivateKey
}

// Certs is the lab's PKI.
type Certs struct {
	CA        CertPair
	Node      CertPair // indexer node: server+client, 127.0.0.1/localhost
	Admin     CertPair // security admin (DN in plugins.security.authcz.admin_dn)
	Dashboard CertPair // dashboard server
	API       CertPair // manager API server (signed by the CA; used where the profile wants it)
}

// CertOptions controls GenerateCerts.
type CertOptions struct {
	Profile  Profile // the subjects' O/OU and the manager's name (zero: the siem profile)
	Now      time.Time
	Validity time.Duration // default 3650 days, like the Wazuh certs tool
	Bits     int           // RSA key size, default 2048
}

// defaults fills the options left zero.
func (o *CertOptions) defaults() {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Validity == 0 {
		o.Validity = 3650 * 24 * time.Hour
	}
	if o.Bits == 0 {
		o.Bits = 2048
	}
}

// GenerateCerts creates a root CA and the leaf certificates of the lab.
func GenerateCerts(opts CertOptions) (*Certs, error) {
	opts.defaults()
	p := opts.Profile
	if p.Name == "" {
		p = Profiles[DefaultProfile]
	}
	c := &Certs{}
	var err error
	caTmpl := &x509.Certificate{
		Subject:               p.Subject("root-ca"),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	if c.CA, err = issue(caTmpl, nil, opts); err != nil {
		return nil, fmt.Errorf("root CA: %w", err)
	}
	loopback := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	leaves := []struct {
		dst  *CertPair
		cn   string
		ext  []x509.ExtKeyUsage
		dns  []string
		ips  []net.IP
		name string
	}{
		{&c.Node, "node-1", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, []string{"localhost", "node-1"}, loopback, "node"},
		{&c.Admin, "admin", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil, "admin"},
		{&c.Dashboard, "dashboard", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, []string{"localhost", "dashboard"}, loopback, "dashboard"},
		{&c.API, p.Manager, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []string{"localhost", p.Manager}, loopback, "manager API"},
	}
	for _, l := range leaves {
		tmpl := &x509.Certificate{
			Subject:     p.Subject(l.cn),
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: l.ext,
			DNSNames:    l.dns,
			IPAddresses: l.ips,
		}
		if *l.dst, err = issue(tmpl, &c.CA, opts); err != nil {
			return nil, fmt.Errorf("%s certificate: %w", l.name, err)
		}
	}
	return c, nil
}

func issue(tmpl *x509.Certificate, parent *CertPair, opts CertOptions) (CertPair, error) {
	key, err := rsa.GenerateKey(rand.Reader, opts.Bits)
	if err != nil {
		return CertPair{}, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return CertPair{}, fmt.Errorf("serial: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return CertPair{}, fmt.Errorf("marshal public key: %w", err)
	}
	ski := sha256.Sum256(pub)
	tmpl.SerialNumber = serial
	tmpl.SubjectKeyId = ski[:20]
	tmpl.NotBefore = opts.Now.Add(-time.Hour)
	tmpl.NotAfter = opts.Now.Add(opts.Validity)
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.Cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		return CertPair{}, fmt.Errorf("create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return CertPair{}, fmt.Errorf("parse certificate: %w", err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return CertPair{}, fmt.Errorf("marshal PKCS#8 key: %w", err)
	}
	return CertPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		Cert:    cert,
		key:     key,
	}, nil
}

// WriteDir writes every certificate of the PKI to dir as root-ca.pem, <name>.pem and <name>-key.pem
// (keys 0600, certificates 0644), and the CA key as root-ca-key.pem (0600): the lab's PKI is the
// administrator's own, outside the stack's root, and issues node certificates for the certificate
// faults and their fixes (IssueNodeCert).
func (c *Certs) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"root-ca.pem", c.CA.CertPEM, 0o644}, {"root-ca-key.pem", c.CA.KeyPEM, 0o600},
		{"indexer.pem", c.Node.CertPEM, 0o644}, {"indexer-key.pem", c.Node.KeyPEM, 0o600},
		{"admin.pem", c.Admin.CertPEM, 0o644}, {"admin-key.pem", c.Admin.KeyPEM, 0o600},
		{"dashboard.pem", c.Dashboard.CertPEM, 0o644}, {"dashboard-key.pem", c.Dashboard.KeyPEM, 0o600},
		{"api.pem", c.API.CertPEM, 0o644}, {"api-key.pem", c.API.KeyPEM, 0o600},
	}
	for _, f := range files {
		if f.data == nil { // a leaf this host does not have (HostCerts)
			continue
		}
		if err := writeFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes data atomically (temporary file, fsync, rename) with mode, creating the directory.
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := renameio.WriteFile(path, data, mode, renameio.WithStaticPermissions(mode)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// HostCerts is a copy of the PKI for one host of a distributed lab: the same CA and admin
// certificate, and the leaf of the host's role issued for its name and address (an indexer node's
// certificate with CN cn, a manager's API certificate, the dashboard's), under the names the
// single lab's certs directory uses. The leaves of other roles are left out.
func (c *Certs) HostCerts(p Profile, role, cn string, ip net.IP, opts CertOptions) (*Certs, error) {
	opts.defaults()
	ips := []net.IP{ip, net.IPv4(127, 0, 0, 1)}
	out := &Certs{CA: c.CA, Admin: c.Admin}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, l := range []struct {
		role string
		dst  *CertPair
		cn   string
		ext  []x509.ExtKeyUsage
	}{{RoleIndexer, &out.Node, cn, both}, {RoleDashboard, &out.Dashboard, "dashboard", both}, {RoleManager, &out.API, p.Manager, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}} {
		if l.role != role {
			continue
		}
		tmpl := &x509.Certificate{Subject: p.Subject(l.cn), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: l.ext, DNSNames: []string{"localhost", cn}, IPAddresses: ips}
		var err error
		if *l.dst, err = issue(tmpl, &c.CA, opts); err != nil {
			return nil, fmt.Errorf("%s certificate of %s: %w", l.cn, cn, err)
		}
	}
	return out, nil
}
