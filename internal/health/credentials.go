package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
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

// CredentialReport is the default-credential verdict of one run: what was
// found, and for each component whose factory passwords are tried remotely,
// when they were last sent (evidence for the check).
type CredentialReport struct {
	Found    []string
	Evidence []string
}

// credRetryAfter is how long a remote try stands: failed logins count
// towards the manager's per-IP block (50 in 300 s) and fill its audit log,
// so a cron'd health sends them at most once a day per target (--deep:
// every run).
const credRetryAfter = 24 * time.Hour

// credStateFile is the record of the remote tries under state_dir.
const credStateFile = "default-credentials.json"

// Find reports components that still accept a factory password. The
// configured passwords are compared locally on every run; the other default
// users are sent to the indexer and the manager API at most once a day per
// target (url and configured user), or on every --deep run: the result is
// kept in state_dir/cache and reused in between. A component that does not
// answer is not tried, and tried again next run.
func (d DefaultCredentials) Find(ctx context.Context, deep bool) (CredentialReport, error) {
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
	rep := CredentialReport{Found: []string{}, Evidence: []string{}}
	remote := map[string][]string{}
	for comp, pairs := range d.defaultPasswords() {
		for _, pair := range pairs {
			user, _, _ := strings.Cut(pair, ":")
			switch {
			case resolved[comp] == pair:
				rep.Found = append(rep.Found, comp+" (the configured password is a factory default)")
			case strings.HasPrefix(resolved[comp], user+":"):
				// the configured user with another password: nothing to try
			default:
				remote[comp] = append(remote[comp], pair)
			}
		}
	}
	sort.Strings(rep.Found)
	path := filepath.Join(d.Config.StateDir, "cache", credStateFile)
	st := readCredState(path)
	t := now().UTC()
	due := map[string][]string{}
	for _, comp := range credComponents {
		if len(remote[comp]) == 0 {
			continue
		}
		last, ok := st.Tries[d.credKey(comp)]
		if !ok || deep || t.Before(last.TriedAt) || t.Sub(last.TriedAt) >= credRetryAfter {
			due[comp] = remote[comp]
			continue
		}
		rep.Found = append(rep.Found, last.Found...)
		rep.Evidence = append(rep.Evidence, fmt.Sprintf("%s default passwords last tried %s (next try after %s, or with --deep)",
			comp, last.TriedAt.Format(time.RFC3339), last.TriedAt.Add(credRetryAfter).Format(time.RFC3339)))
	}
	tried, err := d.try(ctx, due)
	if len(tried) == 0 {
		return rep, err
	}
	for _, comp := range credComponents {
		found, ok := tried[comp]
		if !ok {
			continue
		}
		st.Tries[d.credKey(comp)] = credTry{TriedAt: t, Found: found}
		rep.Found = append(rep.Found, found...)
		rep.Evidence = append(rep.Evidence, fmt.Sprintf("%s default passwords tried now (next try after %s, or with --deep)",
			comp, t.Add(credRetryAfter).Format(time.RFC3339)))
	}
	if werr := writeCache(path, st); werr != nil {
		rep.Evidence = append(rep.Evidence, "the try is not recorded ("+werr.Error()+"): the next run tries again")
	}
	return rep, err
}

var credComponents = []string{"indexer", "manager"}

// credKey names a target: the component, its URL and the configured user
// (which decides the users tried).
func (d DefaultCredentials) credKey(comp string) string {
	if comp == "indexer" {
		return comp + " " + d.Config.Indexer.URL + " " + d.Config.Indexer.Username
	}
	return comp + " " + d.Config.Manager.APIURL + " " + d.Config.Manager.Username
}

type credTry struct {
	TriedAt time.Time `json:"tried_at"`
	Found   []string  `json:"found"`
}

type credState struct {
	Version int                `json:"version"`
	Tries   map[string]credTry `json:"tries"`
}

// readCredState reads the record of the tries; a missing, unreadable or
// foreign file (a symlink is never followed) is an empty record: the tries
// run again.
func readCredState(path string) credState {
	var c credState
	if !readCache(path, &c) || c.Version != 1 || c.Tries == nil {
		return credState{Version: 1, Tries: map[string]credTry{}}
	}
	return c
}

// readCache decodes a record of state_dir/cache into v; false when it is
// missing, unreadable, not JSON or behind a symlink (never followed).
func readCache(path string, v any) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(v) == nil
}

// writeCache replaces a record of state_dir/cache atomically (temporary
// file, fsync, rename): a symlink at its place is replaced, never followed,
// and the cache directory must be a real directory.
func writeCache(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if fi, err := os.Lstat(dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symlink is not followed)", dir)
	}
	return renameio.WriteFile(path, data, 0o600)
}

// try logs in once with each default pair on the components that answer.
// tried holds, per component whose factory passwords were sent, the users
// that accepted theirs.
func (d DefaultCredentials) try(ctx context.Context, pairs map[string][]string) (tried map[string][]string, err error) {
	tried = map[string][]string{}
	var unreachable []string
	for _, comp := range credComponents {
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
			if _, ok := tried[comp]; !ok {
				tried[comp] = []string{}
			}
			if accepted {
				tried[comp] = append(tried[comp], comp+" user "+user+" accepts its default password")
			}
		}
	}
	if len(unreachable) > 0 {
		return tried, fmt.Errorf("could not try the default credentials on %s (unreachable)", strings.Join(unreachable, ", "))
	}
	return tried, nil
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
