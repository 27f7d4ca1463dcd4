package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ShipperLayout is where one lab profile puts the shipper: the real Filebeat OSS binary, its module,
// config, data and logs, and the names a profile gives them: SiemShipper and WazuhShipper.
type ShipperLayout struct {
	Package string // Debian package, also the unit name (Package + ".service")
	Binary  string // the Filebeat binary, relative to the root (the configured shipper.binary)
	// Wrapper is the deb's /usr/bin script that runs Binary with the path settings ("": none).
	Wrapper      string
	Home         string // path.home (the module directory is Home/module)
	ConfigDir    string // path.config: filebeat.yml, certs, the alerts template
	DataDir      string // path.data: registry, keystore
	LogsDir      string // path.logs
	Module       string // Filebeat module name (the pipeline id is filebeat-<version>-<module>-alerts-pipeline)
	IndexPrefix  string // alerts index prefix (the pipeline routes by day)
	AlertsFile   string // the manager's alerts.json, relative to the root
	ArchivesFile string // the manager's archives.json (the archives fileset, off by default)
	TemplateName string // legacy template name; the file is ConfigDir/<name>-template.json
	// ModuleTarballs: siemctl's profile of this layout replaces the module from Wazuh's module
	// tarballs (its shipper/module step, shipper.module_source), so the lab serves them
	// (ModuleTarball) and points shipper.module_source at them.
	ModuleTarballs bool
}

// SiemShipper is the siem profile's shipper layout.
var SiemShipper = ShipperLayout{
	Package: "shipper", Binary: "usr/bin/shipper", Home: "usr/share/shipper", ConfigDir: "etc/shipper",
	DataDir: "var/lib/shipper", LogsDir: "var/log/shipper", Module: "siem", IndexPrefix: "siem-alerts-4.x-",
	AlertsFile: "var/siem/logs/alerts/alerts.json", ArchivesFile: "var/siem/logs/archives/archives.json", TemplateName: "siem",
}

// WazuhShipper is a stock Wazuh host's Filebeat: package and unit filebeat, /etc/filebeat with
// wazuh-template.json, the wazuh module under /usr/share/filebeat/module, /var/ossec alerts.
var WazuhShipper = ShipperLayout{
	Package: "filebeat", Binary: "usr/share/filebeat/bin/filebeat", Wrapper: "usr/bin/filebeat", Home: "usr/share/filebeat", ConfigDir: "etc/filebeat",
	DataDir: "var/lib/filebeat", LogsDir: "var/log/filebeat", Module: "wazuh", IndexPrefix: "wazuh-alerts-4.x-",
	AlertsFile: "var/ossec/logs/alerts/alerts.json", ArchivesFile: "var/ossec/logs/archives/archives.json", TemplateName: "wazuh",
	ModuleTarballs: true,
}

// Unit is the shipper's systemd unit.
func (s ShipperLayout) Unit() string { return s.Package + ".service" }

// ConfigFile is filebeat.yml (Filebeat's default config name under path.config), relative to the root.
func (s ShipperLayout) ConfigFile() string { return filepath.Join(s.ConfigDir, "filebeat.yml") }

// TemplateFile is the alerts template file, relative to the root.
func (s ShipperLayout) TemplateFile() string {
	return filepath.Join(s.ConfigDir, s.TemplateName+"-template.json")
}

// PipelineID is the ingest pipeline id Filebeat gives the alerts fileset's pipeline.
func (s ShipperLayout) PipelineID() string {
	return "filebeat-" + FilebeatVersion + "-" + s.Module + "-alerts-pipeline"
}

// ShipperSpec is one shipper package to build.
type ShipperSpec struct {
	Layout      ShipperLayout
	Version     string // upstream package version (4.9.0); every version ships the same Filebeat
	Root        string // absolute dpkg root
	Filebeat    string // the built Filebeat binary (FilebeatCache.Ensure)
	IndexerPort int
	// IndexerHosts are the output's hosts (host:port) when the indexer is a cluster (nil: the
	// lab's single node, 127.0.0.1:IndexerPort).
	IndexerHosts []string
	Template     []byte // the alerts template of this version
}

