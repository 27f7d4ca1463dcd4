package lab

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// siemctlConfig is DIR/siemctl.yaml, minimal: the profile, the root every default path is put
// under, the port offset every default port is shifted by, and the lab's systemd. Everything else
// is the profile's default (internal/config/profiles.go), so that is what the tests exercise: the
// lab puts each file where its profile's default points (the indexer's CA in its certs directory,
// the manager API's server.crt, the secrets in etc/siemctl/secrets) and listens on the default
// ports plus the offset. What no path under the root can stand for is set: the alerts templates
// and, in the wazuh profile, the Filebeat module tarballs (the default sources are not reachable
// from the lab) and, in the siem profile, whose defaults trust the system's CAs, the CA files of
// the manager API and the dashboard.
func (l *Lab) siemctlConfig() map[string]any {
	pr := l.prof
	cfg := map[string]any{
		"profile":     pr.Name,
		"root":        l.st.Root,
		"port_offset": l.st.PortOffset,
		"systemd":     map[string]any{"address": "unix:path=" + filepath.Join(l.st.Dir, "rt", "systemd", "private")},
		"shipper":     map[string]any{"template_source": l.templatePath("{version}")},
		// A lab shares its host's two cores with other labs (make test-e2e runs four lanes at
		// once), where an OpenSearch start took over the spec's 60 s: the setting a slow site
		// gives its indexer.
		"indexer": map[string]any{"start_wait": LabIndexerStartWait},
	}
	if pr.Shipper.ModuleTarballs {
		cfg["shipper"].(map[string]any)["module_source"] = l.moduleSource()
	}
	if pr.APICertFromCA {
		cfg["manager"] = map[string]any{"ca_file": l.apiCertPath()}
		cfg["dashboard"] = map[string]any{"ca_file": filepath.Join(l.st.Root, pr.DashboardConf(), "certs", "root-ca.pem")}
	}
	if l.st.Address != "" {
		l.hostConfig(cfg)
		return cfg
	}
	if l.st.Syslog && !pr.Syslog {
		m, _ := cfg["manager"].(map[string]any)
		if m == nil {
			m = map[string]any{}
			cfg["manager"] = m
		}
		m["syslog"] = fmt.Sprintf("udp://127.0.0.1:%d", l.st.Ports.Syslog)
	}
	return cfg
}

// LabIndexerStartWait is the lab config's indexer.start_wait.
const LabIndexerStartWait = "3m"

// hostConfig sets what a distributed lab's host cannot take from the profile's defaults (they
// name 127.0.0.1 or localhost and files of components the host may not run): every address and
// port (port_offset moves defaults only), the components it runs, the indexer's CA where the host
// has none of its own, the manager API's certificate, the dashboard's URL.
func (l *Lab) hostConfig(cfg map[string]any) {
	if len(l.st.Components) > 0 {
		cfg["components"] = l.st.Components // what health and services judge and act on here
	}
	ca := filepath.Join(l.st.Dir, "certs", "root-ca.pem")
	idx := cfg["indexer"].(map[string]any)
	idx["url"] = l.st.IndexerURLs[0]
	if !l.runs("indexer") {
		idx["ca_file"] = ca
	}
	cfg["indexer"] = idx
	p := l.st.Ports
	m := map[string]any{"api_url": fmt.Sprintf("https://%s:%d", l.addr(), p.API), "ca_file": l.apiCertPath(),
		"agent_port": p.Agent, "enrollment_port": p.Enrollment, "syslog": fmt.Sprintf("udp://%s:%d", l.addr(), p.Syslog)}
	if !l.runs("manager") && l.cluster != nil {
		master := l.cluster.byRole(RoleManager)[0]
		m["api_url"] = fmt.Sprintf("https://%s:%d", master.Address, l.prof.DistPorts(l.st.PortOffset).API)
		m["ca_file"] = ca
		m["syslog"] = fmt.Sprintf("udp://%s:%d", master.Address, l.prof.DistPorts(l.st.PortOffset).Syslog)
		m["agent_port"], m["enrollment_port"] = l.prof.DistPorts(l.st.PortOffset).Agent, l.prof.DistPorts(l.st.PortOffset).Enrollment
	}
	cfg["manager"] = m
	if l.cluster != nil {
		// What health expects of the deployment's clusters (indexer.cluster, manager.cluster).
		for role, sec := range map[string]map[string]any{RoleIndexer: idx, RoleManager: m} {
			var names []string
			for _, h := range l.cluster.byRole(role) {
				names = append(names, h.Name)
			}
			sec["nodes"] = names
		}
	}
	if l.cluster != nil {
		dash := l.cluster.byRole(RoleDashboard)[0]
		cfg["dashboard"] = map[string]any{"url": fmt.Sprintf("https://%s:%d", dash.Address, l.prof.DistPorts(l.st.PortOffset).Dashboard), "ca_file": ca}
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
