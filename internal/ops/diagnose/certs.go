package diagnose

import (
	"context"
	"strings"

	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// KindCertificate is an indexer node certificate that is expired, not yet valid, not from the CA
// the components trust, unreadable, or not the pair of its key.
const KindCertificate = "certificate"

// certLogMarks are what OpenSearch's security plugin logs about a certificate it cannot use.
var certLogMarks = []string{"CertificateExpiredException", "CertificateNotYetValidException", "certificate_unknown",
	"PKIX path", "unable to find valid certification path", "OpenSearchSecurityException", "SSLHandshakeException",
	"pemcert_filepath", "pemkey_filepath", "does not match", "Failed to load", "KeyStoreException"}

// detectCertificate judges the indexer's node certificate from its files (what the node loads at
// start) with the one certificate verdict (hostfacts.IndexerCertCauses) health's certs check uses:
// the fix says what to renew or replace on the indexer's side.
func detectCertificate(ctx context.Context, ev *Evidence) (Finding, bool) {
	c := ev.Config
	if c == nil {
		return Finding{}, false
	}
	causes := hostfacts.IndexerCertCauses(ctx, hostfacts.IndexerCertInputs{
		IndexerConfDir: ev.path(c.Indexer.ConfigDir), ShipperConfDir: ev.path(c.Shipper.ConfigDir),
		DashboardConfDir: ev.path(c.Dashboard.ConfigDir), SiemctlCA: ev.path(c.Indexer.CAFile)}, ev.Host.Now())
	for _, cause := range causes {
		// siemctl's own trust and a stale served certificate do not stop a start.
		if cause.Kind == hostfacts.CauseSiemctlCA || cause.Kind == hostfacts.CauseStale {
			continue
		}
		// the files are what the node loads now: the latest evidence, ahead of what the
		// certificate leads to in the log (security not initialised, handshake errors)
		f := Finding{Cause: ev.unroot(cause.Summary), Fix: ev.unroot(cause.Fix), at: len(ev.Lines)}
		for _, e := range cause.Evidence {
			f.Evidence = append(f.Evidence, ev.unroot(e))
		}
		if i, line := ev.find(certLogMarks...); i >= 0 {
			f.Evidence = append(f.Evidence, strings.TrimSpace(line))
		}
		return f, true
	}
	return Finding{}, false
}

// KindDashboardIndexer is a dashboard that cannot reach or log in to its indexer (the real server
// then answers 503 "… server is not ready yet" on every route).
const KindDashboardIndexer = "dashboard-indexer"

// dashboardLogMarks are what OpenSearch Dashboards logs (tags error, opensearch, data) while it
// cannot use its indexer.
var dashboardLogMarks = []string{"[ConnectionError]", "[security_exception]", "Unable to retrieve version information from OpenSearch nodes",
	"No living connections", "server is not ready yet"}

// detectDashboardIndexer explains it with the verdict health's dashboard check uses
// (hostfacts.DashboardReachCause): its opensearch.hosts, its CA, or its own credentials.
func detectDashboardIndexer(ctx context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find(dashboardLogMarks...)
	if i < 0 || ev.Config == nil {
		return Finding{}, false
	}
	cause, fix, evidence := hostfacts.DashboardReachCause(ctx, ev.path(ev.Config.Dashboard.ConfigDir), ev.Config.Indexer.URL)
	for k := range evidence {
		evidence[k] = ev.unroot(evidence[k])
	}
	return Finding{Cause: "the dashboard cannot use its indexer: " + ev.unroot(cause), Fix: ev.unroot(fix), Evidence: append(evidence, line), at: i}, true
}
