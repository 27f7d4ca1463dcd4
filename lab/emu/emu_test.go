package emu

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/wazuhreal"
	"github.com/siemctl/siemctl/lab/emu/faults"
	"github.com/siemctl/siemctl/lab/emu/manager"
)

func testSpec(t *testing.T, comp string) PackageSpec {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "siemlab")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	return PackageSpec{Component: comp, Version: "4.9.0", Root: "/lab/root", Binary: bin,
		Ports: Ports{API: 55000, Agent: 1514, Enrollment: 1515, Syslog: 5514, Dashboard: 5601, Indexer: 9200}}
}

func TestPackageFiles(t *testing.T) {
	tests := []struct {
		comp, unit, exec string
		conffiles        []string
	}{
		{"manager", "usr/lib/systemd/system/siem-manager.service", "ExecStart=/lab/root/var/siem/bin/siem-managerd --home /lab/root/var/siem",
			[]string{"var/siem/etc/ossec.conf", "var/siem/etc/rules/local_rules.xml", "var/siem/etc/decoders/local_decoder.xml", "var/siem/api/configuration/api.yaml"}},
		{"dashboard", "usr/lib/systemd/system/siem-dashboard.service", "ExecStart=/lab/root/usr/share/siem-dashboard/bin/siem-dashboard --config /lab/root/etc/siem-dashboard/dashboard.yml",
			[]string{"etc/siem-dashboard/dashboard.yml"}},
	}
	for _, tc := range tests {
		t.Run(tc.comp, func(t *testing.T) {
			files, err := PackageFiles(testSpec(t, tc.comp))
			if err != nil {
				t.Fatal(err)
			}
			byPath := map[string]File{}
			var conf []string
			for _, f := range files {
				if strings.HasPrefix(f.Path, "/") {
					t.Fatalf("absolute path %s", f.Path)
				}
				byPath[f.Path] = f
				if f.Conffile {
					conf = append(conf, f.Path)
				}
			}
			u, ok := byPath[tc.unit]
			if !ok {
				t.Fatalf("no unit %s", tc.unit)
			}
			for _, want := range []string{"Type=simple", tc.exec, "StandardOutput=append:/lab/root/", "StandardError=append:/lab/root/",
				"TimeoutStopSec=2", "Restart=no", "Environment=SIEM_LAB_FAULTS_DIR=/lab/root/var/lib/siem-lab-faults"} {
				if !bytes.Contains(u.Data, []byte(want)) {
					t.Errorf("unit lacks %q:\n%s", want, u.Data)
				}
			}
			if strings.Join(conf, ",") != strings.Join(tc.conffiles, ",") {
				t.Errorf("conffiles %v, want %v", conf, tc.conffiles)
			}
		})
	}
	// A manager node of a cluster seeds its own agents (siem-managerd --seed-from).
	spec := testSpec(t, "manager")
	spec.SeedFrom = 6
	seeded, err := PackageFiles(spec)
	if err != nil {
		t.Fatal(err)
	}
	unitSeen := false
	for _, f := range seeded {
		if f.Path == "usr/lib/systemd/system/siem-manager.service" {
			unitSeen = true
			if !bytes.Contains(f.Data, []byte("ExecStart=/lab/root/var/siem/bin/siem-managerd --home /lab/root/var/siem --seed-from 6\n")) {
				t.Errorf("unit without --seed-from 6:\n%s", f.Data)
			}
		}
	}
	if !unitSeen {
		t.Error("no siem-manager.service among the manager's files")
	}
	files, _ := PackageFiles(testSpec(t, "manager"))
	for _, f := range files {
		switch f.Path {
		case "var/siem/bin/siem-control", "var/siem/bin/agent_control", "var/siem/bin/manage_agents":
			if f.Link != "siem-managerd" {
				t.Errorf("%s link %q", f.Path, f.Link)
			}
		case "var/siem/bin/siem-managerd":
			if string(f.Data) != "#!binary" || f.Mode != 0o755 {
				t.Errorf("binary %q %v", f.Data, f.Mode)
			}
		case "var/siem/VERSION":
			if string(f.Data) != "v4.9.0\n" {
				t.Errorf("VERSION %q", f.Data)
			}
		case "var/siem/etc/ossec.conf":
			if _, err := manager.ParseConfig(f.Data); err != nil {
				t.Errorf("packaged ossec.conf invalid: %v", err)
			}
		}
	}
	bad := testSpec(t, "manager")
	bad.Root = "relative"
	if _, err := PackageFiles(bad); err == nil {
		t.Error("relative root accepted")
	}
	bad = testSpec(t, "indexer")
	if _, err := PackageFiles(bad); err == nil {
		t.Error("unknown component accepted")
	}
}

