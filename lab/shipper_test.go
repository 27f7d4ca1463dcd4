package lab

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestShipperPackage(t *testing.T) {
	fb := filepath.Join(t.TempDir(), "filebeat")
	if err := os.WriteFile(fb, []byte("ELF…"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := ShipperSpec{Layout: SiemShipper, Version: "4.10.0", Root: "/lab/root", Filebeat: fb, IndexerPort: 9300, Template: []byte(`{"index_patterns":["siem-alerts-4.x-*"]}`)}
	p, err := ShipperPackage(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "shipper" || p.Version != "4.10.0-1" || !strings.Contains(p.Description, "Filebeat OSS 7.10.2") {
		t.Errorf("package %s %s %q", p.Name, p.Version, p.Description)
	}
	byPath := map[string]File{}
	for _, f := range p.Files {
		if strings.HasPrefix(f.Path, "/") {
			t.Errorf("absolute path %s", f.Path)
		}
		byPath[f.Path] = f
	}
	if f := byPath["usr/bin/shipper"]; f.Source != fb || f.Mode != 0o755 {
		t.Errorf("binary = %+v, want the Filebeat build as /usr/bin/shipper", f)
	}
	conf := byPath["etc/shipper/filebeat.yml"]
	if !conf.Conffile || conf.Mode != 0o600 {
		t.Errorf("filebeat.yml conffile=%v mode=%v (Filebeat's strict.perms wants it owner-only)", conf.Conffile, conf.Mode)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(conf.Data, &cfg); err != nil {
		t.Fatalf("filebeat.yml: %v\n%s", err, conf.Data)
	}
	for k, want := range map[string]any{
		"path.home": "/lab/root/usr/share/shipper", "path.data": "/lab/root/var/lib/shipper", "path.logs": "/lab/root/var/log/shipper",
		"setup.template.json.path": "/lab/root/etc/shipper/siem-template.json", "setup.template.json.name": "siem", "setup.ilm.enabled": false,
	} {
		if cfg[k] != want {
			t.Errorf("%s = %v, want %v", k, cfg[k], want)
		}
	}
	out, _ := cfg["output.elasticsearch"].(map[string]any)
	if hosts, _ := out["hosts"].([]any); len(hosts) != 1 || hosts[0] != "127.0.0.1:9300" || out["protocol"] != "https" {
		t.Errorf("output = %v", out)
	}
	if out["username"] != "${username}" || out["password"] != "${password}" {
		t.Errorf("credentials must come from the keystore: %v / %v", out["username"], out["password"])
	}
	if cas, _ := out["ssl.certificate_authorities"].([]any); len(cas) != 1 || cas[0] != "/lab/root/etc/shipper/certs/root-ca.pem" {
		t.Errorf("CA = %v", out["ssl.certificate_authorities"])
	}
	if _, ok := out["ssl.verification_mode"]; ok {
		t.Error("TLS verification must stay on")
	}
	mods, _ := cfg["filebeat.modules"].([]any)
	if len(mods) != 1 {
		t.Fatalf("modules = %v", mods)
	}
	m := mods[0].(map[string]any)
	alerts := m["alerts"].(map[string]any)
	if m["module"] != "siem" || alerts["enabled"] != true || alerts["var.paths"].([]any)[0] != "/lab/root/var/siem/logs/alerts/alerts.json" {
		t.Errorf("module = %v", m)
	}

	unit := string(byPath["usr/lib/systemd/system/shipper.service"].Data)
	for _, want := range []string{"ExecStart=/lab/root/usr/bin/shipper -e -c /lab/root/etc/shipper/filebeat.yml --path.home /lab/root/usr/share/shipper",
		"--path.data /lab/root/var/lib/shipper --path.logs /lab/root/var/log/shipper", "StandardError=append:/lab/root/var/log/shipper/shipper-stderr.log"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}

	// The module: alerts and archives filesets as Filebeat loads them (manifest → input + pipeline).
	mod := "usr/share/shipper/module/siem/"
	manifest := byPath[mod+"alerts/manifest.yml"]
	var man struct {
		Var []struct {
			Name    string
			Default any
		}
		Input          string
		IngestPipeline string `yaml:"ingest_pipeline"`
	}
	if err := yaml.Unmarshal(manifest.Data, &man); err != nil {
		t.Fatal(err)
	}
	if man.Input != "config/alerts.yml" || man.IngestPipeline != "ingest/pipeline.json" || len(man.Var) != 2 ||
		man.Var[0].Default.([]any)[0] != "/var/siem/logs/alerts/alerts.json" || man.Var[1].Default != "siem-alerts-4.x-" {
		t.Errorf("alerts manifest = %+v", man)
	}
	if err := yaml.Unmarshal(byPath[mod+"archives/manifest.yml"].Data, &man); err != nil || man.Var[1].Default != "siem-archives-4.x-" {
		t.Errorf("archives manifest = %+v %v", man, err)
	}
	if in := string(byPath[mod+"alerts/config/alerts.yml"].Data); !strings.Contains(in, "type: log") || !strings.Contains(in, "index_prefix: {{ .index_prefix }}") ||
		!strings.Contains(in, "- fingerprint:\n      fields: [\"message\"]\n      target_field: \"@metadata._id\"") {
		t.Errorf("alerts input:\n%s", in)
	}
	var pl struct {
		Processors []map[string]map[string]any
		OnFailure  []map[string]map[string]any `json:"on_failure"`
	}
	if err := json.Unmarshal(byPath[mod+"alerts/ingest/pipeline.json"].Data, &pl); err != nil {
		t.Fatal(err)
	}
	if len(pl.Processors) < 4 || pl.Processors[0]["json"]["field"] != "message" || pl.Processors[1]["date"]["target_field"] != "@timestamp" ||
		pl.Processors[2]["date_index_name"]["index_name_prefix"] != "{{fields.index_prefix}}" || len(pl.OnFailure) == 0 {
		t.Errorf("pipeline = %+v", pl)
	}
	for _, p := range pl.Processors {
		for typ := range p {
			if typ == "geoip" {
				t.Error("geoip processor: the lab's OpenSearch has no ingest-geoip module")
			}
		}
	}
	if SiemShipper.PipelineID() != "filebeat-7.10.2-siem-alerts-pipeline" {
		t.Errorf("pipeline id %s", SiemShipper.PipelineID())
	}

	for _, bad := range []ShipperSpec{
		{Layout: SiemShipper, Version: "4.9.0", Root: "lab/root", Filebeat: fb, IndexerPort: 9200, Template: []byte("{}")},
		{Layout: SiemShipper, Version: "4.9.0", Root: "/lab/root", Filebeat: filepath.Join(t.TempDir(), "none"), IndexerPort: 9200, Template: []byte("{}")},
		{Layout: SiemShipper, Version: "4.9.0", Root: "/lab/root", Filebeat: fb, Template: []byte("{}")},
	} {
		if _, err := ShipperPackage(bad); err == nil {
			t.Errorf("spec %+v accepted", bad)
		}
	}
}

// The wazuh layout is the filebeat deb's: the binary under /usr/share/filebeat/bin, the /usr/bin
// wrapper with the package's path settings, the wazuh module, /etc/filebeat/wazuh-template.json.
func TestShipperPackageWazuhLayout(t *testing.T) {
	fb := filepath.Join(t.TempDir(), "filebeat")
	if err := os.WriteFile(fb, []byte("ELF…"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := ShipperPackage(ShipperSpec{Layout: WazuhShipper, Version: "4.9.0", Root: "/lab/root", Filebeat: fb, IndexerPort: 9300, Template: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]File{}
	for _, f := range p.Files {
		byPath[f.Path] = f
	}
	if p.Name != "filebeat" || byPath["usr/share/filebeat/bin/filebeat"].Source != fb || byPath["etc/filebeat/wazuh-template.json"].Data == nil ||
		byPath["usr/share/filebeat/module/wazuh/alerts/manifest.yml"].Data == nil || byPath["usr/lib/systemd/system/filebeat.service"].Data == nil {
		t.Fatalf("wazuh shipper package %s: %v", p.Name, slices.Sorted(maps.Keys(byPath)))
	}
	w := string(byPath["usr/bin/filebeat"].Data)
	for _, want := range []string{"exec /lab/root/usr/share/filebeat/bin/filebeat \\\n", "--path.home /lab/root/usr/share/filebeat \\\n",
		"--path.config /lab/root/etc/filebeat \\\n", "--path.data /lab/root/var/lib/filebeat \\\n", "--path.logs /lab/root/var/log/filebeat \\\n", `"$@"`} {
		if !strings.Contains(w, want) {
			t.Errorf("wrapper lacks %q:\n%s", want, w)
		}
	}
	if byPath["usr/bin/filebeat"].Mode != 0o755 {
		t.Errorf("wrapper mode %v", byPath["usr/bin/filebeat"].Mode)
	}
}
