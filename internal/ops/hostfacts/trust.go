package hostfacts

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// TLSCause is one reason the indexer's certificate is not accepted, said with the fix on the side
// that must change: the certificate or key to renew or replace (the component's side), or the CA
// a client is configured with.
type TLSCause struct {
	Kind     string   `json:"kind"` // one of the Cause* constants
	File     string   `json:"file,omitempty"`
	Summary  string   `json:"summary"`
	Fix      string   `json:"fix"`
	Evidence []string `json:"evidence"`
}

// Kinds of TLSCause.
const (
	CauseUnreadable  = "unreadable"    // the certificate or key file cannot be read or parsed
	CauseKeyMismatch = "key_mismatch"  // certificate and key do not belong together
	CauseExpired     = "expired"       // past NotAfter
	CauseNotYetValid = "not_yet_valid" // before NotBefore
	CauseForeignCA   = "foreign_ca"    // not signed by the CA the components trust
	CauseSiemctlCA   = "siemctl_trust" // valid, the components accept it, siemctl's ca_file does not
	CauseStale       = "stale"         // the running node serves another certificate than its file
)

// TrustingCA is one CA file a client verifies the indexer's certificate with.
type TrustingCA struct {
	Who  string // indexer, shipper, dashboard, siemctl
	Key  string // the setting that names it, e.g. "ssl.certificate_authorities in /etc/shipper/filebeat.yml"
	File string
}

// IndexerTrust is what DiagnoseIndexerCert judges.
type IndexerTrust struct {
	TLS        IndexerTLS   // the node's certificate, key and trusted CA (opensearch.yml)
	Components []TrustingCA // the CAs the indexer, shipper and dashboard trust
	Siemctl    TrustingCA   // siemctl's indexer.ca_file
	Served     *x509.Certificate
	Now        time.Time
}

