// Package shipper emulates Filebeat OSS 7.10.2 with the SIEM alerts module: the CLI (test config, test
// output, setup --pipelines, setup --index-management) and the daemon that tails the manager's alerts
// file and bulk-indexes it through the ingest pipeline.
package shipper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// BeatVersion is the Filebeat version the shipper reports.
const BeatVersion = "7.10.2"

// PipelineID is the ingest pipeline id of the alerts fileset.
const PipelineID = "filebeat-" + BeatVersion + "-siem-alerts-pipeline"

// Paths are Filebeat's path.* settings.
type Paths struct {
	Home, Config, Data, Logs string
}

// DefaultPaths derives the paths from the executable (ROOT/usr/bin/shipper → ROOT/etc/shipper, ...).
func DefaultPaths(exe string) Paths {
	root := filepath.Dir(filepath.Dir(filepath.Dir(exe)))
	return Paths{
		Home:   filepath.Join(root, "usr", "share", "shipper"),
		Config: filepath.Join(root, "etc", "shipper"),
		Data:   filepath.Join(root, "var", "lib", "shipper"),
		Logs:   filepath.Join(root, "var", "log", "shipper"),
	}
}

// Config is the flattened shipper.yml (dotted keys) with keystore variables resolved lazily.
type Config struct {
	Path     string
	flat     map[string]any
	keystore map[string]string
	env      func(string) string
}

// LoadConfig reads the config file, checks its permissions like Filebeat's strict.perms, and applies
// -E overrides.
func LoadConfig(path string, strictPerms bool, overrides []string, keystorePath string, env func(string) string) (*Config, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("error loading config file: %w", err)
	}
	if strictPerms && st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("error loading config file: config file (%q) can only be writable by the owner but the permissions are %q (to fix the permissions use: 'chmod go-w %s')",
			path, st.Mode().String(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error loading config file: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("error loading config file: %w", err)
	}
	c := &Config{Path: path, flat: map[string]any{}, env: env}
	flatten("", raw, c.flat)
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return nil, fmt.Errorf("error loading config file: invalid -E setting %q", o)
		}
		var val any
		if err := yaml.Unmarshal([]byte(v), &val); err != nil || val == nil {
			val = v
		}
		c.flat[k] = val
	}
	if keystorePath != "" {
		ks, err := loadKeystore(keystorePath)
		if err != nil {
			return nil, err
		}
		c.keystore = ks
	}
	return c, nil
}

func loadKeystore(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("could not open the keystore: %w", err)
	}
	st, err := os.Stat(path)
	if err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("could not initialize the keystore: file (%q) can only be accessed by the owner", path)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("could not initialize the keystore: %w", err)
	}
	return m, nil
}

func flatten(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok {
		out[prefix] = v
		return
	}
	for k, val := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		flatten(key, val, out)
	}
}

var varRe = regexp.MustCompile(`\$\{([^}:]+)(?::([^}]*))?\}`)

// ErrMissing reports a setting (or variable) that is not set.
type ErrMissing struct{ Key, Source string }

func (e *ErrMissing) Error() string {
	return fmt.Sprintf("missing field accessing '%s' (source:'%s')", e.Key, e.Source)
}

func (c *Config) resolve(key, s string) (string, error) {
	var missing error
	out := varRe.ReplaceAllStringFunc(s, func(m string) string {
		g := varRe.FindStringSubmatch(m)
		if v, ok := c.keystore[g[1]]; ok {
			return v
		}
		if c.env != nil {
			if v := c.env(g[1]); v != "" {
				return v
			}
		}
		if g[2] != "" || strings.Contains(m, ":") {
			return g[2]
		}
		missing = &ErrMissing{Key: key, Source: c.Path}
		return ""
	})
	return out, missing
}

