package lab

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/internal/config"
)

// The config the lab writes is minimal (profile, root, port_offset, systemd, the template source;
// in siem the CA files its defaults leave to the system) and, loaded with siemctl's own loader, points
// at the lab: every other value is the profile's default under the root, at its port plus the offset.
func TestWriteConfigLoadsWithSiemctlConfig(t *testing.T) {
	for _, tc := range []struct {
		profile string
		syslog  bool
		want    map[string]string
	}{
		{"siem", true, map[string]string{
			"profile": "siem", "indexer.url": "https://127.0.0.1:9300", "manager.api_url": "https://127.0.0.1:55100",
			"manager.syslog": "udp://127.0.0.1:614", "indexer.ca_file": "/root/etc/siem-indexer/certs/root-ca.pem",
			"manager.ca_file": "/root/var/siem/api/configuration/ssl/server.crt", "manager.install_dir": "/root/var/siem",
			"manager.username": "siem", "manager.password_file": "/root/etc/siemctl/secrets/manager",
			"indexer.password_file": "/root/etc/siemctl/secrets/indexer", "dashboard.url": "https://127.0.0.1:5701",
			"dashboard.ca_file": "/root/etc/siem-dashboard/certs/root-ca.pem", "shipper.binary": "/root/usr/bin/shipper",
			"shipper.template_source": "/tpl/{version}/siem-template.json", "indexer.alerts_index_prefix": "siem-alerts-4.x-", "shipper.module_source": "",
			"indexer.security_init": "/root/usr/share/siem-indexer/bin/indexer-security-init.sh", "manager.unit": "siem-manager.service"}},
		{"wazuh", false, map[string]string{
			"profile": "wazuh", "indexer.url": "https://127.0.0.1:9300", "manager.api_url": "https://localhost:55100",
			"manager.syslog": "", "indexer.ca_file": "/root/etc/wazuh-indexer/certs/root-ca.pem", "state_dir": "/root/var/lib/siemctl",
			"manager.ca_file": "/root/var/ossec/api/configuration/ssl/server.crt", "manager.install_dir": "/root/var/ossec",
			"manager.username": "wazuh", "manager.password_file": "/root/etc/siemctl/secrets/manager",
			"indexer.password_file": "/root/etc/siemctl/secrets/indexer", "dashboard.url": "https://127.0.0.1:543",
			"dashboard.ca_file": "/root/etc/wazuh-dashboard/certs/root-ca.pem", "shipper.binary": "/root/usr/share/filebeat/bin/filebeat",
			"shipper.template_source": "/tpl/{version}/wazuh-template.json", "indexer.alerts_index_prefix": "wazuh-alerts-4.x-",
			"shipper.module_source": "/filebeat-modules/{module}.tar.gz",
			"indexer.security_init": "/root/usr/share/wazuh-indexer/bin/indexer-security-init.sh", "manager.unit": "wazuh-manager.service"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			dir := t.TempDir()
			p := Profiles[tc.profile]
			l := &Lab{core: core{st: &State{ID: "abc", Dir: dir, Root: filepath.Join(dir, "root"), Ports: p.Ports(100), PortOffset: 100, Profile: tc.profile, Syslog: tc.syslog}, prof: p}}
			cfg, err := writtenConfig(t, l)
			if err != nil {
				t.Fatalf("siemctl cannot load the lab config: %v", err)
			}
			got := map[string]string{
				"profile": cfg.Profile, "indexer.url": cfg.Indexer.URL, "manager.api_url": cfg.Manager.APIURL, "manager.syslog": cfg.Manager.Syslog,
				"indexer.ca_file": cfg.Indexer.CAFile, "manager.ca_file": cfg.Manager.CAFile, "manager.install_dir": cfg.Manager.InstallDir,
				"manager.username": cfg.Manager.Username, "manager.password_file": cfg.Manager.PasswordFile,
				"indexer.password_file": cfg.Indexer.PasswordFile, "dashboard.url": cfg.Dashboard.URL, "dashboard.ca_file": cfg.Dashboard.CAFile,
				"shipper.binary": cfg.Shipper.Binary, "shipper.template_source": cfg.Shipper.TemplateSource, "shipper.module_source": cfg.Shipper.ModuleSource,
				"indexer.alerts_index_prefix": cfg.Indexer.AlertsIndexPrefix, "indexer.security_init": strings.Join(cfg.Indexer.SecurityInit, " "),
				"manager.unit": cfg.Manager.Unit, "state_dir": cfg.StateDir,
			}
			for k, want := range tc.want {
				if strings.HasPrefix(want, "/") {
					want = dir + want
				}
				if got[k] != want {
					t.Errorf("%s = %q, want %q", k, got[k], want)
				}
			}
			if cfg.Systemd.Address != "unix:path="+dir+"/rt/systemd/private" {
				t.Errorf("systemd.address = %q", cfg.Systemd.Address)
			}
			// Minimal: no more keys than the lab cannot do without.
			raw, _ := os.ReadFile(l.ConfigPath())
			var top map[string]any
			if err := yaml.Unmarshal(raw, &top); err != nil {
				t.Fatal(err)
			}
			keys := slices.Sorted(maps.Keys(top))
			want := "indexer,port_offset,profile,root,shipper,systemd"
			if tc.profile == "siem" {
				want = "dashboard,indexer,manager,port_offset,profile,root,shipper,systemd"
			}
			// The lab's host is shared with other labs: its indexer gets longer to answer.
			if w := cfg.StartWaits()["indexer"]; w != 3*time.Minute {
				t.Errorf("indexer start wait %s, want the lab's %s", w, LabIndexerStartWait)
			}
			if strings.Join(keys, ",") != want {
				t.Errorf("siemctl.yaml keys %v, want %s:\n%s", keys, want, raw)
			}
			if cfg.Manager.AgentPort != 1614 || cfg.Manager.EnrollmentPort != 1615 {
				t.Errorf("agent/enrollment ports = %d/%d", cfg.Manager.AgentPort, cfg.Manager.EnrollmentPort)
			}
			env, err := os.ReadFile(filepath.Join(dir, "env"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"export SIEMCTL_CONFIG='" + dir + "/siemctl.yaml'", "export APT_CONFIG='" + dir + "/root/apt-lab.conf'", "export DPKG_ROOT='" + dir + "/root'"} {
				if !strings.Contains(string(env), want) {
					t.Errorf("env lacks %q:\n%s", want, env)
				}
			}
		})
	}
}

func TestLabIDAndPorts(t *testing.T) {
	a, b := LabID("/tmp/a"), LabID("/tmp/b")
	if a == b || len(a) != 10 || LabID("/tmp/a") != a {
		t.Errorf("LabID not stable/distinct: %s %s", a, b)
	}
	p := Profiles["siem"].Ports(7)
	if p.Indexer != 9207 || p.Transport != 19307 || p.API != 55007 || p.Agent != 1521 || p.Enrollment != 1522 || p.Syslog != 521 || p.Dashboard != 5608 {
		t.Errorf("siem ports(7) = %+v", p)
	}
	if w := Profiles["wazuh"].Ports(7); w.Dashboard != 450 || w.API != 55007 || w.Indexer != 9207 {
		t.Errorf("wazuh ports(7) = %+v", w)
	}
}

// writtenConfig writes l's siemctl config under its root and loads it as
// siemctl would.
func writtenConfig(t *testing.T, l *Lab) (*config.Config, error) {
	t.Helper()
	if err := os.MkdirAll(l.st.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.writeConfig(); err != nil {
		t.Fatal(err)
	}
	return config.Load(config.LoadOptions{Env: []string{"SIEMCTL_CONFIG=" + l.ConfigPath()}})
}
