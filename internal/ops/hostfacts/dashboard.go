package hostfacts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// DashboardAnswer is the dashboard's answer to GET / and GET /api/status.
type DashboardAnswer struct {
	Status   int
	Location string
	Version  string // from /api/status when available
	// NotReady is the body of the real server's 503 "OpenSearch Dashboards server is not ready
	// yet" (Wazuh: "Wazuh dashboard server is not ready yet"): it has not reached its indexer.
	NotReady string
	// State is /api/status's overall state (green, yellow, red; "" when it did not answer it,
	// e.g. 401 where the security plugin protects the route) and OpenSearch the message of its
	// core:opensearch status when that is not green.
	State      string
	OpenSearch string
}

// notReadyText is what the real dashboard's NotReady server answers on every route.
const notReadyText = "server is not ready yet"

// Dashboard is the dashboard's status client: where it listens and how its
// certificate is verified.
type Dashboard struct {
	URL string
	TLS netclient.TLSOptions
}

// Status asks the dashboard for GET / (200 or 302 to the login page is
// healthy) and, best effort, its version from GET /api/status.
func (d Dashboard) Status(ctx context.Context) (DashboardAnswer, error) {
	hc, err := netclient.NewHTTPClient(d.TLS, 0)
	if err != nil {
		return DashboardAnswer{}, err
	}
	base := strings.TrimRight(d.URL, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return DashboardAnswer{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return DashboardAnswer{}, netclient.Classify("GET /", base, err)
	}
	// Only the status matters (and a 503's text); a body is read up to a
	// small cap so the connection can be reused, never read whole.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, netclient.MaxErrorAnswer))
	resp.Body.Close()
	ans := DashboardAnswer{Status: resp.StatusCode, Location: resp.Header.Get("Location")}
	if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(head), notReadyText) {
		ans.NotReady = strings.TrimSpace(string(head))
	}

	req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/status", nil)
	if err == nil {
		if resp, err := hc.Do(req); err == nil {
			var st struct {
				Version struct {
					Number string `json:"number"`
				} `json:"version"`
				Status struct {
					Overall struct {
						State string `json:"state"`
					} `json:"overall"`
					Statuses []struct {
						ID      string `json:"id"`
						State   string `json:"state"`
						Message string `json:"message"`
					} `json:"statuses"`
				} `json:"status"`
			}
			body := netclient.CapReader(resp.Body, 1<<20, "dashboard GET /api/status")
			switch {
			case resp.StatusCode == http.StatusOK && json.NewDecoder(body).Decode(&st) == nil:
				ans.Version, ans.State = st.Version.Number, st.Status.Overall.State
				for _, c := range st.Status.Statuses {
					if strings.HasPrefix(c.ID, "core:opensearch@") && c.State != "green" {
						ans.OpenSearch = c.Message
					}
				}
			case resp.StatusCode == http.StatusServiceUnavailable && ans.NotReady == "":
				if b, _ := io.ReadAll(io.LimitReader(resp.Body, netclient.MaxErrorAnswer)); strings.Contains(string(b), notReadyText) {
					ans.NotReady = strings.TrimSpace(string(b))
				}
			}
			resp.Body.Close()
		}
	}
	return ans, nil
}

// HostReach is one of the dashboard's opensearch.hosts as seen from this host, with the
// dashboard's own CA files and verification mode.
type HostReach struct {
	Host string
	OK   bool
	// Detail says what failed: "connection refused", "certificate signed by unknown authority", …
	Detail string
}

// ReachIndexerHosts dials each of the dashboard's opensearch.hosts (TCP, then TLS verified as the
// dashboard verifies it), concurrently and bounded by ctx and a few seconds each. It does not log
// in: the dashboard's password is its own (its keystore).
func ReachIndexerHosts(ctx context.Context, d DashboardConf) []HostReach {
	out := make([]HostReach, len(d.Hosts))
	done := make(chan struct{}, len(d.Hosts))
	for i, h := range d.Hosts {
		go func() {
			defer func() { done <- struct{}{} }()
			out[i] = reachHost(ctx, h, d)
		}()
	}
	for range d.Hosts {
		<-done
	}
	return out
}