// ShipperPackage returns the shipper package: the real Filebeat binary, the lab's Filebeat module
// (alerts and archives filesets with their inputs and ingest pipelines), filebeat.yml (output to the
// lab's OpenSearch over verified TLS, credentials from the keystore), the alerts template and a unit
// that runs Filebeat in the foreground with -e.
func ShipperPackage(spec ShipperSpec) (Package, error) {
	s := spec.Layout
	if !filepath.IsAbs(spec.Root) || spec.Version == "" || spec.Filebeat == "" || spec.IndexerPort == 0 || len(spec.Template) == 0 {
		return Package{}, fmt.Errorf("shipper package: incomplete spec (root %q, version %q, filebeat %q, indexer port %d)",
			spec.Root, spec.Version, spec.Filebeat, spec.IndexerPort)
	}
	if _, err := os.Stat(spec.Filebeat); err != nil {
		return Package{}, fmt.Errorf("shipper package: %w", err)
	}
	mod := filepath.Join(s.Home, "module", s.Module)
	files := []File{
		{Path: s.Binary, Mode: 0o755, Source: spec.Filebeat},
		{Path: s.ConfigFile(), Mode: 0o600, Data: shipperConfig(spec), Conffile: true},
		{Path: s.TemplateFile(), Mode: 0o644, Data: spec.Template},
		{Path: filepath.Join(s.LogsDir, ".keep"), Mode: 0o644},
		{Path: filepath.Join(s.DataDir, ".keep"), Mode: 0o644},
		{Path: filepath.Join("usr/lib/systemd/system", s.Unit()), Mode: 0o644, Data: shipperUnit(spec)},
	}
	if s.Wrapper != "" {
		files = append(files, File{Path: s.Wrapper, Mode: 0o755, Data: shipperWrapper(spec)})
	}
	modFiles, err := moduleFiles(s)
	if err != nil {
		return Package{}, err
	}
	for _, f := range modFiles {
		f.Path = filepath.Join(mod, f.Path)
		files = append(files, f)
	}
	return Package{Name: s.Package, Version: spec.Version + "-1", Files: files,
		Description: fmt.Sprintf("Filebeat OSS %s with the %s alerts module (siemlab, package %s)", FilebeatVersion, s.Module, spec.Version)}, nil
}

// moduleFiles are the files of the lab's Filebeat module, relative to its directory
// (Home/module/<Module>): the alerts and archives filesets, each with its manifest, input and
// ingest pipeline. The shipper package installs them; ModuleTarball packs the same files.
func moduleFiles(s ShipperLayout) ([]File, error) {
	var files []File
	for _, fs := range []struct{ name, file, prefix string }{
		{"alerts", s.AlertsFile, s.IndexPrefix},
		{"archives", s.ArchivesFile, strings.Replace(s.IndexPrefix, "-alerts-", "-archives-", 1)},
	} {
		pipeline, err := shipperPipeline(fs.name)
		if err != nil {
			return nil, err
		}
		files = append(files,
			File{Path: filepath.Join(fs.name, "manifest.yml"), Mode: 0o644, Data: filesetManifest(fs.name, "/"+fs.file, fs.prefix)},
			File{Path: filepath.Join(fs.name, "config", fs.name+".yml"), Mode: 0o644, Data: []byte(filesetInput)},
			File{Path: filepath.Join(fs.name, "ingest", "pipeline.json"), Mode: 0o644, Data: pipeline},
		)
	}
	return files, nil
}

func filesetManifest(name, path, prefix string) []byte {
	return fmt.Appendf(nil, `module_version: 1.0

var:
  - name: paths
    default:
      - %s
  - name: index_prefix
    default: %s

input: config/%s.yml

ingest_pipeline: ingest/pipeline.json
`, path, prefix, name)
}

