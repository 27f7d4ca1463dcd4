package hostfacts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// CertInfo describes a certificate (the leaf of an endpoint, or one from a
// PEM file) and whether it verified.
type CertInfo struct {
	Source    string    `json:"source"` // host:port or file path
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	DNSNames  []string  `json:"dns_names,omitempty"`
	IPs       []string  `json:"ips,omitempty"`
	NotBefore time.Time `json:"not_before"`
	NotAfter  time.Time `json:"not_after"`
	// Verified is true when the chain verified against the configured CA
	// (or the system roots) for the host name. Insecure mode never verifies.
	Verified bool `json:"verified"`
	// VerifyError says why verification failed ("" when it passed or was
	// not attempted).
	VerifyError string `json:"verify_error,omitempty"`
	Insecure    bool   `json:"insecure,omitempty"`
}

// Expired reports whether the certificate is past NotAfter at now.
func (c CertInfo) Expired(now time.Time) bool { return now.After(c.NotAfter) }

// DaysLeft is the number of whole days until NotAfter (negative when expired).
func (c CertInfo) DaysLeft(now time.Time) int {
	return int(math.Floor(c.NotAfter.Sub(now).Hours() / 24))
}

func infoOf(source string, c *x509.Certificate) CertInfo {
	ci := CertInfo{Source: source, Subject: c.Subject.String(), Issuer: c.Issuer.String(),
		DNSNames: c.DNSNames, NotBefore: c.NotBefore.UTC(), NotAfter: c.NotAfter.UTC()}
	for _, ip := range c.IPAddresses {
		ci.IPs = append(ci.IPs, ip.String())
	}
	return ci
}

// CertExpiry connects to addr ("host:port") with TLS and returns its leaf
// certificate. The certificate is read even when it does not verify
// (expired, unknown CA, wrong name): the verification result is reported in
// Verified/VerifyError, separately from the expiry. Connection failures are
// *netclient.Error.
func CertExpiry(ctx context.Context, addr string, opts netclient.TLSOptions) (CertInfo, error) {
	cfg, err := netclient.TLSConfig(opts)
	if err != nil {
		return CertInfo{Source: addr}, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return CertInfo{Source: addr}, fmt.Errorf("certificate of %s: %w", addr, err)
	}
	serverName := opts.ServerName
	if serverName == "" {
		serverName = host
	}
	roots := cfg.RootCAs
	// Verification is done below, by hand, so that a bad certificate is
	// still read and reported.
	cfg.InsecureSkipVerify = true //nolint:gosec // verified explicitly after the handshake
	cfg.ServerName = serverName
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return CertInfo{Source: addr}, netclient.Classify("TLS handshake", "tcp://"+addr, err)
	}
	defer conn.Close()
	state := conn.(*tls.Conn).ConnectionState()
	if len(state.PeerCertificates) == 0 {
		return CertInfo{Source: addr}, &netclient.Error{Op: "TLS handshake", URL: "tcp://" + addr, Kind: netclient.ErrTLS, Detail: "no certificate presented"}
	}
	leaf := state.PeerCertificates[0]
	ci := infoOf(addr, leaf)
	if opts.Insecure {
		ci.Insecure = true
		return ci, nil
	}
	inter := x509.NewCertPool()
	for _, c := range state.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, verr := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: serverName})
	if verr != nil {
		ci.VerifyError = verr.Error()
	} else {
		ci.Verified = true
	}
	return ci, nil
}

// PEMExpiry reads every certificate in a PEM file (the first is usually the
// leaf). A file with no certificate is an error.
func PEMExpiry(path string) ([]CertInfo, error) {
	blks, err := pemBlocks(path)
	if err != nil {
		return nil, fmt.Errorf("certificate file: %w", err)
	}
	var out []CertInfo
	for _, blk := range blks {
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate file %s: %w", path, err)
		}
		out = append(out, infoOf(path, c))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("certificate file %s: %w", path, errNoCert)
	}
	return out, nil
}

var errNoCert = errors.New("no PEM certificate")
