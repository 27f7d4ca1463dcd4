//go:build e2e

package main

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/wazuhreal"
	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EProfiles brings up each lab profile with the siemlab binary as a user does, checks that
// `siemctl health` with the DIR/siemctl.yaml the lab wrote says OK, that the layout is the profile's
// (for wazuh: a stock Wazuh 4.x host's files and tools), that the shipper is the real Filebeat
// 7.10.2, and that `siemlab down` leaves no process, cgroup, mount or lab.json behind.
func TestE2EProfiles(t *testing.T) {
	for _, name := range lab.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			l := e2e.Up(t, e2e.Options{Profile: name, PortOffset: 850})
			p := l.Profile
			r := l.Siemctl("health")
			if r.Code != 0 || !strings.Contains(r.Stdout, "verdict\tOK") {
				t.Errorf("siemctl health with %s/siemctl.yaml: exit %d\n%s%s", l.Dir, r.Code, r.Stdout, r.Stderr)
			}
			// The data-flow probe passes through the real Filebeat; in wazuh on the stock ossec.conf,
			// which has no syslog listener (the event goes through analysisd's queue socket).
			if r := l.Siemctl("alerts", "probe", "--wait", "90s"); r.Code != 0 {
				t.Errorf("alerts probe: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			// A failed analysisd is CRIT at once, named, with the real fix.
			l.MustSiemlab("fault", "analysisd-failed")
			r = l.Siemctl("health", "--check", "manager.api", "-o", "json")
			if r.Code != 2 || !strings.Contains(r.Stdout, "wazuh-analysisd (failed)") || !strings.Contains(r.Stdout, "wazuh-analysisd -t") {
				t.Errorf("health with analysisd failed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			l.MustSiemlab("heal", "analysisd-failed")
			out, err := exec.Command(l.Path(p.Shipper.Binary), "version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "filebeat version 7.10.2 ") {
				t.Errorf("%s version: %v %q", p.Shipper.Binary, err, out)
			}
			checkLayout(t, l)
			if p.Name == "wazuh" {
				checkRealTemplate(t, l)
			}
			checkDownLeavesNothing(t, l)
		})
	}
}

// checkLayout: the files and tools of the profile's layout are where its siemctl defaults point.
func checkLayout(t *testing.T, l *e2e.Lab) {
	t.Helper()
	p := l.Profile
	files := []string{
		p.IndexerConf() + "/opensearch.yml", p.IndexerConf() + "/certs/root-ca.pem", p.IndexerConf() + "/certs/admin.pem",
		p.IndexerConf() + "/opensearch.keystore", p.IndexerData(), p.SecurityInit(), p.HashTool(),
		p.InstallDir + "/bin/" + p.Control, p.InstallDir + "/bin/agent_control", p.InstallDir + "/bin/manage_agents",
		p.InstallDir + "/bin/wazuh-analysisd", p.InstallDir + "/etc/ossec.conf", p.InstallDir + "/etc/rules/local_rules.xml",
		p.InstallDir + "/etc/decoders/local_decoder.xml", p.AlertsFile(), p.InstallDir + "/api/configuration/api.yaml",
		p.InstallDir + "/api/configuration/ssl/server.crt", p.InstallDir + "/api/configuration/ssl/server.key",
		p.InstallDir + "/queue/db", p.InstallDir + "/queue/sockets/queue", p.DashboardConfig, p.DashboardConf() + "/certs/root-ca.pem",
		p.Shipper.ConfigFile(), p.Shipper.TemplateFile(), p.Shipper.ConfigDir + "/certs/root-ca.pem",
		"etc/siemctl/secrets/indexer", "etc/siemctl/secrets/manager",
	}
	if p.DashboardAPIConfig != "" {
		files = append(files, p.DashboardAPIConfig)
	}
	for _, f := range files {
		if _, err := os.Stat(l.Path(f)); err != nil {
			t.Errorf("%s layout: %v", p.Name, err)
		}
	}
	// wazuh-analysisd -t checks the configuration: silent, exit 0.
	if out, err := exec.Command(l.Path(p.InstallDir, "bin/wazuh-analysisd"), "-t").CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("wazuh-analysisd -t: %v %q", err, out)
	}
	conf, _ := os.ReadFile(l.Path(p.InstallDir, "etc/ossec.conf"))
	if p.Name != "wazuh" {
		return
	}
	// A stock Wazuh host: no syslog listener, the stock <localfile> entries, no check in wazuh-control,
	// the API's own certificate for localhost only.
	if bytes.Contains(conf, []byte("<connection>syslog</connection>")) || !bytes.Contains(conf, []byte("<location>/var/log/auth.log</location>")) {
		t.Errorf("ossec.conf is not the stock one:\n%s", conf)
	}
	out, err := exec.Command(l.Path(p.InstallDir, "bin/wazuh-control"), "check").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "{start|stop|restart|status|enable|disable|info [-v -r -t]}") {
		t.Errorf("wazuh-control check: %v %q, want the usage and exit 1 (the real one has no check)", err, out)
	}
	pemData, _ := os.ReadFile(l.Path(p.InstallDir, "api/configuration/ssl/server.crt"))
	blk, _ := pem.Decode(pemData)
	if blk == nil {
		t.Fatal("server.crt: no PEM")
	}
	crt, err := x509.ParseCertificate(blk.Bytes)
	if err != nil || strings.Join(crt.DNSNames, ",") != "localhost" || len(crt.IPAddresses) != 0 || crt.Issuer.String() != crt.Subject.String() {
		t.Errorf("server.crt: %v DNS %v IPs %v issuer %s subject %s; want self-signed for localhost only", err, crt.DNSNames, crt.IPAddresses, crt.Issuer, crt.Subject)
	}
	for _, f := range []string{"var/siem", "etc/siem-indexer", "etc/shipper", "usr/bin/shipper"} {
		if _, err := os.Stat(l.Path(f)); err == nil {
			t.Errorf("wazuh layout has the siem path %s", f)
		}
	}
}