func TestTemplateVersions(t *testing.T) {
	var a, b map[string]any
	if err := json.Unmarshal(Template("4.9.0", "siem-alerts-4.x-"), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(Template("4.10.0", "siem-alerts-4.x-"), &b); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(Template("4.9.0", "siem-alerts-4.x-"), Template("4.10.0", "siem-alerts-4.x-")) {
		t.Fatal("templates of 4.9.0 and 4.10.0 are identical")
	}
	s := a["settings"].(map[string]any)
	if a["order"] != float64(0) || a["index_patterns"].([]any)[0] != "siem-alerts-4.x-*" || s["index.number_of_shards"] != "3" ||
		s["index.number_of_replicas"] != "0" || s["index.auto_expand_replicas"] != "0-1" || s["index.refresh_interval"] != "5s" || a["version"] != b["version"] {
		t.Fatalf("template 4.9.0: %v", a)
	}
	props := a["mappings"].(map[string]any)["properties"].(map[string]any)
	if props["data"].(map[string]any)["properties"].(map[string]any)["srcip"].(map[string]any)["type"] != "ip" || props["timestamp"].(map[string]any)["type"] != "date" {
		t.Fatalf("mappings %v", props)
	}
}

func TestSetFaultAndMain(t *testing.T) {
	root := t.TempDir()
	if err := SetFault(root, faults.APISlow, true); err != nil {
		t.Fatal(err)
	}
	if !(faults.Checker{Dir: faults.DirForRoot(root)}).Active(faults.APISlow) {
		t.Fatal("fault not active")
	}
	if err := SetFault(root, faults.APISlow, false); err != nil {
		t.Fatal(err)
	}
	if err := SetFault(root, "bogus", true); err == nil {
		t.Fatal("unknown fault accepted")
	}
	var out, errb bytes.Buffer
	if rc := Main(context.Background(), "nope", nil, nil, &out, &errb); rc != 127 {
		t.Fatalf("unknown program rc %d", rc)
	}
	home := filepath.Join(root, "var", "siem")
	if err := SetAPIUserPassword(home, "siem", "Gen3rated!pw"); err != nil {
		t.Fatal(err)
	}
	if _, ok := manager.NewUserStore(manager.Home{Dir: home}).Authenticate("siem", "Gen3rated!pw"); !ok {
		t.Fatal("password not set")
	}
	if _, ok := manager.NewUserStore(manager.Home{Dir: home}).Authenticate("siem-wui", "siem-wui"); !ok {
		t.Fatal("default users not created")
	}
}

// The wazuh layout: a stock Wazuh manager under var/ossec with the real tool names (wazuh-control
// without check, wazuh-analysisd for -t), its stock ossec.conf without a syslog listener (one only
// when asked), and the dashboard's opensearch_dashboards.yml on every address.
func TestPackageFilesWazuhLayout(t *testing.T) {
	lay := Layout{InstallDir: "var/ossec", ManagerUnit: "wazuh-manager.service", Control: ProgWazuhControl, Stock: true,
		DashboardHome: "usr/share/wazuh-dashboard", DashboardUnit: "wazuh-dashboard.service",
		DashboardConfig: "etc/wazuh-dashboard/opensearch_dashboards.yml", DashboardCerts: "etc/wazuh-dashboard/certs"}
	for _, syslog := range []bool{false, true} {
		spec := testSpec(t, "manager")
		spec.Ports.Syslog, spec.Layout = 0, lay
		if syslog {
			spec.Ports.Syslog, spec.Layout.Syslog = 1514, true
		}
		files, err := PackageFiles(spec)
		if err != nil {
			t.Fatal(err)
		}
		byPath := map[string]File{}
		for _, f := range files {
			byPath[f.Path] = f
		}
		for _, p := range []string{"var/ossec/bin/wazuh-control", "var/ossec/bin/wazuh-analysisd", "var/ossec/bin/agent_control", "var/ossec/bin/manage_agents",
			"var/ossec/queue/db/.keep", "var/ossec/etc/rules/local_rules.xml", "usr/lib/systemd/system/wazuh-manager.service"} {
			if _, ok := byPath[p]; !ok {
				t.Errorf("no %s", p)
			}
		}
		if _, ok := byPath["var/ossec/bin/siem-control"]; ok {
			t.Error("wazuh layout ships siem-control")
		}
		conf := byPath["var/ossec/etc/ossec.conf"].Data
		if bytes.Contains(conf, []byte("<connection>syslog</connection>")) != syslog || bytes.Contains(conf, []byte("<emulator>")) ||
			!bytes.Contains(conf, []byte("<location>/var/log/auth.log</location>")) {
			t.Errorf("ossec.conf (syslog %v):\n%s", syslog, conf)
		}
		if api := byPath["var/ossec/api/configuration/api.yaml"].Data; !bytes.Contains(api, []byte("host: 0.0.0.0\nport: 55000\n")) {
			t.Errorf("api.yaml:\n%s", api)
		}
	}
	spec := testSpec(t, "dashboard")
	spec.Layout = lay
	files, err := PackageFiles(spec)
	if err != nil {
		t.Fatal(err)
	}
	var conf, unit []byte
	for _, f := range files {
		switch f.Path {
		case "etc/wazuh-dashboard/opensearch_dashboards.yml":
			conf = f.Data
		case "usr/lib/systemd/system/wazuh-dashboard.service":
			unit = f.Data
		}
	}
	if !bytes.Contains(conf, []byte("server.host: 0.0.0.0\nopensearch.hosts: https://localhost:9200\nserver.port: 5601\n")) ||
		!bytes.Contains(conf, []byte(`server.ssl.certificate: "/lab/root/etc/wazuh-dashboard/certs/dashboard.pem"`)) {
		t.Errorf("opensearch_dashboards.yml:\n%s", conf)
	}
	if !bytes.Contains(unit, []byte("ExecStart=/lab/root/usr/share/wazuh-dashboard/bin/siem-dashboard --config /lab/root/etc/wazuh-dashboard/opensearch_dashboards.yml")) {
		t.Errorf("unit:\n%s", unit)
	}
}

// The lab's alerts template has the index settings of Wazuh's own wazuh-template.json (4.9.0 and
// 4.10.0, read in place from ../shared/reference/wazuh-real): shards, replicas, auto-expand,
// refresh and the fields limit (the default_field list is the real one's concern, not the lab's).
func TestTemplateSettingsAreWazuhs(t *testing.T) {
	for _, v := range []string{"4.9.0", "4.10.0"} {
		var real, lab struct {
			Settings map[string]any `json:"settings"`
		}
		if err := json.Unmarshal(wazuhreal.Read(t, "wazuh-v"+v, "wazuh-template.json"), &real); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(Template(v, "wazuh-alerts-4.x-"), &lab); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"index.number_of_shards", "index.number_of_replicas", "index.auto_expand_replicas", "index.refresh_interval", "index.mapping.total_fields.limit"} {
			if real.Settings[k] == nil || lab.Settings[k] != real.Settings[k] {
				t.Errorf("%s %s: lab %v, Wazuh's %v", v, k, lab.Settings[k], real.Settings[k])
			}
		}
	}
}
