package diagnose

import (
	"context"
	"strings"

	"github.com/siemctl/siemctl/internal/ops/hostcheck"
)

// KindCertificate is an indexer node certificate that is expired, not yet valid, not from the CA
// the components trust, unreadable, or not the pair of its key.
const KindCertificate = "certificate"

// certLogMarks are what OpenSearch's security plugin logs about a certificate it cannot use.
var certLogMarks = []string{"CertificateExpiredException", "CertificateNotYetValidException", "certificate_unknown",
	"PKIX path", "unable to find valid certification path", "OpenSearchSecurityException", "SSLHandshakeException",
	"pemcert_filepath", "pemkey_filepath", "does not match", "Failed to load", "KeyStoreException"}

// detectCertificate judges the indexer's node certificate from its files (what the node loads at
// start) with the one certificate verdict (hostcheck.IndexerCertCauses) health's certs check uses:
// the fix says what to renew or replace on the indexer's side.
func detectCertificate(ctx context.Context, ev *Evidence) (Finding, bool) {
	c := ev.Config
	if c == nil {
		return Finding{}, false
	}
	causes := hostcheck.IndexerCertCauses(ctx, hostcheck.IndexerCertInputs{
		IndexerConfDir: ev.path(c.Indexer.ConfigDir), ShipperConfDir: ev.path(c.Shipper.ConfigDir),
		DashboardConfDir: ev.path(c.Dashboard.ConfigDir), SiemctlCA: ev.path(c.Indexer.CAFile)}, ev.Host.Now())
	for _, cause := range causes {
		// siemctl's own trust and a stale served certificate do not stop a start.
		if cause.Kind == hostcheck.CauseSiemctlCA || cause.Kind == hostcheck.CauseStale {
			continue
		}
		f := Finding{Cause: cause.Summary, Fix: cause.Fix, Evidence: append([]string{}, cause.Evidence...)}
		if i, line := ev.find(certLogMarks...); i >= 0 {
			f.at = i
			f.Evidence = append(f.Evidence, strings.TrimSpace(line))
		}
		return f, true
	}
	return Finding{}, false
}
