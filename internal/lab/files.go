package lab

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// siemctlConfig is DIR/siemctl.yaml, on the keys of DESIGN.md "Configuration".
func (l *Lab) siemctlConfig() map[string]any {
	r, d, p := l.st.Root, l.st.Dir, l.st.Ports
	ca := filepath.Join(d, "certs", "root-ca.pem")
	return map[string]any{
		"profile":    "siem",
		"state_dir":  filepath.Join(d, "state"),
		"backup_dir": filepath.Join(d, "backups"),
		"systemd":    map[string]any{"address": "unix:path=" + filepath.Join(d, "rt", "systemd", "private")},
		"packages":   map[string]any{"manager": "apt"},
		"indexer": map[string]any{
			"url":                 fmt.Sprintf("https://127.0.0.1:%d", p.Indexer),
			"username":            "admin",
			"password_file":       filepath.Join(d, "secrets", secretIndexer),
			"ca_file":             ca,
			"insecure":            false,
			"unit":                "siem-indexer.service",
			"package":             "siem-indexer",
			"config_dir":          filepath.Join(r, indexerConf),
			"data_dir":            filepath.Join(r, indexerData),
			"security_init":       []string{filepath.Join(r, securityInit)},
			"hash_tool":           []string{filepath.Join(r, indexerHashSh)},
			"alerts_index_prefix": alertsIndexPrefix,
		},
		"manager": map[string]any{
			"api_url":         fmt.Sprintf("https://127.0.0.1:%d", p.API),
			"username":        "siem",
			"password_file":   filepath.Join(d, "secrets", secretManager),
			"ca_file":         ca,
			"install_dir":     filepath.Join(r, "var/siem"),
			"unit":            "siem-manager.service",
			"package":         "siem-manager",
			"syslog":          fmt.Sprintf("udp://127.0.0.1:%d", p.Syslog),
			"agent_port":      p.Agent,
			"enrollment_port": p.Enrollment,
		},
		"dashboard": map[string]any{
			"url":        fmt.Sprintf("https://127.0.0.1:%d", p.Dashboard),
			"ca_file":    ca,
			"unit":       "siem-dashboard.service",
			"package":    "siem-dashboard",
			"config_dir": filepath.Join(r, "etc/siem-dashboard"),
		},
		"shipper": map[string]any{
			"binary":          filepath.Join(r, "usr/bin/shipper"),
			"unit":            "shipper.service",
			"package":         "shipper",
			"config_dir":      filepath.Join(r, "etc/shipper"),
			"data_dir":        filepath.Join(r, l.shipperLayout().DataDir),
			"template_source": filepath.Join(d, "tpl", "{version}", "siem-template.json"),
		},
		"thresholds": map[string]any{"disk_warn_percent": 85, "disk_nogo_percent": 90, "upgrade_min_free_percent": 20},
	}
}

// writeConfig writes DIR/siemctl.yaml and DIR/env.
func (l *Lab) writeConfig() error {
	data, err := yaml.Marshal(l.siemctlConfig())
	if err != nil {
		return fmt.Errorf("encode siemctl.yaml: %w", err)
	}
	head := "# siemctl config for the lab in " + l.st.Dir + " (written by siemlab up)\n"
	if err := writeFile(l.ConfigPath(), append([]byte(head), data...), 0o644); err != nil {
		return err
	}
	var env strings.Builder
	env.WriteString("# siemlab: source this file to point siemctl, apt-get and dpkg at the lab\n")
	for _, kv := range l.Env() {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&env, "export %s=%s\n", k, shellQuote(v))
	}
	fmt.Fprintf(&env, "export SIEMLAB_SYSTEMD=%s\n", shellQuote(l.SystemdAddress()))
	return writeFile(filepath.Join(l.st.Dir, "env"), []byte(env.String()), 0o644)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
