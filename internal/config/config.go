// Package config holds siemctl's typed configuration: one YAML file, overridden
// by SIEMCTL_<SECTION>_<KEY> environment variables and by flags, on top of the
// defaults of a profile ("siem" the reference layout, "wazuh" the real Wazuh
// 4.x layout). It is the only importer of viper.
//
// The keys are a stable contract (`siemctl help config` lists them).
package config

import (
	"errors"
	"fmt"
	"github.com/siemctl/siemctl/internal/redact"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// DefaultPath is where siemctl looks for its config when --config is not given.
const DefaultPath = "/etc/siemctl/siemctl.yaml"

// Config is the whole configuration.
type Config struct {
	Profile string `mapstructure:"profile"`
	// Root prefixes every default path (like DPKG_ROOT); PortOffset is added
	// to every default port. Explicit values are taken as given (root.go).
	Root       string `mapstructure:"root"`
	PortOffset int    `mapstructure:"port_offset"`
	StateDir   string `mapstructure:"state_dir"`
	BackupDir  string `mapstructure:"backup_dir"`
	// Components are the components this host runs (HostComponents): all
	// four on a single host; in a distributed deployment e.g. [indexer] or
	// [manager, shipper].
	Components []string   `mapstructure:"components"`
	Systemd    Systemd    `mapstructure:"systemd"`
	Packages   Packages   `mapstructure:"packages"`
	Indexer    Indexer    `mapstructure:"indexer"`
	Manager    Manager    `mapstructure:"manager"`
	Dashboard  Dashboard  `mapstructure:"dashboard"`
	Shipper    Shipper    `mapstructure:"shipper"`
	Thresholds Thresholds `mapstructure:"thresholds"`

	// Source is the file the config was read from ("" when none existed).
	Source string `mapstructure:"-"`
	// Warnings are problems that do not stop siemctl (an unknown SIEMCTL_*
	// variable); the caller shows them.
	Warnings []string `mapstructure:"-"`

	// settings are the effective values by dotted key and origins where each came from
	// (Effective).
	settings map[string]any
	origins  map[string]string
}

// Setting is one effective configuration value and where it came from.
type Setting struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Origin string `json:"origin"` // "profile siem", "file /etc/siemctl/siemctl.yaml", "env SIEMCTL_INDEXER_URL", "flag"
}