func reachHost(ctx context.Context, h string, d DashboardConf) HostReach {
	r := HostReach{Host: h}
	u, err := url.Parse(h)
	if err != nil || u.Host == "" {
		r.Detail = "not a URL"
		return r
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "9200")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		r.Detail = lastColon(err.Error())
		return r
	}
	defer conn.Close()
	if u.Scheme != "https" {
		r.OK, r.Detail = true, "TCP connect OK"
		return r
	}
	pool := x509.NewCertPool()
	for _, f := range d.CAFiles {
		if b, err := os.ReadFile(f); err == nil {
			pool.AppendCertsFromPEM(b)
		}
	}
	cfg := &tls.Config{InsecureSkipVerify: true, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12} //nolint:gosec // verified below as the dashboard's verificationMode says
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		r.Detail = "TLS handshake: " + lastColon(err.Error())
		return r
	}
	peers := tc.ConnectionState().PeerCertificates
	if d.VerifyMode != "none" && len(peers) > 0 {
		opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
		for _, c := range peers[1:] {
			opts.Intermediates.AddCert(c)
		}
		if d.VerifyMode == "full" {
			opts.DNSName = u.Hostname()
		}
		if _, err := peers[0].Verify(opts); err != nil {
			r.Detail = "the dashboard's CA (" + strings.Join(d.CAFiles, ", ") + ") rejects the indexer certificate: " + err.Error()
			return r
		}
	}
	r.OK, r.Detail = true, "TCP and TLS OK"
	return r
}

func lastColon(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// DashboardReachCause says why a dashboard that answers "not ready yet" (or a red
// core:opensearch) cannot use its indexer, from this host with the dashboard's own settings in
// confDir: opensearch.hosts not set or not answering (the fix sets it to indexerURL), the
// dashboard's CA rejecting the indexer's certificate, or else its own credentials. The one
// verdict health's dashboard check and the start diagnosis share.
func DashboardReachCause(ctx context.Context, confDir, indexerURL string) (cause, fix string, evidence []string) {
	restart := ", then siemctl services restart dashboard"
	conf, err := ReadDashboardConf(confDir)
	if err != nil {
		return "it cannot reach or log in to the indexer", "check opensearch.hosts and the dashboard's indexer credentials in its config (" + confDir + ")" + restart, []string{"dashboard config: " + err.Error()}
	}
	evidence = []string{fmt.Sprintf("%s: opensearch.hosts %s, opensearch.ssl.verificationMode %s", conf.ConfigFile, strings.Join(conf.Hosts, ", "), conf.VerifyMode)}
	if len(conf.Hosts) == 0 {
		return "opensearch.hosts is not set", "set opensearch.hosts: " + indexerURL + " in " + conf.ConfigFile + restart, evidence
	}
	var bad []string
	tlsBad := false
	for _, h := range ReachIndexerHosts(ctx, conf) {
		evidence = append(evidence, fmt.Sprintf("from here, %s: %s", h.Host, h.Detail))
		if !h.OK {
			bad = append(bad, h.Host+" ("+h.Detail+")")
			tlsBad = tlsBad || strings.Contains(h.Detail, "TLS") || strings.Contains(h.Detail, "rejects")
		}
	}
	switch {
	case len(bad) == len(conf.Hosts) && !tlsBad:
		return "its opensearch.hosts " + strings.Join(bad, ", ") + " does not answer",
			"set opensearch.hosts in " + conf.ConfigFile + " to the indexer (" + indexerURL + " answers here)" + restart, evidence
	case len(bad) > 0 && tlsBad:
		return "the dashboard does not accept the indexer's certificate: " + strings.Join(bad, ", "),
			"see the certs check: renew or replace the indexer certificate, or point opensearch.ssl.certificateAuthorities in " + conf.ConfigFile + " at the CA that signed it" + restart, evidence
	}
	who := "opensearch.username"
	if conf.Username != "" {
		who += " " + conf.Username
	}
	where := "opensearch.password in " + conf.ConfigFile
	if conf.Keystore != "" {
		where = "opensearch.password in its keystore " + conf.Keystore + " (opensearch-dashboards-keystore add opensearch.password --stdin)"
	}
	return "its indexer hosts answer, so its own credentials are refused or it is still starting",
		"check the dashboard's " + who + " and " + where + " against the indexer's internal users" + restart, evidence
}
