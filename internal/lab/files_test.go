package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/config"
)

// The config the lab writes must load with siemctl's own loader (known keys only) and point at the lab.
func TestWriteConfigLoadsWithSiemctlConfig(t *testing.T) {
	dir := t.TempDir()
	l := &Lab{st: &State{ID: "abc", Dir: dir, Root: filepath.Join(dir, "root"), Ports: PortsFor(100)}}
	if err := l.writeConfig(); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Env: []string{"SIEMCTL_CONFIG=" + l.ConfigPath()}})
	if err != nil {
		t.Fatalf("siemctl cannot load the lab config: %v", err)
	}
	checks := []struct{ name, got, want string }{
		{"indexer.url", cfg.Indexer.URL, "https://127.0.0.1:9300"},
		{"manager.api_url", cfg.Manager.APIURL, "https://127.0.0.1:55100"},
		{"manager.syslog", cfg.Manager.Syslog, "udp://127.0.0.1:5614"},
		{"systemd.address", cfg.Systemd.Address, "unix:path=" + dir + "/rt/systemd/private"},
		{"indexer.ca_file", cfg.Indexer.CAFile, dir + "/certs/root-ca.pem"},
		{"manager.install_dir", cfg.Manager.InstallDir, dir + "/root/var/siem"},
		{"shipper.template_source", cfg.Shipper.TemplateSource, dir + "/tpl/{version}/siem-template.json"},
		{"indexer.security_init", strings.Join(cfg.Indexer.SecurityInit, " "), dir + "/root/usr/share/siem-indexer/bin/indexer-security-init.sh"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
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
}

func TestLabIDAndPorts(t *testing.T) {
	a, b := LabID("/tmp/a"), LabID("/tmp/b")
	if a == b || len(a) != 10 || LabID("/tmp/a") != a {
		t.Errorf("LabID not stable/distinct: %s %s", a, b)
	}
	p := PortsFor(7)
	if p.Indexer != 9207 || p.Transport != 19307 || p.API != 55007 || p.Agent != 1521 || p.Enrollment != 1522 || p.Syslog != 5521 || p.Dashboard != 5608 {
		t.Errorf("PortsFor(7) = %+v", p)
	}
}
