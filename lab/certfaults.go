package lab

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// The certificate and dashboard faults of issue 23: the indexer's node certificate expired or
// issued by a foreign CA (the node restarted with it), and the dashboard's opensearch.hosts
// pointing nowhere. Each keeps the original file under DIR/faults and heals by putting it back.

// loadPair reads a PEM certificate and its PKCS#8 RSA key.
func loadPair(certPath, keyPath string) (CertPair, error) {
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return CertPair{}, err
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return CertPair{}, fmt.Errorf("%w (a lab made before the CA key was kept cannot issue: siemlab down, then up)", err)
	}
	cblk, _ := pem.Decode(cb)
	kblk, _ := pem.Decode(kb)
	if cblk == nil || kblk == nil {
		return CertPair{}, fmt.Errorf("%s / %s: no PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cblk.Bytes)
	if err != nil {
		return CertPair{}, err
	}
	k, err := x509.ParsePKCS8PrivateKey(kblk.Bytes)
	if err != nil {
		return CertPair{}, err
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return CertPair{}, fmt.Errorf("%s: not an RSA key", keyPath)
	}
	return CertPair{CertPEM: cb, KeyPEM: kb, Cert: cert, key: rk}, nil
}

// indexerCertPaths are the node certificate and key the indexer loads (opensearch.yml).
func (l *Lab) indexerCertPaths() (cert, key string) {
	dir := filepath.Join(l.st.Root, l.prof.IndexerConf(), "certs")
	return filepath.Join(dir, "indexer.pem"), filepath.Join(dir, "indexer-key.pem")
}

// IssueNodeCert issues a node certificate for the indexer's current key with the lab's PKI (the
// administrator's own CA in DIR/certs), valid from notBefore to notAfter, and returns it as PEM.
// A foreign CA (a fresh one, not the lab's) signs it when foreign is true. It writes nothing: the
// caller puts it in place, as an administrator does with a certificate from their PKI.
func (l *Lab) IssueNodeCert(notBefore, notAfter time.Time, foreign bool) ([]byte, error) {
	certs := filepath.Join(l.st.Dir, "certs")
	ca, err := loadPair(filepath.Join(certs, "root-ca.pem"), filepath.Join(certs, "root-ca-key.pem"))
	if err != nil {
		return nil, fmt.Errorf("lab CA: %w", err)
	}
	_, keyPath := l.indexerCertPaths()
	node, err := loadPair(filepath.Join(certs, "indexer.pem"), keyPath)
	if err != nil {
		return nil, fmt.Errorf("node key: %w", err)
	}
	opts := CertOptions{Profile: l.prof, Now: time.Now(), Bits: 2048}
	if foreign {
		tmpl := &x509.Certificate{Subject: l.prof.Subject("foreign-root-ca"), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
		if ca, err = issue(tmpl, nil, opts); err != nil {
			return nil, err
		}
	}
	tmpl := &x509.Certificate{
		Subject:     node.Cert.Subject,
		KeyUsage:    node.Cert.KeyUsage,
		ExtKeyUsage: node.Cert.ExtKeyUsage,
		DNSNames:    node.Cert.DNSNames,
		IPAddresses: node.Cert.IPAddresses,
	}
	p, err := issueFor(tmpl, &ca, node.key, notBefore, notAfter)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// issueFor signs tmpl for an existing key with the given dates.
func issueFor(tmpl *x509.Certificate, parent *CertPair, key *rsa.PrivateKey, notBefore, notAfter time.Time) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = notBefore, notAfter
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent.Cert, &key.PublicKey, parent.key)
	if err != nil {
		return nil, fmt.Errorf("create certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// indexerCertFault replaces the indexer's node certificate (kept for heal) with an expired one
// or one from a foreign CA and restarts the indexer, which then serves it or fails to start.
func (l *Lab) indexerCertFault(ctx context.Context, kind string, on bool) error {
	certPath, _ := l.indexerCertPaths()
	if !on {
		if err := l.restoreConfig(certPath, 0o644); err != nil {
			return err
		}
		if err := os.Chown(certPath, IndexerUID, IndexerUID); err != nil {
			return err
		}
		_ = l.stopUnit(ctx, l.prof.IndexerUnit())
		return l.startIndexer(ctx)
	}
	now := time.Now()
	var pemCert []byte
	err := l.breakConfig(certPath, 0o644, func([]byte) ([]byte, error) {
		var err error
		if kind == "indexer-cert-expired" {
			pemCert, err = l.IssueNodeCert(now.AddDate(-1, 0, -30), now.AddDate(0, 0, -30), false)
		} else {
			pemCert, err = l.IssueNodeCert(now.Add(-time.Hour), now.AddDate(1, 0, 0), true)
		}
		return pemCert, err
	})
	if err != nil {
		return err
	}
	if err := os.Chown(certPath, IndexerUID, IndexerUID); err != nil {
		return err
	}
	_ = l.stopUnit(ctx, l.prof.IndexerUnit())
	_ = l.startUnit(ctx, l.prof.IndexerUnit()) // it may fail to start: that is the fault
	return nil
}

// keyMismatch replaces the indexer's node key with a fresh one (the original key and certificate
// kept for heal: a fix may issue a certificate for the new key) and restarts the indexer, which
// cannot load a certificate and key that do not belong together.
func (l *Lab) keyMismatch(ctx context.Context, on bool) error {
	certPath, keyPath := l.indexerCertPaths()
	if !on {
		if err := l.restoreConfig(keyPath, 0o600); err != nil {
			return err
		}
		if err := l.restoreConfig(certPath, 0o644); err != nil {
			return err
		}
		for _, p := range []string{keyPath, certPath} {
			if err := os.Chown(p, IndexerUID, IndexerUID); err != nil {
				return err
			}
		}
		_ = l.stopUnit(ctx, l.prof.IndexerUnit())
		return l.startIndexer(ctx)
	}
	// the certificate as it is, kept for heal
	if err := l.breakConfig(certPath, 0o644, func(orig []byte) ([]byte, error) { return orig, nil }); err != nil {
		return err
	}
	err := l.breakConfig(keyPath, 0o600, func([]byte) ([]byte, error) {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	})
	if err != nil {
		return err
	}
	if err := os.Chown(keyPath, IndexerUID, IndexerUID); err != nil {
		return err
	}
	_ = l.stopUnit(ctx, l.prof.IndexerUnit())
	_ = l.startUnit(ctx, l.prof.IndexerUnit()) // it fails to start: that is the fault
	return nil
}

var reOpenSearchHosts = regexp.MustCompile(`(?m)^opensearch\.hosts:.*$`)

// dashboardUnreachable points the dashboard's opensearch.hosts at a closed port (the original kept
// for heal) and restarts it: it answers 503 "not ready yet" on every route.
func (l *Lab) dashboardUnreachable(ctx context.Context, on bool) error {
	conf := filepath.Join(l.st.Root, l.prof.DashboardConfig)
	if !on {
		if err := l.restoreConfig(conf, 0o640); err != nil {
			return err
		}
		_ = l.stopUnit(ctx, l.prof.DashboardUnit())
		return l.startDashboard(ctx)
	}
	err := l.breakConfig(conf, 0o640, func(orig []byte) ([]byte, error) {
		if !reOpenSearchHosts.Match(orig) {
			return nil, errors.New(conf + " has no opensearch.hosts line to break")
		}
		return reOpenSearchHosts.ReplaceAll(orig, []byte("opensearch.hosts: https://"+unreachableOutput)), nil
	})
	if err != nil {
		return err
	}
	if err := l.stopUnit(ctx, l.prof.DashboardUnit()); err != nil {
		return err
	}
	return l.startUnit(ctx, l.prof.DashboardUnit())
}
