package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/netclient"
)

// DefaultCredentials is the input of the default-password verdict (the
// security.default_credentials check): the configured users with their
// resolved passwords and the clients that prove a node answers before any
// factory password is sent to it.
type DefaultCredentials struct {
	Config *config.Config
	// Passwords are the resolved passwords by section ("indexer",
	// "manager"); a password read from the environment is gone from it.
	Passwords map[string]string
	Indexer   IndexerAPI // nil: not built
	Manager   ManagerAPI // nil: not built
	Now       func() time.Time
}

// defaultPasswords are the well-known factory credentials of the profile
// that must not survive an installation.
func (d DefaultCredentials) defaultPasswords() map[string][]string {
	api := "siem"
	if d.Config.Profile == "wazuh" {
		api = "wazuh"
	}
	return map[string][]string{
		"indexer": {"admin:admin"},
		"manager": {api + ":" + api, api + "-wui:" + api + "-wui"},
	}
}

// Find reports components that still accept a factory password. The configured passwords are compared locally on every run; the
// other default users are tried once each against the indexer and the
// manager API. Failed logins count towards the manager's per-IP block (50 in
// 300 s), so the verdict of those remote tries is cached in state_dir for an
// hour: a monitoring loop must not lock the operators out.
func (d DefaultCredentials) Find(ctx context.Context) ([]string, error) {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	resolved := map[string]string{}
	if pw, ok := d.Passwords["indexer"]; ok {
		resolved["indexer"] = d.Config.Indexer.Username + ":" + pw
	}
	if pw, ok := d.Passwords["manager"]; ok {
		resolved["manager"] = d.Config.Manager.Username + ":" + pw
	}
	var local []string
	remote := map[string][]string{}
	for comp, pairs := range d.defaultPasswords() {
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
	cache := filepath.Join(d.Config.StateDir, "cache", "default-credentials.json")
	key := d.Config.Indexer.URL + " " + d.Config.Manager.APIURL + " " + d.Config.Indexer.Username + " " + d.Config.Manager.Username
	if found, ok := readCredCache(cache, key, now()); ok {
		return append(local, found...), nil
	}
	found, err := d.try(ctx, remote)
	if err == nil {
		writeCredCache(cache, key, found, now())
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
func (d DefaultCredentials) try(ctx context.Context, pairs map[string][]string) ([]string, error) {
	var found, unreachable []string
	for _, comp := range []string{"indexer", "manager"} {
		if len(pairs[comp]) == 0 {
			continue
		}
		// Factory credentials go only to a node that answers siemctl's own
		// identity over a verified connection: never to a hung or refused
		// port, nor to whatever answers where the node should be.
		if !d.answers(ctx, comp) {
			unreachable = append(unreachable, comp)
			continue
		}
		for _, pair := range pairs[comp] {
			user, pw, _ := strings.Cut(pair, ":")
			var accepted bool
			var err error
			if comp == "indexer" {
				accepted, err = tryBasic(ctx, d.Config.Indexer.URL+"/", http.MethodGet, user, pw, d.Config.Indexer.CAFile, d.Config.Indexer.Insecure)
			} else {
				accepted, err = tryBasic(ctx, strings.TrimRight(d.Config.Manager.APIURL, "/")+"/security/user/authenticate", http.MethodPost, user, pw, d.Config.Manager.CAFile, d.Config.Manager.Insecure)
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
func (d DefaultCredentials) answers(ctx context.Context, comp string) bool {
	var err error
	switch {
	case comp == "indexer" && d.Indexer != nil:
		_, err = d.Indexer.Info(ctx)
	case comp == "manager" && d.Manager != nil:
		_, err = d.Manager.Info(ctx)
	default:
		return false
	}
	return !errors.Is(err, netclient.ErrUnreachable) && !errors.Is(err, netclient.ErrTimeout) &&
		!errors.Is(err, netclient.ErrTLS) && ctx.Err() == nil
}

// tryBasic reports whether the endpoint accepts user/pw; an error means the
// endpoint could not be asked.
func tryBasic(ctx context.Context, url, method, user, pw, ca string, insecure bool) (bool, error) {
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