// filesetInput is the fileset's input: a log input on the manager's JSON file; the ingest pipeline
// parses each line and routes it to the daily index of fields.index_prefix. The document id is the
// sha256 of the alert line (which carries the alert's id and timestamp), so a line sent again (a
// registry restored by a rollback, a resend after a lost acknowledgement) is refused by the
// indexer as a duplicate (409 on Filebeat's create) instead of being indexed twice.
const filesetInput = `type: log
paths:
{{ range $i, $path := .paths }}
 - {{$path}}
{{ end }}
exclude_files: [".gz$"]
fields:
  index_prefix: {{ .index_prefix }}
processors:
  - fingerprint:
      fields: ["message"]
      target_field: "@metadata._id"
`

// removedFields are the Beat bookkeeping fields the pipeline drops from the stored alert (Filebeat's
// own agent object is replaced by the alert's when the json processor adds the line to the root).
var removedFields = []string{"message", "ecs", "beat", "input_type", "tags", "count", "@version", "log", "offset",
	"type", "host", "fields", "event", "fileset", "service", "input"}

// shipperPipeline is the ingest pipeline of a fileset: parse the JSON line into the root, take
// @timestamp from the alert's timestamp, route to <index_prefix>YYYY.MM.DD, drop Beat bookkeeping.
// Only ingest-common processors (the lab's OpenSearch has no geoip module). Unlike a pipeline that
// drops failing documents, a failure keeps the document (in Filebeat's own index) with
// error.message and error.processor, so a broken alert is visible rather than lost.
func shipperPipeline(fileset string) ([]byte, error) {
	procs := []any{
		map[string]any{"json": map[string]any{"field": "message", "add_to_root": true}},
		map[string]any{"date": map[string]any{"field": "timestamp", "target_field": "@timestamp", "formats": []string{"ISO8601"}, "ignore_failure": false}},
		map[string]any{"date_index_name": map[string]any{"field": "timestamp", "date_rounding": "d",
			"index_name_prefix": "{{fields.index_prefix}}", "index_name_format": "yyyy.MM.dd", "ignore_failure": false}},
	}
	for _, f := range removedFields {
		procs = append(procs, map[string]any{"remove": map[string]any{"field": f, "ignore_missing": true, "ignore_failure": true}})
	}
	p := map[string]any{
		"description": "siemlab " + fileset + " pipeline",
		"processors":  procs,
		"on_failure": []any{
			map[string]any{"set": map[string]any{"field": "error.message", "value": "{{ _ingest.on_failure_message }}"}},
			map[string]any{"set": map[string]any{"field": "error.processor", "value": "{{ _ingest.on_failure_processor_type }}"}},
		},
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("shipper pipeline: %w", err)
	}
	return append(b, '\n'), nil
}

// shipperConfig is filebeat.yml. The path settings are in the file too, so `shipper --path.config
// DIR test output` (how siemctl runs it) finds the module, keystore and logs of the lab.
func shipperConfig(spec ShipperSpec) []byte {
	s, abs := spec.Layout, func(rel string) string { return filepath.Join(spec.Root, rel) }
	return fmt.Appendf(nil, `# Filebeat OSS %[1]s as the lab's shipper (written by siemlab): the %[2]s module's alerts
# into the lab's OpenSearch over verified TLS. username and password come from the keystore in
# path.data (filebeat keystore add ... --stdin), never from this file or the command line.
path.home: %[3]s
path.config: %[4]s
path.data: %[5]s
path.logs: %[6]s

filebeat.modules:
  - module: %[2]s
    alerts:
      enabled: true
      var.paths: ["%[7]s"]
    archives:
      enabled: false
      var.paths: ["%[8]s"]

setup.template.json.enabled: true
setup.template.json.path: '%[9]s'
setup.template.json.name: '%[10]s'
setup.template.overwrite: true
setup.ilm.enabled: false

output.elasticsearch:
  hosts: %[11]s
  protocol: https
  username: ${username}
  password: ${password}
  ssl.certificate_authorities: ["%[12]s"]

logging.level: info
logging.to_files: true
logging.files:
  path: %[6]s
  name: %[13]s
  keepfiles: 7
  permissions: 0644
logging.metrics.enabled: false

seccomp:
  default_action: allow
  syscalls:
  - action: allow
    names:
    - rseq
`, FilebeatVersion, s.Module, abs(s.Home), abs(s.ConfigDir), abs(s.DataDir), abs(s.LogsDir), abs(s.AlertsFile), abs(s.ArchivesFile),
		abs(s.TemplateFile()), s.TemplateName, shipperHosts(spec), abs(filepath.Join(s.ConfigDir, "certs", "root-ca.pem")), s.Package)
}