// DiagnoseIndexerCert judges the indexer's node certificate from its files (what the node loads
// at start, so it works for a node that will not start) and, when given, the certificate the
// running node serves. No cause: the certificate is fine for every client.
func DiagnoseIndexerCert(in IndexerTrust) []TLSCause {
	restart := "siemctl services restart indexer"
	certFile, keyFile := in.TLS.CertFile, in.TLS.KeyFile
	var causes []TLSCause
	leaf, err := firstCert(certFile)
	if err != nil {
		if in.Served == nil {
			if certFile == "" {
				return nil
			}
			return []TLSCause{{Kind: CauseUnreadable, File: certFile, Summary: "indexer certificate " + certFile + " unreadable: " + err.Error(),
				Fix: "put the node's certificate (PEM) at " + certFile + " (plugins.security.ssl.http.pemcert_filepath in " + in.TLS.ConfigFile + "), then " + restart}}
		}
		leaf, certFile = in.Served, "the certificate the indexer serves"
	} else if in.Served != nil && !in.Served.Equal(leaf) {
		causes = append(causes, TLSCause{Kind: CauseStale, File: certFile,
			Summary:  fmt.Sprintf("the running indexer serves another certificate (%s, until %s) than %s (%s, until %s)", in.Served.Subject, day(in.Served.NotAfter), certFile, leaf.Subject, day(leaf.NotAfter)),
			Fix:      restart + " (it loads " + certFile + " at start)",
			Evidence: []string{describe("served", in.Served), describe(certFile, leaf)}})
	}
	if keyFile != "" && certFile == in.TLS.CertFile {
		if pub, err := publicKeyOf(keyFile); err != nil {
			causes = append(causes, TLSCause{Kind: CauseUnreadable, File: keyFile, Summary: "indexer key " + keyFile + " unreadable: " + err.Error(),
				Fix: "put the private key of " + certFile + " (PEM, PKCS#8) at " + keyFile + ", then " + restart})
		} else if !pub.Equal(leaf.PublicKey) {
			causes = append(causes, TLSCause{Kind: CauseKeyMismatch, File: keyFile,
				Summary:  fmt.Sprintf("indexer certificate %s and key %s do not belong together (the key's public key is not the certificate's)", certFile, keyFile),
				Fix:      fmt.Sprintf("put back the key that %s was issued for, or issue a new certificate for the key in %s; then %s", certFile, keyFile, restart),
				Evidence: []string{describe(certFile, leaf)}})
		}
	}
	renew := func(why string) string {
		names := append([]string{}, leaf.DNSNames...)
		for _, ip := range leaf.IPAddresses {
			names = append(names, ip.String())
		}
		ca := in.TLS.CAFile
		if ca == "" && len(in.Components) > 0 {
			ca = in.Components[0].File
		}
		return fmt.Sprintf("%s: issue a certificate for %s (SAN %s) signed by the CA in %s with your PKI (wazuh-certs-tool or openssl), replace %s (and its key %s), then %s",
			why, leaf.Subject, strings.Join(names, ", "), ca, certFile, keyFile, restart)
	}
	switch {
	case in.Now.After(leaf.NotAfter):
		causes = append(causes, TLSCause{Kind: CauseExpired, File: certFile,
			Summary:  fmt.Sprintf("indexer certificate %s expired on %s (%d days ago); the shipper and dashboard reject it", certFile, day(leaf.NotAfter), int(in.Now.Sub(leaf.NotAfter).Hours()/24)),
			Fix:      renew("renew it"),
			Evidence: []string{describe(certFile, leaf)}})
	case in.Now.Before(leaf.NotBefore):
		causes = append(causes, TLSCause{Kind: CauseNotYetValid, File: certFile,
			Summary:  fmt.Sprintf("indexer certificate %s is not valid before %s (check the host clock)", certFile, leaf.NotBefore.UTC().Format(time.RFC3339)),
			Fix:      renew("fix the clock or reissue it"),
			Evidence: []string{describe(certFile, leaf)}})
	}
	// Chains, judged inside the certificate's validity: expiry is its own cause.
	mid := leaf.NotBefore.Add(leaf.NotAfter.Sub(leaf.NotBefore) / 2)
	var rejecting, accepting []TrustingCA
	var evidence []string
	for _, ca := range in.Components {
		ok, ev := chains(leaf, ca.File, mid)
		evidence = append(evidence, fmt.Sprintf("%s trusts %s: %s", ca.Who, ca.File, ev))
		if ok {
			accepting = append(accepting, ca)
		} else {
			rejecting = append(rejecting, ca)
		}
	}
	switch {
	case len(rejecting) > 0 && len(accepting) == 0:
		causes = append(causes, TLSCause{Kind: CauseForeignCA, File: certFile,
			Summary:  fmt.Sprintf("indexer certificate %s is issued by %s, not by the CA the %s trust", certFile, leaf.Issuer, whoList(rejecting)),
			Fix:      renew("replace it"),
			Evidence: append([]string{describe(certFile, leaf)}, evidence...)})
	case len(rejecting) > 0:
		var keys []string
		for _, r := range rejecting {
			keys = append(keys, r.Key)
		}
		causes = append(causes, TLSCause{Kind: CauseForeignCA, File: certFile,
			Summary:  fmt.Sprintf("the %s do not trust the CA that signed the indexer certificate %s (%s); the %s do", whoList(rejecting), certFile, leaf.Issuer, whoList(accepting)),
			Fix:      fmt.Sprintf("point %s at %s (the CA the %s trust), then restart them", strings.Join(keys, " and "), accepting[0].File, whoList(accepting)),
			Evidence: append([]string{describe(certFile, leaf)}, evidence...)})
	}
	if len(causes) == 0 && in.Siemctl.File != "" && len(accepting) > 0 {
		if ok, ev := chains(leaf, in.Siemctl.File, mid); !ok {
			causes = append(causes, TLSCause{Kind: CauseSiemctlCA, File: in.Siemctl.File,
				Summary:  fmt.Sprintf("siemctl's %s (%s) did not sign the indexer certificate, which the %s accept: %s", in.Siemctl.Key, in.Siemctl.File, whoList(accepting), ev),
				Fix:      fmt.Sprintf("set %s to %s (the CA the %s trust)", in.Siemctl.Key, accepting[0].File, whoList(accepting)),
				Evidence: append([]string{describe(certFile, leaf)}, evidence...)})
		}
	}
	return causes
}

func whoList(cas []TrustingCA) string {
	var w []string
	seen := map[string]bool{}
	for _, c := range cas {
		if !seen[c.Who] {
			seen[c.Who] = true
			w = append(w, c.Who)
		}
	}
	return strings.Join(w, ", ")
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

func describe(what string, c *x509.Certificate) string {
	return fmt.Sprintf("%s: subject %s, issuer %s, valid %s to %s", what, c.Subject, c.Issuer, day(c.NotBefore), day(c.NotAfter))
}

// chains reports whether caFile's certificates sign c (checked at instant at), with a short reason.
func chains(c *x509.Certificate, caFile string, at time.Time) (bool, string) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return false, "unreadable: " + err.Error()
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return false, "no PEM certificate"
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
		return true, "accepts it"
	}
	var names []string
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		ca, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			continue
		}
		// Signed by it, whatever the dates (an expired certificate may predate a re-issued CA's
		// validity): the dates are their own causes.
		if c.CheckSignatureFrom(ca) == nil {
			return true, "accepts it (" + ca.Subject.String() + " signed it)"
		}
		names = append(names, ca.Subject.String())
	}
	return false, "rejects it (the file holds " + strings.Join(names, "; ") + ")"
}

