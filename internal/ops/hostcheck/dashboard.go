package hostcheck

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/siemctl/siemctl/internal/netclient"
)

// DashboardAnswer is the dashboard's answer to GET /.
type DashboardAnswer struct {
	Status   int
	Location string
	Version  string // from /api/status when available
}

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
	// Only the status matters; a body is drained up to a small cap so the
	// connection can be reused, never read whole.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, netclient.MaxErrorAnswer))
	resp.Body.Close()
	ans := DashboardAnswer{Status: resp.StatusCode, Location: resp.Header.Get("Location")}

	req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/status", nil)
	if err == nil {
		if resp, err := hc.Do(req); err == nil {
			var st struct {
				Version struct {
					Number string `json:"number"`
				} `json:"version"`
			}
			body := netclient.CapReader(resp.Body, 1<<20, "dashboard GET /api/status")
			if resp.StatusCode == http.StatusOK && json.NewDecoder(body).Decode(&st) == nil {
				ans.Version = st.Version.Number
			}
			resp.Body.Close()
		}
	}
	return ans, nil
}