// shipperHosts is filebeat.yml's output hosts list.
func shipperHosts(spec ShipperSpec) string {
	if len(spec.IndexerHosts) == 0 {
		return fmt.Sprintf(`["127.0.0.1:%d"]`, spec.IndexerPort)
	}
	return yamlList(spec.IndexerHosts)
}

// shipperWrapper is the filebeat deb's /usr/bin/filebeat: Filebeat with the package's path settings.
func shipperWrapper(spec ShipperSpec) []byte {
	s, abs := spec.Layout, func(rel string) string { return filepath.Join(spec.Root, rel) }
	return fmt.Appendf(nil, `#!/usr/bin/env bash

# Script to run Filebeat in foreground with the same path settings that
# the init script / systemd unit file would do.

exec %s \
  --path.home %s \
  --path.config %s \
  --path.data %s \
  --path.logs %s \
  "$@"
`, abs(s.Binary), abs(s.Home), abs(s.ConfigDir), abs(s.DataDir), abs(s.LogsDir))
}

// shipperUnit runs Filebeat in the foreground with -e (logs on stderr, appended to a file).
func shipperUnit(spec ShipperSpec) []byte {
	s, abs := spec.Layout, func(rel string) string { return filepath.Join(spec.Root, rel) }
	return fmt.Appendf(nil, `[Unit]
Description=Filebeat %[1]s ships the manager's alerts to the indexer (siemlab %[2]s)
Documentation=https://www.elastic.co/beats/filebeat
After=network.target

[Service]
Type=simple
Environment="GODEBUG=madvdontneed=1"
ExecStart=%[3]s -e -c %[4]s --path.home %[5]s --path.config %[6]s --path.data %[7]s --path.logs %[8]s
StandardOutput=append:%[9]s
StandardError=append:%[9]s
TimeoutStopSec=10
Restart=no

[Install]
WantedBy=multi-user.target
`, FilebeatVersion, s.Package, abs(s.Binary), abs(s.ConfigFile()), abs(s.Home), abs(s.ConfigDir), abs(s.DataDir), abs(s.LogsDir),
		abs(filepath.Join(s.LogsDir, s.Package+"-stderr.log")))
}

// shipperCmd runs the lab's Filebeat with --path.config (as siemctl does) and optional stdin.
func (l *Lab) shipperCmd(ctx context.Context, stdin string, args ...string) (string, error) {
	s := l.shipperLayout()
	full := append([]string{"--path.config", filepath.Join(l.st.Root, s.ConfigDir)}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(l.st.Root, s.Binary), full...)
	cmd.Env = os.Environ()
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), &CommandError{Cmd: s.Binary + " " + strings.Join(args, " "), Err: err, Output: tail(out.String(), 1500)}
	}
	return out.String(), nil
}

func (l *Lab) shipperLayout() ShipperLayout { return l.prof.Shipper }

// shipperKeystore creates Filebeat's keystore in path.data with the indexer credentials, passed on
// stdin (`filebeat keystore add NAME --stdin --force`, as the Wazuh installer does).
func (l *Lab) shipperKeystore(ctx context.Context, user, password string) error {
	if _, err := l.shipperCmd(ctx, "", "keystore", "create", "--force"); err != nil {
		return fmt.Errorf("shipper keystore: %w", err)
	}
	for _, kv := range [][2]string{{"username", user}, {"password", password}} {
		if _, err := l.shipperCmd(ctx, kv[1], "keystore", "add", kv[0], "--stdin", "--force"); err != nil {
			return fmt.Errorf("shipper keystore add %s: %w", kv[0], err)
		}
	}
	return nil
}
