package hostfacts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/flatmap"
	"go.yaml.in/yaml/v3"
)

// The components' own TLS and indexer settings, read from their config files (what they use,
// not what siemctl is configured with): the indexer's opensearch.yml, the shipper's filebeat.yml
// and the dashboard's opensearch_dashboards.yml (siem: dashboard.yml).

// IndexerTLS is the indexer's HTTP-layer certificate, key and trusted CA (opensearch.yml
// plugins.security.ssl.http.*, relative paths under the config directory).
type IndexerTLS struct {
	ConfigFile string
	CertFile   string
	KeyFile    string
	CAFile     string
}

// ShipperOutput is the shipper's output.elasticsearch section.
type ShipperOutput struct {
	ConfigFile string
	Hosts      []string
	Protocol   string
	CAFiles    []string // ssl.certificate_authorities
}

// DashboardConf is what the dashboard uses to reach the indexer.
type DashboardConf struct {
	ConfigFile string
	Hosts      []string // opensearch.hosts
	Username   string   // opensearch.username ("" when only in the keystore)
	CAFiles    []string // opensearch.ssl.certificateAuthorities
	VerifyMode string   // opensearch.ssl.verificationMode (full, certificate, none)
	Keystore   string   // the keystore file next to the config, when present
	Port       string   // server.port ("" when unset: 5601)
}

// flatYAML reads a YAML file as dotted keys (nested maps and dotted keys alike, as the real
// components accept both).
func flatYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return flatmap.Flatten(raw), nil
}

func flatString(m map[string]any, key string) string {
	s, _ := flatmap.Lookup(m, key)
	return s
}

func underDir(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// ReadIndexerTLS reads opensearch.yml in the indexer's config directory.
func ReadIndexerTLS(configDir string) (IndexerTLS, error) {
	path := filepath.Join(configDir, "opensearch.yml")
	m, err := flatYAML(path)
	if err != nil {
		return IndexerTLS{ConfigFile: path}, err
	}
	const k = "plugins.security.ssl.http."
	return IndexerTLS{ConfigFile: path, CertFile: underDir(configDir, flatString(m, k+"pemcert_filepath")),
		KeyFile: underDir(configDir, flatString(m, k+"pemkey_filepath")), CAFile: underDir(configDir, flatString(m, k+"pemtrustedcas_filepath"))}, nil
}

// ReadShipperOutput reads filebeat.yml in the shipper's config directory.
func ReadShipperOutput(configDir string) (ShipperOutput, error) {
	path := filepath.Join(configDir, "filebeat.yml")
	m, err := flatYAML(path)
	if err != nil {
		return ShipperOutput{ConfigFile: path}, err
	}
	const k = "output.elasticsearch."
	o := ShipperOutput{ConfigFile: path, Hosts: flatmap.List(m, k+"hosts"), Protocol: flatString(m, k+"protocol")}
	for _, ca := range flatmap.List(m, k+"ssl.certificate_authorities") {
		o.CAFiles = append(o.CAFiles, underDir(configDir, ca))
	}
	return o, nil
}

// DashboardConfigNames are the dashboard's config file names, in the order looked for.
var DashboardConfigNames = []string{"opensearch_dashboards.yml", "dashboard.yml"}

// ReadDashboardConf reads the dashboard's config file in its config directory.
func ReadDashboardConf(configDir string) (DashboardConf, error) {
	var path string
	for _, n := range DashboardConfigNames {
		p := filepath.Join(configDir, n)
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		return DashboardConf{}, fmt.Errorf("no %s in %s: %w", strings.Join(DashboardConfigNames, " or "), configDir, os.ErrNotExist)
	}
	m, err := flatYAML(path)
	if err != nil {
		return DashboardConf{ConfigFile: path}, err
	}
	d := DashboardConf{ConfigFile: path, Hosts: flatmap.List(m, "opensearch.hosts"), Username: flatString(m, "opensearch.username"),
		VerifyMode: flatString(m, "opensearch.ssl.verificationMode"), Port: flatString(m, "server.port")}
	for _, ca := range flatmap.List(m, "opensearch.ssl.certificateAuthorities") {
		d.CAFiles = append(d.CAFiles, underDir(configDir, ca))
	}
	if d.VerifyMode == "" {
		d.VerifyMode = "full"
	}
	ks := filepath.Join(configDir, "opensearch_dashboards.keystore")
	if _, err := os.Stat(ks); err == nil {
		d.Keystore = ks
	} else if !errors.Is(err, os.ErrNotExist) {
		return d, err
	}
	return d, nil
}
