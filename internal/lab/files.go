package lab

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// siemctlConfig is DIR/siemctl.yaml, on the keys of DESIGN.md "Configuration". Every file it names
// is where siemctl's profile of the same name has its default, under the lab's root: the indexer's
// CA in its certs directory, the manager API's own server.crt as its trust anchor, the secrets in
// etc/siemctl/secrets.
func (l *Lab) siemctlConfig() map[string]any {
	r, d, p, pr := l.st.Root, l.st.Dir, l.st.Ports, l.prof
	abs := func(rel string) string { return filepath.Join(r, rel) }
	manager := map[string]any{
		"api_url":         l.managerAPIURL(),
		"username":        pr.APIUser,
		"password_file":   l.siemctlSecretPath(secretManager),
		"ca_file":         l.apiCertPath(),
		"install_dir":     abs(pr.InstallDir),
		"control_tool":    pr.Control,
		"unit":            pr.ManagerUnit(),
		"package":         pr.Manager,
		"syslog":          "",
		"agent_port":      p.Agent,
		"enrollment_port": p.Enrollment,
	}
	if l.st.Syslog {
		manager["syslog"] = fmt.Sprintf("udp://127.0.0.1:%d", p.Syslog)
	}
	return map[string]any{
		"profile":    pr.Name,
		"state_dir":  filepath.Join(d, "state"),
		"backup_dir": filepath.Join(d, "backups"),
		"systemd":    map[string]any{"address": "unix:path=" + filepath.Join(d, "rt", "systemd", "private")},
		"packages":   map[string]any{"manager": "apt"},
		"indexer": map[string]any{
			"url":                 fmt.Sprintf("https://127.0.0.1:%d", p.Indexer),
			"username":            "admin",
			"password_file":       l.siemctlSecretPath(secretIndexer),
			"ca_file":             abs(filepath.Join(pr.IndexerConf(), "certs", "root-ca.pem")),
			"insecure":            false,
			"unit":                pr.IndexerUnit(),
			"package":             pr.Indexer,
			"config_dir":          abs(pr.IndexerConf()),
			"data_dir":            abs(pr.IndexerData()),
			"security_init":       []string{abs(pr.SecurityInit())},
			"hash_tool":           []string{abs(pr.HashTool())},
			"alerts_index_prefix": pr.AlertsPrefix(),
		},
		"manager": manager,
		"dashboard": map[string]any{
			"url":        fmt.Sprintf("https://127.0.0.1:%d", p.Dashboard),
			"ca_file":    abs(filepath.Join(pr.DashboardConf(), "certs", "root-ca.pem")),
			"unit":       pr.DashboardUnit(),
			"package":    pr.Dashboard,
			"config_dir": abs(pr.DashboardConf()),
		},
		"shipper": map[string]any{
			"binary":          abs(pr.Shipper.Binary),
			"unit":            pr.Shipper.Unit(),
			"package":         pr.Shipper.Package,
			"config_dir":      abs(pr.Shipper.ConfigDir),
			"template_source": l.templatePath("{version}"),
		},
		"thresholds": map[string]any{"disk_warn_percent": 85, "disk_nogo_percent": 90, "upgrade_min_free_percent": 20},
	}
}

// templatePath is DIR/tpl/<version>/<name>-template.json, the lab's alerts template of a version
// (siemctl's shipper.template_source with {version}).
func (l *Lab) templatePath(version string) string {
	return filepath.Join(l.st.Dir, "tpl", version, l.prof.Shipper.TemplateName+"-template.json")
}

// apiCertPath is the manager API's server.crt: signed by the lab CA (siem) or the API's own
// self-signed one (wazuh); either is the trust anchor siemctl pins.
func (l *Lab) apiCertPath() string {
	return filepath.Join(l.managerDir(), "api/configuration/ssl/server.crt")
}

// siemctlSecretPath is where siemctl's profiles look for a secret by default, under the root
// (ROOT/etc/siemctl/secrets/<name>).
func (l *Lab) siemctlSecretPath(name string) string {
	return filepath.Join(l.st.Root, "etc/siemctl/secrets", name)
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
