package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
)

// APIInfo is GET / (the API's identity).
type APIInfo struct {
	Title      string    `json:"title"`
	APIVersion string    `json:"api_version"` // "4.9.0", no "v"
	Revision   int       `json:"revision"`    // 40907
	Hostname   string    `json:"hostname"`
	License    string    `json:"license_name,omitempty"`
	Timestamp  time.Time `json:"timestamp"`
}

// Info returns the API's identity (GET /).
func (c *Client) Info(ctx context.Context) (APIInfo, error) {
	w, err := getResult[struct {
		Title       string  `json:"title"`
		APIVersion  string  `json:"api_version"`
		Revision    flexInt `json:"revision"`
		Hostname    string  `json:"hostname"`
		LicenseName string  `json:"license_name"`
		Timestamp   string  `json:"timestamp"`
	}](ctx, c, "/", nil)
	if err != nil {
		return APIInfo{}, err
	}
	return APIInfo{Title: w.Title, APIVersion: w.APIVersion, Revision: int(w.Revision), Hostname: w.Hostname,
		License: w.LicenseName, Timestamp: parseAPITime(w.Timestamp)}, nil
}

// ManagerInfo is GET /manager/info.
type ManagerInfo struct {
	Path           string `json:"path"`
	Version        string `json:"version"` // "v4.9.0"
	Type           string `json:"type"`
	MaxAgents      string `json:"max_agents"`
	OpenSSLSupport string `json:"openssl_support"`
	TZOffset       string `json:"tz_offset"`
	TZName         string `json:"tz_name"`
}

// ParsedVersion parses Version.
func (m ManagerInfo) ParsedVersion() (Version, error) { return ParseVersion(m.Version) }

// ManagerInfo returns the manager's install facts.
func (c *Client) ManagerInfo(ctx context.Context) (ManagerInfo, error) {
	var out ManagerInfo
	err := firstItem(ctx, c, "/manager/info", &out)
	return out, err
}

// firstItem fetches an envelope and stores affected_items[0], turning an
// all-failed envelope into its item error.
func firstItem[T any](ctx context.Context, c *Client, path string, out *T) error {
	env, err := callEnvelope[T](ctx, c, request{method: http.MethodGet, path: path})
	if err != nil {
		return err
	}
	if len(env.AffectedItems) == 0 {
		if len(env.FailedItems) > 0 {
			return fmt.Errorf("GET %s: %w", path, &env.FailedItems[0])
		}
		return fmt.Errorf("GET %s: empty result: %s", path, env.Message)
	}
	*out = env.AffectedItems[0]
	return nil
}

// BasicDaemons must be running for the API to serve requests (1017 check in
// the manager's DAPI layer), given as the part after the product prefix.
var basicDaemons = []string{"modulesd", "analysisd", "execd", "db", "remoted"}

// BasicDaemons returns the suffixes of the five daemons the API needs
// ("modulesd" for wazuh-modulesd, "db" for wazuh-db, …).
func BasicDaemons() []string { return append([]string(nil), basicDaemons...) }

// Daemon states reported by /manager/status.
const (
	DaemonRunning    = "running"
	DaemonStopped    = "stopped"
	DaemonFailed     = "failed"
	DaemonRestarting = "restarting"
	DaemonStarting   = "starting"
)

// DaemonStates maps a daemon name ("wazuh-analysisd") to its state.
type DaemonStates map[string]string

