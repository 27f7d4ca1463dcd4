// Package tlsutil creates the self-signed certificates the emulators need (the manager API creates its
// pair at first start, like wazuh-apid) and test CAs.
package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Pair is a PEM certificate and its PEM (PKCS#8) private key.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
}

// SelfSigned creates a self-signed server certificate for the given host names/IPs, valid for the given
// duration from now, with the subject wazuh-apid gives its own (C=US, ST=California, L=San Francisco,
// O=Wazuh, CN=commonName).
func SelfSigned(commonName string, hosts []string, validFor time.Duration) (*Pair, error) {
	return issue(nil, "Wazuh", commonName, hosts, validFor, false)
}

// NewCA creates a self-signed CA.
func NewCA(commonName string) (*Pair, error) {
	return issue(nil, "SIEM", commonName, nil, 24*time.Hour*3650, true)
}

// Issue creates a server certificate signed by this CA.
func (ca *Pair) Issue(commonName string, hosts []string) (*Pair, error) {
	return issue(ca, "SIEM", commonName, hosts, 24*time.Hour*3650, false)
}

func issue(parent *Pair, org, cn string, hosts []string, validFor time.Duration, isCA bool) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("serial: %w", err)
	}
	now := time.Now()
	tpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Country: []string{"US"}, Province: []string{"California"}, Locality: []string{"San Francisco"}, Organization: []string{org}, CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validFor),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tpl.IsCA = true
		tpl.BasicConstraintsValid = true
		tpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
		tpl.ExtKeyUsage = nil
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tpl.IPAddresses = append(tpl.IPAddresses, ip)
		} else {
			tpl.DNSNames = append(tpl.DNSNames, h)
		}
	}
	signerCert, signerKey := tpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return &Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		cert:    cert,
		key:     key,
	}, nil
}