// Effective lists every key with its value and origin, sorted by key. Secrets are never values of
// the configuration (only where to read them: *_file, *_env, *_command), so nothing here is secret.
func (c *Config) Effective() []Setting {
	out := make([]Setting, 0, len(c.settings))
	for k, v := range c.settings {
		out = append(out, Setting{Key: k, Value: v, Origin: c.origins[k]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Systemd says how to reach the service manager.
type Systemd struct {
	Address string `mapstructure:"address"` // empty: the system manager
}

// Packages selects the package manager.
type Packages struct {
	Manager string `mapstructure:"manager"` // auto | apt | yum
}

// Indexer is the OpenSearch-based indexer.
type Indexer struct {
	URL               string `mapstructure:"url"`
	Username          string `mapstructure:"username"`
	Secret            `mapstructure:",squash"`
	CAFile            string   `mapstructure:"ca_file"`
	Insecure          bool     `mapstructure:"insecure"`
	Unit              string   `mapstructure:"unit"`
	StartWait         string   `mapstructure:"start_wait"` // StartWaits
	Package           string   `mapstructure:"package"`
	ConfigDir         string   `mapstructure:"config_dir"`
	DataDir           string   `mapstructure:"data_dir"`
	SecurityInit      []string `mapstructure:"security_init"`
	HashTool          []string `mapstructure:"hash_tool"`
	AlertsIndexPrefix string   `mapstructure:"alerts_index_prefix"`
	// CleanupPrefixes are further daily-index prefixes `alerts cleanup`
	// handles with the same safety rules (wazuh: wazuh-archives-4.x-).
	CleanupPrefixes []string `mapstructure:"cleanup_prefixes"`
	// DataSafety is how the upgrade secures the data an OpenSearch node
	// cannot downgrade: auto (snapshot when a usable repository is there,
	// else copy), copy (cold copy of data_dir), snapshot (OpenSearch
	// snapshot into SnapshotRepository) or command (DataHookTake/Restore).
	DataSafety         string   `mapstructure:"data_safety"`
	SnapshotRepository string   `mapstructure:"snapshot_repository"`
	SnapshotLocation   string   `mapstructure:"snapshot_location"` // empty: <first path.repo>/siemctl
	DataHookTake       []string `mapstructure:"data_hook_take"`
	DataHookRestore    []string `mapstructure:"data_hook_restore"`
	// Nodes are the indexer cluster's node names health expects (empty:
	// every node this host has seen in the cluster, state_dir/cache).
	Nodes []string `mapstructure:"nodes"`
}

// Data safety modes (indexer.data_safety).
const (
	DataSafetyAuto     = "auto"
	DataSafetyCopy     = "copy"
	DataSafetySnapshot = "snapshot"
	DataSafetyCommand  = "command"
)

// Manager is the manager: REST API, unit, install dir and tools.
type Manager struct {
	APIURL      string `mapstructure:"api_url"`
	Username    string `mapstructure:"username"`
	Secret      `mapstructure:",squash"`
	CAFile      string `mapstructure:"ca_file"`
	Insecure    bool   `mapstructure:"insecure"`
	InstallDir  string `mapstructure:"install_dir"`
	ControlTool string `mapstructure:"control_tool"` // basename under install_dir/bin
	// ConfigCheck is the offline configuration check's argv; a relative
	// program is under install_dir (wazuh: [bin/wazuh-analysisd, -t]).
	ConfigCheck    []string `mapstructure:"config_check"`
	Unit           string   `mapstructure:"unit"`
	StartWait      string   `mapstructure:"start_wait"` // StartWaits
	Package        string   `mapstructure:"package"`
	Syslog         string   `mapstructure:"syslog"`
	AgentPort      int      `mapstructure:"agent_port"`
	EnrollmentPort int      `mapstructure:"enrollment_port"`
	// Nodes are the manager cluster's node names health expects connected
	// (empty: the nodes the master lists).
	Nodes []string `mapstructure:"nodes"`
}

// Dashboard is the web UI.
type Dashboard struct {
	URL       string `mapstructure:"url"`
	CAFile    string `mapstructure:"ca_file"`
	Insecure  bool   `mapstructure:"insecure"`
	Unit      string `mapstructure:"unit"`
	StartWait string `mapstructure:"start_wait"` // StartWaits
	Package   string `mapstructure:"package"`
	ConfigDir string `mapstructure:"config_dir"` // backed up and restored by the upgrade
	// BackupPaths are further files the upgrade backs up with the config
	// (wazuh: the app's wazuh.yml under the dashboard's data directory).
	BackupPaths []string `mapstructure:"backup_paths"`
	// Nodes are the hosts of every dashboard's URL in a distributed deployment, the dashboard
	// entries of a rolling upgrade's order (empty: the host of url).
	Nodes []string `mapstructure:"nodes"`
}

// Shipper is the Filebeat-like forwarder.
type Shipper struct {
	Binary  string `mapstructure:"binary"`
	HomeDir string `mapstructure:"home_dir"` // --path.home (the module directory is home_dir/module); empty: not passed
	// DataDir is Filebeat's path.data (registry, keystore), passed as
	// --path.data (empty: not passed); its registry, the read position in the
	// alerts file, is saved with the indexer data and restored on rollback.
	DataDir        string `mapstructure:"data_dir"`
	Unit           string `mapstructure:"unit"`
	StartWait      string `mapstructure:"start_wait"` // StartWaits
	Package        string `mapstructure:"package"`
	ConfigDir      string `mapstructure:"config_dir"`
	TemplateSource string `mapstructure:"template_source"` // URL or file pattern with {version}
	// ModuleSource is where the Filebeat module tarball is fetched
	// ({module} = e.g. wazuh-filebeat-0.4); "" leaves the module alone.
	ModuleSource string `mapstructure:"module_source"`
	TemplateName string `mapstructure:"template_name"`
	Pipeline     string `mapstructure:"pipeline"`
	// BackupPaths are further files the upgrade backs up with the config
	// (wazuh: the Filebeat keystore in path.data).
	BackupPaths []string `mapstructure:"backup_paths"`
}

// Thresholds are the disk limits the health checks and gates judge against.
type Thresholds struct {
	DiskWarnPercent       int `mapstructure:"disk_warn_percent"`
	DiskNogoPercent       int `mapstructure:"disk_nogo_percent"`
	UpgradeMinFreePercent int `mapstructure:"upgrade_min_free_percent"`
}

// Component names, in start order.
var Components = []string{"indexer", "manager", "dashboard", "shipper"}

// Units returns the component → unit map.
func (c *Config) Units() map[string]string {
	return map[string]string{
		"indexer": c.Indexer.Unit, "manager": c.Manager.Unit,
		"dashboard": c.Dashboard.Unit, "shipper": c.Shipper.Unit,
	}
}

// DefaultStartWaits are the spec's start wait limits: how long a start waits
// for a component to answer before it says the component is still starting
// (each component's start_wait key, StartWaits, defaults to these).
var DefaultStartWaits = map[string]time.Duration{
	"indexer":   60 * time.Second,
	"manager":   30 * time.Second,
	"dashboard": 60 * time.Second,
	"shipper":   30 * time.Second,
}

// startWait is a component's default start_wait as the key is written ("60s").
func startWait(comp string) string {
	return fmt.Sprintf("%ds", int(DefaultStartWaits[comp].Seconds()))
}

// StartWaits returns the component → start wait map (the start_wait keys; a
// value Validate refused, or none, is the component's default): a site whose
// indexer needs longer to answer after a start (a large heap, many shards, a
// slow disk) raises indexer.start_wait instead of seeing every upgrade roll
// back at the spec's 60 s.
func (c *Config) StartWaits() map[string]time.Duration {
	out := map[string]time.Duration{}
	for comp, raw := range c.startWaitKeys() {
		if d, err := time.ParseDuration(raw); err == nil && d > 0 {
			out[comp] = d
			continue
		}
		out[comp] = DefaultStartWaits[comp]
	}
	return out
}

func (c *Config) startWaitKeys() map[string]string {
	return map[string]string{
		"indexer": c.Indexer.StartWait, "manager": c.Manager.StartWait,
		"dashboard": c.Dashboard.StartWait, "shipper": c.Shipper.StartWait,
	}
}

// maxStartWait bounds the start_wait keys: a start is still an operation
// someone watches.
const maxStartWait = 30 * time.Minute

// PackageNames returns the component → package map.
func (c *Config) PackageNames() map[string]string {
	return map[string]string{
		"indexer": c.Indexer.Package, "manager": c.Manager.Package,
		"dashboard": c.Dashboard.Package, "shipper": c.Shipper.Package,
	}
}

// HostComponents returns the components this host runs (the components key),
// in start order. It is the one home of the host view: health judges these
// components' units, ports, packages and files, and services acts on them.
func (c *Config) HostComponents() []string {
	if len(c.Components) == 0 {
		return slices.Clone(Components)
	}
	var out []string
	for _, comp := range Components {
		if slices.Contains(c.Components, comp) {
			out = append(out, comp)
		}
	}
	return out
}

// Runs reports whether this host runs the component.
func (c *Config) Runs(component string) bool {
	return slices.Contains(c.HostComponents(), component)
}

// NotHere returns the components this host does not run, in start order.
func (c *Config) NotHere() []string {
	var out []string
	for _, comp := range Components {
		if !c.Runs(comp) {
			out = append(out, comp)
		}
	}
	return out
}

// HostUnits is Units restricted to the components this host runs.
func (c *Config) HostUnits() map[string]string { return c.onHost(c.Units()) }

// HostPackageNames is PackageNames restricted to the components this host
// runs.
func (c *Config) HostPackageNames() map[string]string { return c.onHost(c.PackageNames()) }

func (c *Config) onHost(all map[string]string) map[string]string {
	out := make(map[string]string, len(all))
	for _, comp := range c.HostComponents() {
		out[comp] = all[comp]
	}
	return out
}

// Error is a configuration problem tied to one key.
type Error struct {
	Key string // dotted key, e.g. "indexer.url"
	Msg string // what is wrong and how to fix it
}

func (e *Error) Error() string {
	if e.Key == "" {
		return "config: " + e.Msg
	}
	return fmt.Sprintf("config: %s: %s", e.Key, e.Msg)
}

// ErrInvalid is matched by every configuration error (errors.Is).
var ErrInvalid = errors.New("invalid configuration")

// Is makes every *Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// LoadOptions controls Load.
type LoadOptions struct {
	Path         string         // --config; "" means DefaultPath (missing is fine then)
	Profile      string         // --profile; overrides file and env
	Env          []string       // environment (os.Environ()); SIEMCTL_* are applied
	Overrides    map[string]any // dotted key → value, from flags
	ExplicitPath bool           // the path was given by the user: a missing file is an error
	LookupEnv    func(string) (string, bool)
}

// Load reads, merges and validates the configuration.
func Load(opts LoadOptions) (*Config, error) {
	env := envMap(opts.Env)
	path := opts.Path
	if path == "" {
		if p, ok := env["SIEMCTL_CONFIG"]; ok && p != "" {
			path, opts.ExplicitPath = p, true
		} else {
			path = DefaultPath
		}
	}

	file := map[string]any{}
	source := ""
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		v := viper.New()
		v.SetConfigType("yaml")
		if err := v.ReadConfig(strings.NewReader(string(data))); err != nil {
			return nil, &Error{Msg: fmt.Sprintf("%s is not valid YAML: %v", path, err)}
		}
		file = v.AllSettings()
		source = path
	case errors.Is(err, os.ErrNotExist) && !opts.ExplicitPath:
		// no file: defaults and environment only
	default:
		return nil, &Error{Msg: fmt.Sprintf("read %s: %v (pass --config FILE or set SIEMCTL_CONFIG)", path, unwrapPathErr(err))}
	}

	profile := "siem"
	if p, ok := file["profile"].(string); ok && p != "" {
		profile = p
	}
	if p := env["SIEMCTL_PROFILE"]; p != "" {
		profile = p
	}
	if opts.Profile != "" {
		profile = opts.Profile
	}
	defaults, ok := Profiles[profile]
	if !ok {
		return nil, &Error{Key: "profile", Msg: fmt.Sprintf("unknown profile %q (use one of: %s)", profile, strings.Join(ProfileNames(), ", "))}
	}

	if err := checkUnknownKeys(file, defaults); err != nil {
		return nil, err
	}

	v := viper.New()
	origins := map[string]string{}
	for k, val := range flatten("", defaults) {
		v.SetDefault(k, val)
		origins[k] = "profile " + profile
	}
	for k := range flatten("", file) {
		origins[k] = "file " + source
	}
	if err := v.MergeConfigMap(file); err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	// Environment: SIEMCTL_<SECTION>_<KEY>, e.g. SIEMCTL_INDEXER_URL.
	for _, k := range v.AllKeys() {
		if val, ok := env[EnvName(k)]; ok {
			v.Set(k, envValue(k, val, defaults))
			origins[k] = "env " + EnvName(k)
		}
	}
	v.Set("profile", profile)
	switch {
	case opts.Profile != "":
		origins["profile"] = "flag --profile"
	case env["SIEMCTL_PROFILE"] != "":
		origins["profile"] = "env SIEMCTL_PROFILE"
	case file["profile"] != nil:
		origins["profile"] = "file " + source
	default:
		origins["profile"] = "default"
	}
	for k, val := range opts.Overrides {
		v.Set(k, val)
		origins[k] = "flag"
	}
	if err := applyRootAndOffset(v, defaults, origins); err != nil {
		return nil, err
	}

	var cfg Config
	dc := func(c *mapstructure.DecoderConfig) {
		c.ErrorUnused = true
		c.WeaklyTypedInput = true
		c.DecodeHook = mapstructure.StringToSliceHookFunc(",")
	}
	if err := v.Unmarshal(&cfg, dc); err != nil {
		return nil, &Error{Msg: fmt.Sprintf("%v (check the value types in %s)", err, orDefault(source, "the environment"))}
	}
	cfg.Source = source
	cfg.settings, cfg.origins = flatten("", v.AllSettings()), origins
	cfg.Warnings = unknownEnv(env, v.AllKeys(), cfg.Indexer.PasswordEnv, cfg.Manager.PasswordEnv)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Validate checks values that would only fail later, far from their cause.
func (c *Config) Validate() error {
	var errs []error
	checkURL := func(key, raw string, schemes ...string) {
		if raw == "" {
			errs = append(errs, &Error{Key: key, Msg: "is empty; set it to the component's URL"})
			return
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) {
			errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf("%q is not a valid %s URL (e.g. %s://127.0.0.1:PORT)", redact.URL(raw), strings.Join(schemes, "/"), schemes[0])})
			return
		}
		if u.User != nil {
			errs = append(errs, &Error{Key: key, Msg: "must not contain credentials; use the password_file key"})
		}
	}
	checkURL("indexer.url", c.Indexer.URL, "https", "http")
	checkURL("manager.api_url", c.Manager.APIURL, "https", "http")
	checkURL("dashboard.url", c.Dashboard.URL, "https", "http")
	if c.Manager.Syslog != "" {
		checkURL("manager.syslog", c.Manager.Syslog, "udp", "tcp")
	}
	if !slices.Contains([]string{"auto", "apt", "yum"}, c.Packages.Manager) {
		errs = append(errs, &Error{Key: "packages.manager", Msg: fmt.Sprintf("%q is not one of auto, apt, yum", c.Packages.Manager)})
	}
	errs = append(errs, c.Indexer.validateDataSafety()...)
	if err := ValidIndexPrefixes(append([]string{c.Indexer.AlertsIndexPrefix}, c.Indexer.CleanupPrefixes...)); err != nil {
		errs = append(errs, &Error{Key: "indexer.cleanup_prefixes", Msg: err.Error()})
	}
	if c.Systemd.Address != "" && !strings.HasPrefix(c.Systemd.Address, "unix:") {
		errs = append(errs, &Error{Key: "systemd.address", Msg: fmt.Sprintf("%q must be empty (the system manager) or a D-Bus address like unix:path=/run/systemd/private", c.Systemd.Address)})
	}
	t := c.Thresholds
	for key, p := range map[string]int{"thresholds.disk_warn_percent": t.DiskWarnPercent, "thresholds.disk_nogo_percent": t.DiskNogoPercent, "thresholds.upgrade_min_free_percent": t.UpgradeMinFreePercent} {
		if p < 0 || p > 100 {
			errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf("%d is not a percentage between 0 and 100", p)})
		}
	}
	if t.DiskWarnPercent > t.DiskNogoPercent {
		errs = append(errs, &Error{Key: "thresholds.disk_warn_percent", Msg: fmt.Sprintf("%d is above disk_nogo_percent %d; the warning must come first", t.DiskWarnPercent, t.DiskNogoPercent)})
	}
	for key, p := range map[string]int{"manager.agent_port": c.Manager.AgentPort, "manager.enrollment_port": c.Manager.EnrollmentPort} {
		if p <= 0 || p > 65535 {
			errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf("%d is not a TCP port", p)})
		}
	}
	for key, s := range map[string]Secret{"indexer": c.Indexer.Secret, "manager": c.Manager.Secret} {
		if err := s.validate(key); err != nil {
			errs = append(errs, err)
		}
	}
	if len(c.Components) == 0 {
		errs = append(errs, &Error{Key: "components", Msg: "is empty; list the components this host runs (of " + strings.Join(Components, ", ") + ")"})
	}
	for _, comp := range c.Components {
		if !slices.Contains(Components, comp) {
			errs = append(errs, &Error{Key: "components", Msg: fmt.Sprintf("%q is not a component (use some of: %s)", comp, strings.Join(Components, ", "))})
		}
	}
	for comp, raw := range c.startWaitKeys() {
		if raw == "" {
			continue
		}
		if d, err := time.ParseDuration(raw); err != nil || d < time.Second || d > maxStartWait {
			errs = append(errs, &Error{Key: comp + ".start_wait", Msg: fmt.Sprintf("%q is not a duration from 1s to %s (e.g. %s, the default; 3m for an indexer that is slow to answer after a start)", raw, "30m", startWait(comp))})
		}
	}
	if c.StateDir == "" {
		errs = append(errs, &Error{Key: "state_dir", Msg: "is empty; siemctl keeps journals, snapshots and its lock there"})
	}
	if c.Shipper.ModuleSource != "" && !strings.Contains(c.Shipper.ModuleSource, "{module}") {
		errs = append(errs, &Error{Key: "shipper.module_source", Msg: "must contain {module} (e.g. https://packages.wazuh.com/4.x/filebeat/{module}.tar.gz) so the module of the exact version is fetched"})
	}
	if c.Shipper.TemplateSource != "" && !strings.Contains(c.Shipper.TemplateSource, "{version}") {
		errs = append(errs, &Error{Key: "shipper.template_source", Msg: "must contain {version} so the template for the exact target version is fetched"})
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// checkUnknownKeys reports keys in the file that no profile knows (typos).
func checkUnknownKeys(file, defaults map[string]any) error {
	known := flatten("", defaults)
	var errs []error
	for k := range flatten("", file) {
		if _, ok := known[k]; ok {
			continue
		}
		// a section given as a scalar or a key inside an unknown section
		errs = append(errs, &Error{Key: k, Msg: "unknown key" + suggest(k, known)})
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func suggest(k string, known map[string]any) string {
	best, bestD := "", 4
	for cand := range known {
		if d := levenshtein(k, cand); d < bestD {
			best, bestD = cand, d
		}
	}
	if best == "" {
		return "; see the configuration reference (siemctl help config)"
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func flatten(prefix string, m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			for kk, vv := range flatten(key, sub) {
				out[kk] = vv
			}
			continue
		}
		out[key] = v
	}
	return out
}

func envValue(key, val string, defaults map[string]any) any {
	def := flatten("", defaults)[key]
	if _, isList := def.([]string); isList {
		return strings.Fields(val)
	}
	return val
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// ValidIndexPrefixes checks a set of daily index prefixes (the alerts
// prefix and indexer.cleanup_prefixes): literal (no wildcard or separator),
// not empty, none the start of another (each daily index must belong to
// one). A cleanup plan's prefixes are checked with it too.
func ValidIndexPrefixes(prefixes []string) error {
	for i, a := range prefixes {
		if a == "" || strings.ContainsAny(a, "*?,/ ") {
			return fmt.Errorf("index prefix %q must be a literal prefix without wildcards (e.g. wazuh-archives-4.x-)", a)
		}
		for j, b := range prefixes {
			if i != j && strings.HasPrefix(b, a) {
				return fmt.Errorf("index prefix %q is the start of %q: each daily index must belong to one prefix", a, b)
			}
		}
	}
	return nil
}

func (ix *Indexer) validateDataSafety() []error {
	var errs []error
	switch ix.DataSafety {
	case DataSafetyAuto, DataSafetyCopy, DataSafetySnapshot:
	case DataSafetyCommand:
		if len(ix.DataHookTake) == 0 || len(ix.DataHookRestore) == 0 {
			errs = append(errs, &Error{Key: "indexer.data_safety", Msg: "command needs both indexer.data_hook_take and indexer.data_hook_restore (argv lists, e.g. [/usr/local/sbin/lvm-snap, take])"})
		}
	default:
		errs = append(errs, &Error{Key: "indexer.data_safety", Msg: fmt.Sprintf("%q is not one of auto, copy, snapshot, command", ix.DataSafety)})
	}
	if r := ix.SnapshotRepository; r == "" || strings.ContainsAny(r, "/\\ ,\"*?<>|#") || strings.HasPrefix(r, "_") || r != strings.ToLower(r) {
		errs = append(errs, &Error{Key: "indexer.snapshot_repository", Msg: fmt.Sprintf("%q is not a valid repository name (lowercase, no blanks, slashes, commas, quotes or leading _)", r)})
	}
	if l := ix.SnapshotLocation; l != "" && !filepath.IsAbs(l) {
		errs = append(errs, &Error{Key: "indexer.snapshot_location", Msg: fmt.Sprintf("%q must be an absolute path (or empty: a siemctl directory under the first path.repo)", l)})
	}
	return errs
}
