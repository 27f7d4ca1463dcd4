package config

import (
	"maps"
	"slices"
)

// Profiles hold every default. "siem" is the reference layout (siem-*
// packages and units, /var/siem); "wazuh" the real Wazuh 4.x names and paths.
var Profiles = map[string]map[string]any{
	"siem": profile(names{indexer: "siem-indexer", manager: "siem-manager", dashboard: "siem-dashboard", shipper: "shipper", installDir: "/var/siem", control: "siem-control", apiUser: "siem", alerts: "siem-alerts-4.x-", template: "siem", pipeline: "filebeat-7.10.2-siem-alerts-pipeline",
		configCheck: []string{"bin/siem-control", "check"}, dashboardBackup: []string{}, shipperBackup: []string{}, cleanupPrefixes: []string{},
		apiURL: "https://127.0.0.1:55000", dashboardURL: "https://127.0.0.1:5601", syslog: "udp://127.0.0.1:514", shipperBinary: "/usr/bin/shipper", shipperData: "/var/lib/shipper"}),
	// wazuh: a stock Wazuh 4.x all-in-one host. The API serves its own
	// self-signed api/configuration/ssl/server.crt (SAN localhost); the
	// dashboard listens on 443 with the installer's certificates (IP SAN
	// 127.0.0.1, like the indexer's); ossec.conf has no syslog <remote>; the
	// filebeat deb puts the binary under /usr/share/filebeat/bin and runs it
	// with --path.home /usr/share/filebeat --path.data /var/lib/filebeat
	// (where the module directory and the keystore are).
	"wazuh": profile(names{indexer: "wazuh-indexer", manager: "wazuh-manager", dashboard: "wazuh-dashboard", shipper: "filebeat", installDir: "/var/ossec", control: "wazuh-control", apiUser: "wazuh", alerts: "wazuh-alerts-4.x-", template: "wazuh", pipeline: "filebeat-7.10.2-wazuh-alerts-pipeline",
		configCheck: []string{"bin/wazuh-analysisd", "-t"}, // wazuh-control has no check
		apiURL:      "https://localhost:55000", apiCA: "/var/ossec/api/configuration/ssl/server.crt",
		dashboardURL: "https://127.0.0.1:443", dashboardCA: "/etc/wazuh-dashboard/certs/root-ca.pem",
		shipperBinary: "/usr/share/filebeat/bin/filebeat", shipperHome: "/usr/share/filebeat", shipperData: "/var/lib/filebeat",
		// the template of the exact manager version, where Wazuh's docs fetch it
		templateSource: "https://raw.githubusercontent.com/wazuh/wazuh/v{version}/extensions/elasticsearch/7.x/wazuh-template.json",
		// the module tarball, where Wazuh's upgrade guide downloads it
		moduleSource: "https://packages.wazuh.com/4.x/filebeat/{module}.tar.gz",
		// what Wazuh's upgrade guide backs up beyond the config directories
		// (the indexer's opensearch.keystore is in its config_dir)
		dashboardBackup: []string{"/usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml"},
		shipperBackup:   []string{"/var/lib/filebeat/filebeat.keystore"},
		// the Filebeat module's archives fileset writes wazuh-archives-4.x-YYYY.MM.DD
		cleanupPrefixes: []string{"wazuh-archives-4.x-"}}),
}

// ProfileNames lists the profiles, sorted.
func ProfileNames() []string { return slices.Sorted(maps.Keys(Profiles)) }

type names struct {
	indexer, manager, dashboard, shipper, installDir, control, apiUser, alerts, template, pipeline string
	apiURL, apiCA, dashboardURL, dashboardCA, syslog                                               string
	shipperBinary, shipperHome, shipperData, templateSource, moduleSource                          string
	configCheck, dashboardBackup, shipperBackup, cleanupPrefixes                                   []string
}

func profile(n names) map[string]any {
	return map[string]any{
		"profile":     "",
		"root":        "",
		"port_offset": 0,
		"state_dir":   "/var/lib/siemctl",
		"backup_dir":  "/var/backups/siemctl",
		"components":  slices.Clone(Components),
		"systemd":     map[string]any{"address": ""},
		"packages":    map[string]any{"manager": "auto"},
		"indexer": map[string]any{
			"url":                 "https://127.0.0.1:9200",
			"username":            "admin",
			"password_file":       "/etc/siemctl/secrets/indexer",
			"password_env":        "",
			"password_command":    []string{},
			"ca_file":             "/etc/" + n.indexer + "/certs/root-ca.pem",
			"insecure":            false,
			"unit":                n.indexer + ".service",
			"start_wait":          startWait("indexer"),
			"package":             n.indexer,
			"config_dir":          "/etc/" + n.indexer,
			"data_dir":            "/var/lib/" + n.indexer,
			"security_init":       []string{"/usr/share/" + n.indexer + "/bin/indexer-security-init.sh"},
			"hash_tool":           []string{"/usr/share/" + n.indexer + "/plugins/opensearch-security/tools/hash.sh"},
			"alerts_index_prefix": n.alerts,
			"cleanup_prefixes":    n.cleanupPrefixes,
			"data_safety":         "auto",
			"snapshot_repository": "siemctl",
			"snapshot_location":   "",
			"data_hook_take":      []string{},
			"data_hook_restore":   []string{},
			"nodes":               []string{},
		},
		"manager": map[string]any{
			"api_url":          n.apiURL,
			"username":         n.apiUser,
			"password_file":    "/etc/siemctl/secrets/manager",
			"password_env":     "",
			"password_command": []string{},
			"ca_file":          n.apiCA,
			"insecure":         false,
			"install_dir":      n.installDir,
			"control_tool":     n.control,
			"config_check":     n.configCheck,
			"unit":             n.manager + ".service",
			"start_wait":       startWait("manager"),
			"package":          n.manager,
			"syslog":           n.syslog,
			"agent_port":       1514,
			"enrollment_port":  1515,
			"nodes":            []string{},
		},
		"dashboard": map[string]any{
			"url":          n.dashboardURL,
			"ca_file":      n.dashboardCA,
			"insecure":     false,
			"unit":         n.dashboard + ".service",
			"start_wait":   startWait("dashboard"),
			"package":      n.dashboard,
			"config_dir":   "/etc/" + n.dashboard,
			"backup_paths": n.dashboardBackup,
			"nodes":        []string{},
		},
		"shipper": map[string]any{
			"binary":          n.shipperBinary,
			"home_dir":        n.shipperHome,
			"data_dir":        n.shipperData,
			"unit":            n.shipper + ".service",
			"start_wait":      startWait("shipper"),
			"package":         n.shipper,
			"config_dir":      "/etc/" + n.shipper,
			"template_source": n.templateSource,
			"module_source":   n.moduleSource,
			"template_name":   n.template,
			"pipeline":        n.pipeline,
			"backup_paths":    n.shipperBackup,
		},
		"thresholds": map[string]any{
			"disk_warn_percent":        85,
			"disk_nogo_percent":        90,
			"upgrade_min_free_percent": 20,
		},
	}
}
