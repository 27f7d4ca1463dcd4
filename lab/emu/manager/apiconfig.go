package manager

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yesNo accepts YAML booleans and the yes/no words api.yaml uses.
type yesNo bool

func (b *yesNo) UnmarshalYAML(n *yaml.Node) error {
	switch strings.ToLower(n.Value) {
	case "yes", "true", "on":
		*b = true
	case "no", "false", "off":
		*b = false
	default:
		return fmt.Errorf("invalid boolean %q", n.Value)
	}
	return nil
}

// APIConfig is api/configuration/api.yaml (all keys of the real file are accepted; unknown keys are an
// error, as in wazuh-apid).
type APIConfig struct {
	Host                 any   `yaml:"host"`
	Port                 int   `yaml:"port"`
	DropPrivileges       yesNo `yaml:"drop_privileges"`
	ExperimentalFeatures yesNo `yaml:"experimental_features"`
	MaxUploadSize        int   `yaml:"max_upload_size"`
	Intervals            struct {
		RequestTimeout int `yaml:"request_timeout"`
	} `yaml:"intervals"`
	HTTPS struct {
		Enabled     *yesNo `yaml:"enabled"`
		Key         string `yaml:"key"`
		Cert        string `yaml:"cert"`
		UseCA       yesNo  `yaml:"use_ca"`
		CA          string `yaml:"ca"`
		SSLProtocol string `yaml:"ssl_protocol"`
		SSLCiphers  string `yaml:"ssl_ciphers"`
	} `yaml:"https"`
	Logs   map[string]any `yaml:"logs"`
	CORS   map[string]any `yaml:"cors"`
	Access struct {
		MaxLoginAttempts    int `yaml:"max_login_attempts"`
		BlockTime           int `yaml:"block_time"`
		MaxRequestPerMinute int `yaml:"max_request_per_minute"`
	} `yaml:"access"`
	UploadConfiguration map[string]any `yaml:"upload_configuration"`
}

// HostAddr is the first listen host.
func (c *APIConfig) HostAddr() string {
	switch h := c.Host.(type) {
	case string:
		return h
	case []any:
		if len(h) > 0 {
			if s, ok := h[0].(string); ok {
				return s
			}
		}
	}
	return "0.0.0.0"
}

// HTTPSEnabled reports whether TLS is on (default yes).
func (c *APIConfig) HTTPSEnabled() bool { return c.HTTPS.Enabled == nil || bool(*c.HTTPS.Enabled) }

// LoadAPIConfig reads api.yaml applying the defaults of api/api/configuration.py.
func LoadAPIConfig(path string) (*APIConfig, error) {
	c := &APIConfig{Host: "0.0.0.0", Port: 55000, MaxUploadSize: 10485760}
	c.Intervals.RequestTimeout = 10
	c.HTTPS.Key, c.HTTPS.Cert, c.HTTPS.CA = "server.key", "server.crt", "ca.crt"
	c.Access.MaxLoginAttempts, c.Access.BlockTime, c.Access.MaxRequestPerMinute = 50, 300, 300
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read api.yaml: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("(2000) Error loading the API configuration file %s: %w", path, err)
	}
	return c, nil
}

// DefaultAPIYAML is the packaged api.yaml.
func DefaultAPIYAML(host string, port int) []byte {
	return fmt.Appendf(nil, `# Manager API configuration (format of Wazuh's api/configuration/api.yaml).
host: %s
port: %d

drop_privileges: yes
experimental_features: no
max_upload_size: 10485760

intervals:
  request_timeout: 10

https:
  enabled: yes
  key: "server.key"
  cert: "server.crt"
  use_ca: False
  ca: "ca.crt"
  ssl_protocol: "auto"
  ssl_ciphers: ""

logs:
  level: "info"
  format: "plain"

access:
  max_login_attempts: 50
  block_time: 300
  max_request_per_minute: 300
`, host, port)
}
