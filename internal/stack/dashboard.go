package stack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/netclient"
)

// Dashboard asks the dashboard for GET / (200 or 302 to the login page is
// healthy) and, best effort, its version from GET /api/status.
func (s *Stack) Dashboard(ctx context.Context) (health.DashboardAnswer, error) {
	c := s.Config.Dashboard
	hc, err := netclient.NewHTTPClient(netclient.TLSOptions{CAFile: c.CAFile, Insecure: c.Insecure}, 0)
	if err != nil {
		return health.DashboardAnswer{}, err
	}
	base := strings.TrimRight(c.URL, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return health.DashboardAnswer{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return health.DashboardAnswer{}, netclient.Classify("GET /", base, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	ans := health.DashboardAnswer{Status: resp.StatusCode, Location: resp.Header.Get("Location")}

	req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/status", nil)
	if err == nil {
		if resp, err := hc.Do(req); err == nil {
			var st struct {
				Version struct {
					Number string `json:"number"`
				} `json:"version"`
			}
			if resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st) == nil {
				ans.Version = st.Version.Number
			}
			resp.Body.Close()
		}
	}
	return ans, nil
}