// Has reports whether a key (or a sub-key of it) is set.
func (c *Config) Has(key string) bool {
	if _, ok := c.flat[key]; ok {
		return true
	}
	for k := range c.flat {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// String returns a string setting with variables resolved.
func (c *Config) String(key, def string) (string, error) {
	v, ok := c.flat[key]
	if !ok || v == nil {
		return def, nil
	}
	switch t := v.(type) {
	case string:
		return c.resolve(key, t)
	case int:
		return strconv.Itoa(t), nil
	case bool:
		return strconv.FormatBool(t), nil
	}
	return fmt.Sprint(v), nil
}

// Strings returns a list setting (a scalar counts as a one-item list).
func (c *Config) Strings(key string) ([]string, error) {
	v, ok := c.flat[key]
	if !ok || v == nil {
		return nil, nil
	}
	var items []any
	switch t := v.(type) {
	case []any:
		items = t
	default:
		items = []any{t}
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, err := c.resolve(key, fmt.Sprint(it))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Bool returns a boolean setting.
func (c *Config) Bool(key string, def bool) bool {
	v, ok := c.flat[key]
	if !ok || v == nil {
		return def
	}
	switch t := v.(type) {
	case bool:
		return t
	case string:
		switch strings.ToLower(t) {
		case "true", "yes", "on":
			return true
		case "false", "no", "off":
			return false
		}
	}
	return def
}

// Int returns an integer setting.
func (c *Config) Int(key string, def int) int {
	if v, ok := c.flat[key].(int); ok {
		return v
	}
	return def
}

// outputs returns the configured output namespaces that are enabled.
func (c *Config) outputs() []string {
	seen := map[string]bool{}
	for k := range c.flat {
		if rest, ok := strings.CutPrefix(k, "output."); ok {
			name, _, _ := strings.Cut(rest, ".")
			if c.Bool("output."+name+".enabled", true) {
				seen[name] = true
			}
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ESOutput is the resolved output.elasticsearch section.
type ESOutput struct {
	Hosts            []string
	Protocol         string
	Path             string
	Username         string
	Password         string
	CAs              []string
	VerificationMode string
	BulkMaxSize      int
}

// Outputs validates the output section like the publisher does at start.
func (c *Config) ESOutput() (*ESOutput, error) {
	outs := c.outputs()
	switch {
	case len(outs) == 0:
		return nil, errors.New("error initializing publisher: No outputs are defined. Please define one under the output section.")
	case len(outs) > 1:
		return nil, fmt.Errorf("error initializing publisher: error unpacking config data: more than one namespace configured accessing 'output' (source:'%s')", c.Path)
	case outs[0] != "elasticsearch":
		return nil, fmt.Errorf("error initializing publisher: output type %s is not supported by the shipper", outs[0])
	}
	o := &ESOutput{}
	var err error
	if o.Hosts, err = c.Strings("output.elasticsearch.hosts"); err != nil {
		return nil, fmt.Errorf("error initializing publisher: %w", err)
	}
	if len(o.Hosts) == 0 {
		return nil, fmt.Errorf("error initializing publisher: missing required field accessing 'output.elasticsearch.hosts' (source:'%s')", c.Path)
	}
	if o.Protocol, err = c.String("output.elasticsearch.protocol", ""); err != nil {
		return nil, fmt.Errorf("error initializing publisher: %w", err)
	}
	if o.Protocol != "" && o.Protocol != "http" && o.Protocol != "https" {
		return nil, fmt.Errorf("error initializing publisher: unsupported protocol %q accessing 'output.elasticsearch.protocol' (source:'%s')", o.Protocol, c.Path)
	}
	for _, kv := range []struct {
		key string
		dst *string
	}{{"output.elasticsearch.path", &o.Path}, {"output.elasticsearch.username", &o.Username},
		{"output.elasticsearch.password", &o.Password}, {"output.elasticsearch.ssl.verification_mode", &o.VerificationMode}} {
		if *kv.dst, err = c.String(kv.key, ""); err != nil {
			return nil, fmt.Errorf("error initializing publisher: %w", err)
		}
	}
	if o.CAs, err = c.Strings("output.elasticsearch.ssl.certificate_authorities"); err != nil {
		return nil, fmt.Errorf("error initializing publisher: %w", err)
	}
	for _, ca := range o.CAs {
		if _, err := os.Stat(ca); err != nil {
			return nil, fmt.Errorf("error initializing publisher: 1 error: open %s: no such file or directory reading %s accessing 'output.elasticsearch.ssl.certificate_authorities' (source:'%s')", ca, ca, c.Path)
		}
	}
	o.BulkMaxSize = c.Int("output.elasticsearch.bulk_max_size", 50)
	return o, nil
}

// AlertsInput is the module's alerts fileset.
type AlertsInput struct {
	Enabled     bool
	Paths       []string
	IndexPrefix string
}

// Alerts returns the alerts fileset of the siem (or wazuh) module.
func (c *Config) Alerts(defaultPath string) (*AlertsInput, error) {
	in := &AlertsInput{IndexPrefix: "siem-alerts-4.x-"}
	mods, _ := c.flat["filebeat.modules"].([]any)
	for _, m := range mods {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("error unpacking config data accessing 'filebeat.modules' (source:'%s')", c.Path)
		}
		flat := map[string]any{}
		flatten("", mm, flat)
		name, _ := flat["module"].(string)
		if name != "siem" && name != "wazuh" {
			return nil, fmt.Errorf("error loading config file: module %s is configured but has no enabled filesets", name)
		}
		in.Enabled = true
		if v, ok := flat["alerts.enabled"].(bool); ok {
			in.Enabled = v
		}
		if p, ok := flat["alerts.var.paths"].([]any); ok {
			for _, x := range p {
				in.Paths = append(in.Paths, fmt.Sprint(x))
			}
		}
	}
	if in.Enabled && len(in.Paths) == 0 {
		in.Paths = []string{defaultPath}
	}
	return in, nil
}