// Names returns the daemon names, sorted.
func (d DaemonStates) Names() []string {
	out := make([]string, 0, len(d))
	for k := range d {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// NotReady lists the basic daemons (modulesd, analysisd, execd, db,
// remoted) that are not running, as "name (state)", in that order. A
// daemon missing from the map is listed as "(missing)". Names may carry any
// product prefix (wazuh-, siem-).
func (d DaemonStates) NotReady() []string {
	prefix := d.prefix()
	var out []string
	for _, suffix := range basicDaemons {
		name, state, ok := d.lookup(suffix)
		switch {
		case !ok:
			out = append(out, prefix+suffix+" (missing)")
		case state != DaemonRunning:
			out = append(out, name+" ("+state+")")
		}
	}
	return out
}

func (d DaemonStates) lookup(suffix string) (string, string, bool) {
	for name, state := range d {
		if i := strings.IndexByte(name, '-'); i >= 0 && name[i+1:] == suffix {
			return name, state, true
		}
	}
	return "", "", false
}

func (d DaemonStates) prefix() string {
	for _, name := range d.Names() {
		if i := strings.IndexByte(name, '-'); i > 0 {
			return name[:i+1]
		}
	}
	return "wazuh-"
}

// Down lists the basic daemons that are failed or stopped (waiting does not
// bring them back), as "name (state)", in the basic daemons' order. A
// restarting or starting daemon is not down.
func (d DaemonStates) Down() []string {
	var out []string
	for _, suffix := range basicDaemons {
		if name, state, ok := d.lookup(suffix); ok && (state == DaemonFailed || state == DaemonStopped) {
			out = append(out, name+" ("+state+")")
		}
	}
	return out
}

// DaemonsDownFix is what to do about a failed or stopped basic daemon.
const DaemonsDownFix = "the daemon's error in logs/ossec.log under the manager's install_dir, then restart the manager"

var notReadyItem = regexp.MustCompile(`([\w.-]+)->(\w+)`)

// NotReadyDaemons reads the daemon states a 1017 answer names: `Some Wazuh
// daemons are not ready yet in node "node01" (wazuh-analysisd->failed,
// wazuh-modulesd->restarting)`. Only the named daemons are in the result.
func NotReadyDaemons(detail string) DaemonStates {
	out := DaemonStates{}
	i := strings.LastIndex(detail, "(")
	if i < 0 {
		return out
	}
	for _, m := range notReadyItem.FindAllStringSubmatch(detail[i:], -1) {
		out[m[1]] = m[2]
	}
	return out
}

// NotReadyError returns the daemon states named by a 1017 error in err's
// chain (see NotReadyDaemons); ok is false when err carries no 1017.
func NotReadyError(err error) (DaemonStates, bool) {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != CodeDaemonsNotReady {
		return nil, false
	}
	return NotReadyDaemons(ae.Detail), true
}

const statusPath = "/manager/status"

// ManagerStatus returns the daemon states (GET /manager/status, which the
// manager serves even while daemons are not ready, to a client that already
// holds a token: the login itself is refused with 1017).
func (c *Client) ManagerStatus(ctx context.Context) (DaemonStates, error) {
	out := DaemonStates{}
	err := firstItem(ctx, c, statusPath, (*map[string]string)(&out))
	return out, err
}

// ConfigValidation is GET /manager/configuration/validation.
type ConfigValidation struct {
	OK     bool     `json:"ok"`
	Errors []string `json:"errors"`
}

var errStart = regexp.MustCompile(`, (?:\(\d{4}\)|[\w.-]+: (?:ERROR|CRITICAL): )`)

// splitValidationErrors splits the 1908 message ("Error validating
// configuration: a, b") into its lines; the lines start with "(NNNN)".
func splitValidationErrors(msg string) []string {
	msg = strings.TrimSpace(msg)
	if i := strings.Index(msg, "configuration:"); i >= 0 {
		msg = strings.TrimSpace(msg[i+len("configuration:"):])
	}
	if msg == "" {
		return nil
	}
	var out []string
	for {
		loc := errStart.FindStringIndex(msg)
		if loc == nil {
			break
		}
		out = append(out, strings.TrimSpace(msg[:loc[0]]))
		msg = msg[loc[0]+2:]
	}
	return append(out, strings.TrimSpace(msg))
}

// ValidateConfig asks the manager to validate its configuration. A broken
// configuration is OK=false with the error lines, not an error.
func (c *Client) ValidateConfig(ctx context.Context) (ConfigValidation, error) {
	env, err := callEnvelope[struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	}](ctx, c, request{method: http.MethodGet, path: "/manager/configuration/validation"})
	if err != nil {
		return ConfigValidation{}, err
	}
	out := ConfigValidation{OK: true, Errors: []string{}}
	for _, f := range env.FailedItems {
		out.OK = false
		if f.Code == CodeConfigInvalid {
			out.Errors = append(out.Errors, splitValidationErrors(f.Message)...)
		} else {
			out.Errors = append(out.Errors, f.Error())
		}
	}
	for _, it := range env.AffectedItems {
		if !strings.EqualFold(it.Status, "OK") {
			out.OK = false
			out.Errors = append(out.Errors, fmt.Sprintf("%s: %s", it.Name, it.Status))
		}
	}
	if len(env.AffectedItems) == 0 && len(env.FailedItems) == 0 {
		return out, errors.New("GET /manager/configuration/validation: empty result")
	}
	return out, nil
}

// ClusterStatus is GET /cluster/status.
type ClusterStatus struct {
	Enabled bool `json:"enabled"`
	Running bool `json:"running"`
}

// ClusterStatus reports whether the manager cluster is enabled and running.
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	w, err := getResult[struct {
		Enabled string `json:"enabled"`
		Running string `json:"running"`
	}](ctx, c, "/cluster/status", nil)
	if err != nil {
		return ClusterStatus{}, err
	}
	return ClusterStatus{Enabled: strings.EqualFold(w.Enabled, "yes"), Running: strings.EqualFold(w.Running, "yes")}, nil
}