func firstCert(path string) (*x509.Certificate, error) {
	if path == "" {
		return nil, errors.New("not configured")
	}
	blks, err := pemBlocks(path)
	if err != nil {
		return nil, err
	}
	for _, blk := range blks {
		if blk.Type == "CERTIFICATE" {
			return x509.ParseCertificate(blk.Bytes)
		}
	}
	return nil, errNoCert
}

// pemBlocks reads the PEM blocks of the file at path, in order.
func pemBlocks(path string) ([]*pem.Block, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*pem.Block
	for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
		out = append(out, blk)
	}
	return out, nil
}

type publicKey interface{ Equal(crypto.PublicKey) bool }

// publicKeyOf reads a PEM private key (PKCS#8, PKCS#1 or SEC 1) and returns its public key.
func publicKeyOf(path string) (publicKey, error) {
	blks, err := pemBlocks(path)
	if err != nil {
		return nil, err
	}
	for _, blk := range blks {
		var k any
		switch blk.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(blk.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", blk.Type, err)
		}
		switch k := k.(type) {
		case *rsa.PrivateKey:
			return &k.PublicKey, nil
		case *ecdsa.PrivateKey:
			return &k.PublicKey, nil
		case ed25519.PrivateKey:
			return k.Public().(ed25519.PublicKey), nil
		}
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	return nil, errors.New("no PEM private key")
}

// ServedCert returns the leaf certificate the TLS endpoint addr ("host:port") presents, without
// verifying it (nil when nothing answers).
func ServedCert(ctx context.Context, addr string) *x509.Certificate {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // read, judged by DiagnoseIndexerCert
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	if st := conn.(*tls.Conn).ConnectionState(); len(st.PeerCertificates) > 0 {
		return st.PeerCertificates[0]
	}
	return nil
}

// IndexerTrustOf reads what DiagnoseIndexerCert needs from the components' config directories
// (a missing file leaves its part out) and siemctl's indexer.ca_file; Served and Now are the
// caller's.
func IndexerTrustOf(indexerConfDir, shipperConfDir, dashboardConfDir, siemctlCA string) IndexerTrust {
	var in IndexerTrust
	if indexerConfDir != "" {
		if t, err := ReadIndexerTLS(indexerConfDir); err == nil {
			in.TLS = t
			if t.CAFile != "" {
				in.Components = append(in.Components, TrustingCA{Who: "indexer", Key: "plugins.security.ssl.http.pemtrustedcas_filepath in " + t.ConfigFile, File: t.CAFile})
			}
		}
	}
	if shipperConfDir != "" {
		if o, err := ReadShipperOutput(shipperConfDir); err == nil {
			for _, ca := range o.CAFiles {
				in.Components = append(in.Components, TrustingCA{Who: "shipper", Key: "output.elasticsearch.ssl.certificate_authorities in " + o.ConfigFile, File: ca})
			}
		}
	}
	if dashboardConfDir != "" {
		if d, err := ReadDashboardConf(dashboardConfDir); err == nil && d.VerifyMode != "none" {
			for _, ca := range d.CAFiles {
				in.Components = append(in.Components, TrustingCA{Who: "dashboard", Key: "opensearch.ssl.certificateAuthorities in " + d.ConfigFile, File: ca})
			}
		}
	}
	in.Siemctl = TrustingCA{Who: "siemctl", Key: "indexer.ca_file", File: siemctlCA}
	return in
}

// IndexerCertInputs says where the indexer listens and where each component's config is.
type IndexerCertInputs struct {
	URL                                              string // indexer.url; an https one is dialled for the served certificate
	IndexerConfDir, ShipperConfDir, DashboardConfDir string
	SiemctlCA                                        string // indexer.ca_file
}

// IndexerCertCauses judges the indexer's node certificate (its files, and what the running node
// serves) against the CAs the indexer, shipper, dashboard and siemctl are configured with: the
// one verdict health, services and the start diagnosis share.
func IndexerCertCauses(ctx context.Context, in IndexerCertInputs, now time.Time) []TLSCause {
	t := IndexerTrustOf(in.IndexerConfDir, in.ShipperConfDir, in.DashboardConfDir, in.SiemctlCA)
	t.Now = now
	if u, err := url.Parse(in.URL); err == nil && u.Scheme == "https" {
		t.Served = ServedCert(ctx, u.Host)
	}
	return DiagnoseIndexerCert(t)
}
