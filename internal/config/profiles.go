package config

import "sort"

// Profiles hold every default. "siem" follows the operations spec; "wazuh"
// the real Wazuh 4.x names and paths.
var Profiles = map[string]map[string]any{
	"siem":  profile(names{indexer: "siem-indexer", manager: "siem-manager", dashboard: "siem-dashboard", shipper: "shipper", installDir: "/var/siem", control: "siem-control", apiUser: "siem", alerts: "siem-alerts-4.x-", template: "siem", pipeline: "filebeat-7.10.2-siem-alerts-pipeline"}),
	"wazuh": profile(names{indexer: "wazuh-indexer", manager: "wazuh-manager", dashboard: "wazuh-dashboard", shipper: "filebeat", installDir: "/var/ossec", control: "wazuh-control", apiUser: "wazuh", alerts: "wazuh-alerts-4.x-", template: "wazuh", pipeline: "filebeat-7.10.2-wazuh-alerts-pipeline"}),
}

// ProfileNames lists the profiles, sorted.
func ProfileNames() []string {
	out := make([]string, 0, len(Profiles))
	for k := range Profiles {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type names struct {
	indexer, manager, dashboard, shipper, installDir, control, apiUser, alerts, template, pipeline string
}

func profile(n names) map[string]any {
	return map[string]any{
		"profile":    "",
		"state_dir":  "/var/lib/siemctl",
		"backup_dir": "/var/backups/siemctl",
		"systemd":    map[string]any{"address": ""},
		"packages":   map[string]any{"manager": "auto"},
		"indexer": map[string]any{
			"url":                 "https://127.0.0.1:9200",
			"username":            "admin",
			"password_file":       "/etc/siemctl/secrets/indexer",
			"password_env":        "",
			"password_command":    []string{},
			"ca_file":             "/etc/" + n.indexer + "/certs/root-ca.pem",
			"insecure":            false,
			"unit":                n.indexer + ".service",
			"package":             n.indexer,
			"config_dir":          "/etc/" + n.indexer,
			"data_dir":            "/var/lib/" + n.indexer,
			"security_init":       []string{"/usr/share/" + n.indexer + "/bin/indexer-security-init.sh"},
			"hash_tool":           []string{"/usr/share/" + n.indexer + "/plugins/opensearch-security/tools/hash.sh"},
			"alerts_index_prefix": n.alerts,
			"data_safety":         "copy",
			"snapshot_repository": "siemctl",
			"snapshot_location":   "",
			"data_hook_take":      []string{},
			"data_hook_restore":   []string{},
		},
		"manager": map[string]any{
			"api_url":          "https://127.0.0.1:55000",
			"username":         n.apiUser,
			"password_file":    "/etc/siemctl/secrets/manager",
			"password_env":     "",
			"password_command": []string{},
			"ca_file":          "",
			"insecure":         false,
			"install_dir":      n.installDir,
			"control_tool":     n.control,
			"unit":             n.manager + ".service",
			"package":          n.manager,
			"syslog":           "udp://127.0.0.1:514",
			"agent_port":       1514,
			"enrollment_port":  1515,
		},
		"dashboard": map[string]any{
			"url":        "https://127.0.0.1:5601",
			"ca_file":    "",
			"insecure":   false,
			"unit":       n.dashboard + ".service",
			"package":    n.dashboard,
			"config_dir": "/etc/" + n.dashboard,
		},
		"shipper": map[string]any{
			"binary":          "/usr/bin/" + n.shipper,
			"unit":            n.shipper + ".service",
			"package":         n.shipper,
			"config_dir":      "/etc/" + n.shipper,
			"data_dir":        "/var/lib/" + n.shipper,
			"template_source": "",
			"template_name":   n.template,
			"pipeline":        n.pipeline,
		},
		"thresholds": map[string]any{
			"disk_warn_percent":        85,
			"disk_nogo_percent":        90,
			"upgrade_min_free_percent": 20,
		},
	}
}
