package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
	"net/http"
	"strings"

	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/hostcheck"
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
// password. The configured passwords are compared locally on every run; the
// other default users are tried once each against the indexer and the
// manager API. Failed logins count towards the manager's per-IP block (50 in
// 300 s), so the verdict of those remote tries is cached in state_dir for an
// hour: a monitoring loop must not lock the operators out.
func (s *Stack) DefaultCredentials(ctx context.Context) ([]string, error) {
	resolved := map[string]string{}
	if pw, ok := s.passwords["indexer"]; ok {
		resolved["indexer"] = s.Config.Indexer.Username + ":" + pw
	}
	if pw, ok := s.passwords["manager"]; ok {
		resolved["manager"] = s.Config.Manager.Username + ":" + pw
	}
	var local []string
	remote := map[string][]string{}
	for comp, pairs := range s.defaultPasswords() {
		for _, pair := range pairs {
			user, _, _ := strings.Cut(pair, ":")
			switch {
			case resolved[comp] == pair:
				local = append(local, comp+" (the configured password is a factory default)")
			case strings.HasPrefix(resolved[comp], user+":"):
				// the configured user with another password: nothing to try
			default:
				remote[comp] = append(remote[comp], pair)
			}
		}
	}
	cache := filepath.Join(s.Config.StateDir, "cache", "default-credentials.json")
	key := s.Config.Indexer.URL + " " + s.Config.Manager.APIURL + " " + s.Config.Indexer.Username + " " + s.Config.Manager.Username
	if found, ok := readCredCache(cache, key, time.Now()); ok {
		return append(local, found...), nil
	}
	found, err := s.tryDefaultCredentials(ctx, remote)
	if err == nil {
		writeCredCache(cache, key, found, time.Now())
	}
	return append(local, found...), err
}

type credCache struct {
	Key       string    `json:"key"`
	CheckedAt time.Time `json:"checked_at"`
	Found     []string  `json:"found"`
}

const credCacheTTL = time.Hour

func readCredCache(path, key string, now time.Time) ([]string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var c credCache
	if json.Unmarshal(data, &c) != nil || c.Key != key || now.Sub(c.CheckedAt) > credCacheTTL || now.Before(c.CheckedAt) {
		return nil, false
	}
	return c.Found, true
}

// writeCredCache is best effort: without a writable state_dir the tries
// simply run every time.
func writeCredCache(path, key string, found []string, now time.Time) {
	data, err := json.Marshal(credCache{Key: key, CheckedAt: now.UTC(), Found: found})
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(path), 0o700) == nil {
		_ = renameio.WriteFile(path, data, 0o600)
	}
}

// tryDefaultCredentials logs in once with each default pair.
func (s *Stack) tryDefaultCredentials(ctx context.Context, pairs map[string][]string) ([]string, error) {
	var found, unreachable []string
	for _, comp := range []string{"indexer", "manager"} {
		if len(pairs[comp]) == 0 {
			continue
		}
		// Factory credentials go only to a node that answers siemctl's own
		// identity over a verified connection: never to a hung or refused
		// port, nor to whatever answers where the node should be.
		if !s.answers(ctx, comp) {
			unreachable = append(unreachable, comp)
			continue
		}
		for _, pair := range pairs[comp] {
			user, pw, _ := strings.Cut(pair, ":")
			var accepted bool
			var err error
			if comp == "indexer" {
				accepted, err = s.tryBasic(ctx, s.Config.Indexer.URL+"/", http.MethodGet, user, pw, s.Config.Indexer.CAFile, s.Config.Indexer.Insecure)
			} else {
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

// answers reports whether the component's configured client reaches it
// (an authentication or HTTP error still counts as an answer).
func (s *Stack) answers(ctx context.Context, comp string) bool {
	var err error
	switch {
	case comp == "indexer" && s.Indexer != nil:
		_, err = s.Indexer.Info(ctx)
	case comp == "manager" && s.Manager != nil:
		_, err = s.Manager.Info(ctx)
	default:
		return false
	}
	return !errors.Is(err, netclient.ErrUnreachable) && !errors.Is(err, netclient.ErrTimeout) &&
		!errors.Is(err, netclient.ErrTLS) && ctx.Err() == nil
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
