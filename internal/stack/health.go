package stack

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/hostcheck"
	"github.com/siemctl/siemctl/internal/netclient"
)

// HealthStack returns what the health checks need, backed by this stack.
func (s *Stack) HealthStack() health.Stack {
	hs := health.Stack{
		Config:     s.Config,
		IndexerErr: s.IndexerErr,
		ManagerErr: s.ManagerErr,
		Tools:      s.Tools,
		Units: func(ctx context.Context) (health.UnitsAPI, error) {
			u, err := s.Units(ctx)
			if err != nil {
				return nil, err
			}
			return u, nil
		},
		Packages: func(ctx context.Context, names ...string) (map[string]string, error) {
			pm, err := s.NeedPackages()
			if err != nil {
				return nil, err
			}
			return pm.Installed(ctx, names...)
		},
		Ports: func(ctx context.Context) (map[int]bool, error) {
			l, err := hostcheck.ListeningPorts(ctx)
			if err != nil {
				return nil, err
			}
			out := map[int]bool{}
			for _, p := range l.Ports("tcp") {
				out[p] = true
			}
			return out, nil
		},
		Dashboard:          s.Dashboard,
		Certs:              s.Certs,
		Shipper:            shipperCheck{s},
		Probe:              s.Probe,
		DefaultCredentials: s.DefaultCredentials,
	}
	// Typed nils must not leak into the interfaces.
	if s.Indexer != nil {
		hs.Indexer = s.Indexer
	}
	if s.Manager != nil {
		hs.Manager = s.Manager
	}
	return hs
}

// defaultPasswords are the well-known factory credentials of the profile
// that must not survive an installation.
func (s *Stack) defaultPasswords() map[string][]string {
	api := "siem"
	if s.Config.Profile == "wazuh" {
		api = "wazuh"
	}
	return map[string][]string{
		"indexer": {"admin:admin"},
		"manager": {api + ":" + api, api + "-wui:" + api + "-wui"},
	}
}

// DefaultCredentials reports components that still accept a factory
// password: the configured one is compared locally, and the indexer's admin
// and the manager API's default users are tried once each (one failed login
// per user per run stays far below the manager's 50-attempt block).
func (s *Stack) DefaultCredentials(ctx context.Context) ([]string, error) {
	var found []string
	var unreachable []string
	resolved := map[string]string{}
	if pw, err := s.Config.Indexer.Resolve(ctx, "indexer", nil); err == nil {
		resolved["indexer"] = s.Config.Indexer.Username + ":" + pw
	}
	if pw, err := s.Config.Manager.Resolve(ctx, "manager", nil); err == nil {
		resolved["manager"] = s.Config.Manager.Username + ":" + pw
	}
	for comp, pairs := range s.defaultPasswords() {
		for _, pair := range pairs {
			user, pw, _ := strings.Cut(pair, ":")
			if resolved[comp] == pair {
				found = append(found, comp+" user "+user+" (configured password is the default)")
				continue
			}
			var accepted bool
			var err error
			switch comp {
			case "indexer":
				accepted, err = s.tryBasic(ctx, s.Config.Indexer.URL+"/", http.MethodGet, user, pw, s.Config.Indexer.CAFile, s.Config.Indexer.Insecure)
			case "manager":
				accepted, err = s.tryBasic(ctx, strings.TrimRight(s.Config.Manager.APIURL, "/")+"/security/user/authenticate", http.MethodPost, user, pw, s.Config.Manager.CAFile, s.Config.Manager.Insecure)
			}
			if err != nil {
				unreachable = append(unreachable, comp)
				break
			}
			if accepted {
				found = append(found, comp+" user "+user+" accepts its default password")
			}
		}
	}
	if len(unreachable) > 0 {
		return found, fmt.Errorf("could not try the default credentials on %s (unreachable)", strings.Join(unreachable, ", "))
	}
	return found, nil
}

// tryBasic reports whether the endpoint accepts user/pw; an error means the
// endpoint could not be asked.
func (s *Stack) tryBasic(ctx context.Context, url, method, user, pw, ca string, insecure bool) (bool, error) {
	hc, err := netclient.NewHTTPClient(netclient.TLSOptions{CAFile: ca, Insecure: insecure}, 0)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return false, err
	}
	req.SetBasicAuth(user, pw)
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}