// checkRealTemplate runs the upgrade's template steps with Wazuh's own wazuh-template.json of the
// target version as shipper.template_source, read in place from ../shared (never copied into the
// project): siemctl writes it as the shipper's template file and loads it into the real OpenSearch,
// then the real Filebeat loads it again with setup --index-management.
func checkRealTemplate(t *testing.T, l *e2e.Lab) {
	t.Helper()
	src := filepath.Join(wazuhreal.Dir(t), "wazuh-v{version}", "wazuh-template.json")
	real := wazuhreal.Read(t, "wazuh-v4.10.0", "wazuh-template.json")
	tl := *l
	tl.Env = append(append([]string{}, l.Env...), "SIEMCTL_SHIPPER_TEMPLATE_SOURCE="+src)
	r := tl.Siemctl("upgrade", "apply", "--to", "4.10.0", "--only", "shipper/template,shipper/index-management", "--yes")
	if r.Code != 0 {
		t.Fatalf("template steps with the real Wazuh template: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got, _ := os.ReadFile(l.Path(l.Profile.Shipper.TemplateFile())); !bytes.Equal(got, real) {
		t.Errorf("%s is not Wazuh's 4.10.0 template (%d bytes, want %d)", l.Profile.Shipper.TemplateFile(), len(got), len(real))
	}
	pw := secret(t, l.Dir, "indexer")
	hc := client(t, l.Path(l.Profile.IndexerConf(), "certs", "root-ca.pem"))
	st := labState(t, l.Dir)
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/_template/%s", st.Ports.Indexer, l.Profile.Shipper.TemplateName), nil)
	req.SetBasicAuth("admin", pw)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tpl map[string]struct {
		IndexPatterns []string `json:"index_patterns"`
		Settings      struct {
			Index struct {
				Shards string `json:"number_of_shards"`
			} `json:"index"`
		} `json:"settings"`
		Mappings struct {
			Properties map[string]any `json:"properties"`
		} `json:"mappings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tpl); err != nil {
		t.Fatal(err)
	}
	got := tpl[l.Profile.Shipper.TemplateName]
	if strings.Join(got.IndexPatterns, ",") != "wazuh-alerts-4.x-*,wazuh-archives-4.x-*" || got.Settings.Index.Shards != "3" || got.Mappings.Properties["GeoLocation"] == nil {
		t.Errorf("the indexer's template is not Wazuh's: patterns %v shards %q GeoLocation %v", got.IndexPatterns, got.Settings.Index.Shards, got.Mappings.Properties["GeoLocation"] != nil)
	}
}

// checkDownLeavesNothing runs siemlab down and asserts that no process of the lab, no cgroup, no
// mount and no lab.json remain.
func checkDownLeavesNothing(t *testing.T, l *e2e.Lab) {
	t.Helper()
	st := labState(t, l.Dir)
	if r := l.Siemlab("down"); r.Code != 0 {
		t.Fatalf("siemlab down: exit %d %s", r.Code, r.Stderr)
	}
	for _, cg := range st.Cgroups {
		if _, err := os.Stat(cg); err == nil {
			t.Errorf("cgroup %s left", cg)
		}
	}
	if _, err := os.Stat(filepath.Join(l.Dir, "lab.json")); err == nil {
		t.Error("lab.json left")
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mounts, []byte(l.Dir)) {
		t.Error("mount left")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if cmd, err := os.ReadFile(p); err == nil && bytes.Contains(cmd, []byte(l.Dir)) {
			t.Errorf("process left: %s %q", p, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		}
	}
}
