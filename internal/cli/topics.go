package cli

import (
	"github.com/spf13/cobra"
)

const exitCodesHelp = `siemctl exit codes

  0    ok
  1    unexpected error; a partial per-item failure (agents restart/remove); a failed services
       start or restart whose cause has no class of its own below (a port held, an unknown
       setting, a missing file, …)
  2    usage or configuration error (the key and the fix are named); an unknown or misspelt
       subcommand; a change without a terminal and without --yes; a cleanup plan file that
       does not exist; a services start or restart of a component that runs where siemctl's
       configuration does not look for it (the indexer's http.port is not indexer.url's port:
       the cause names both, the fix sets either back)
  3    no-go: a gate or check failed and nothing was changed; snapshot diff found a critical
       change; alerts probe broke; rules check found errors (files the manager would refuse);
       services status found a unit not active; a cleanup plan was refused; rollback found
       nothing to roll back
  4    authentication or permission (bad password, unreadable secret); a failed services start
       or restart whose cause is a file or directory the component's service user cannot read
       or write (a key, its configuration, its data directory), or the shipper's output
       refusing its credentials (401/403)
  5    unreachable (refused, timeout, TLS verification, not ready, rate limited)
  6    locked: another siemctl run holds the host lock (taken by every command that changes
       the stack); the holder is named
  7    not this host's turn in a rolling upgrade (upgrade node): whose turn it is, its state
       and its holder are named; nothing was changed
  8    still starting: services start or restart (and a runbook's unit start) saw the unit run
       but its service not answer within the start wait, and the diagnosis names no cause (slow,
       not failed: check again with siemctl health; a host that is always this slow raises the
       component's start_wait key); a start that will fail exits with its cause's class (2 or
       4 above, else 1)
  10   failed and rolled back cleanly
  11   failed and the rollback failed too: manual action needed
  130  interrupted (SIGINT/SIGTERM); mutating runs stop at a safe point and can be resumed; a guided run stopped here by the operator

siemctl health uses Nagios codes instead: 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN.
With -o json the final error is printed on stderr as {"error": "...", "exit_code": N}.

Commands that change the stack (services start|stop|restart|enable, alerts cleanup --apply,
indexer allocation primaries|all, indexer flush, indexer watermark --recover|--clear,
indexer repository prepare,
security indexer apply, security api-users add, agents restart|remove, snapshot prune, upgrade
apply|resume|abort, rollback) follow one rule, without exceptions: they ask for confirmation on a
terminal and need --yes without one (exit 2 otherwise); they take the host lock (state_dir/lock), so
while an upgrade or rollback runs they exit 6 naming the holder (pid, command, run id) and change
nothing; and --dry-run prints each call they would make (method + path, unit job, file, tool command
line), asks nothing and changes nothing. alerts probe (it writes one event) and snapshot capture
--keep|--keep-days (its prune deletes snapshot files) take the host lock and --dry-run too, but ask no
confirmation: the command line is the consent, and a timer runs them (a capture saves its snapshot while an
upgrade holds the lock and leaves the prune to the next one, with a warning naming the holder). An unknown
or misspelt subcommand exits 2 with a suggestion; an unknown SIEMCTL_* environment variable is a warning naming the nearest key.
`

// ConfigReference is the configuration reference (siemctl help config, siemctl config --help).
const ConfigReference = `siemctl configuration

One YAML file (--config, $SIEMCTL_CONFIG, default /etc/siemctl/siemctl.yaml), overridden
by SIEMCTL_<SECTION>_<KEY> environment variables (e.g. SIEMCTL_INDEXER_URL) and flags.
A profile (siem or wazuh) sets every default. Unknown keys are errors.

  profile: siem                        # siem (siem-* package names) | wazuh (stock Wazuh 4.x layout)
  root: ""                             # prefix for every DEFAULT path (like DPKG_ROOT); absolute, must exist
  port_offset: 0                       # added to every DEFAULT port (URLs, agent/enrollment, syslog); 0-60000
  state_dir: /var/lib/siemctl          # journals, snapshots, the host lock
  backup_dir: /var/backups/siemctl
  components: [indexer, manager, dashboard, shipper]  # what this host runs: health judges, services acts on these; e.g. [manager, shipper]
  systemd:
    address: ""                        # empty: the system manager; or unix:path=/…/systemd/private
  packages:
    manager: auto                      # auto | apt | yum; APT_CONFIG/DPKG_ROOT are honoured
  indexer:
    url: https://127.0.0.1:9200
    username: admin
    password_file: /etc/siemctl/secrets/indexer   # or password_env: NAME, or password_command: [argv]
    ca_file: /etc/siem-indexer/certs/root-ca.pem
    insecure: false                    # explicit opt-out of TLS verification, shown in every report
    unit: siem-indexer.service
    start_wait: 60s                    # how long a start waits for the indexer to answer (1s-30m); a slow host (large heap, many shards): 3m. Lengthens every runbook start
    package: siem-indexer
    config_dir: /etc/siem-indexer
    data_dir: /var/lib/siem-indexer
    security_init: [/usr/share/siem-indexer/bin/indexer-security-init.sh]
    hash_tool: [/usr/share/siem-indexer/plugins/opensearch-security/tools/hash.sh]
    alerts_index_prefix: siem-alerts-4.x-
    cleanup_prefixes: []               # further daily-index prefixes alerts cleanup handles (same rules); wazuh: [wazuh-archives-4.x-]
    data_safety: auto                  # auto (snapshot when a usable path.repo repository is there, else copy if it fits) | copy (cold copy of data_dir) | snapshot (OpenSearch snapshot) | command (site hooks)
    snapshot_repository: siemctl       # fs repository used by snapshot mode (siemctl indexer repository prepare)
    snapshot_location: ""              # empty: <first path.repo>/siemctl
    data_hook_take: []                 # command mode: argv run with SIEMCTL_RUN_ID, SIEMCTL_DATA_DIR; non-zero exit = no-go
    data_hook_restore: []              # command mode: argv run by the rollback with the indexer stopped
    nodes: []                          # indexer cluster node names health expects (a missing one is named); []: the nodes that answer
  manager:
    api_url: https://127.0.0.1:55000     # wazuh: https://localhost:55000 (the API's own certificate names localhost)
    username: siem
    password_file: /etc/siemctl/secrets/manager
    ca_file: ""                          # wazuh: /var/ossec/api/configuration/ssl/server.crt (self-signed)
    insecure: false
    install_dir: /var/siem
    control_tool: siem-control         # wazuh-control in the wazuh profile
    config_check: [bin/siem-control, check]  # offline config check argv, relative to install_dir; wazuh: [bin/wazuh-analysisd, -t]
    unit: siem-manager.service
    start_wait: 30s
    package: siem-manager
    syslog: udp://127.0.0.1:514        # where the data-flow probe sends its tagged event; wazuh: "" (stock ossec.conf has no syslog <remote>)
    agent_port: 1514
    enrollment_port: 1515
    nodes: []                          # manager cluster node names health expects connected to the master; []: the nodes it lists
  dashboard:
    url: https://127.0.0.1:5601          # wazuh: https://127.0.0.1:443
    ca_file: ""                          # wazuh: /etc/wazuh-dashboard/certs/root-ca.pem
    insecure: false
    unit: siem-dashboard.service
    start_wait: 60s
    package: siem-dashboard
    config_dir: /etc/siem-dashboard
    backup_paths: []                   # further files backed up with the config; wazuh: [/usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml]
    nodes: []                          # distributed: the host of every dashboard's URL (the rolling upgrade's dashboard turns); []: the host of url
  shipper:
    binary: /usr/bin/shipper             # wazuh: /usr/share/filebeat/bin/filebeat (the deb's binary)
    home_dir: ""                         # --path.home (module directory home_dir/module); wazuh: /usr/share/filebeat
    data_dir: /var/lib/shipper           # --path.data (registry, keystore; the registry is saved and restored with the indexer data); wazuh: /var/lib/filebeat
    unit: shipper.service
    start_wait: 30s
    package: shipper
    config_dir: /etc/shipper
    template_source: ""                # URL or file pattern with {version}; wazuh: https://raw.githubusercontent.com/wazuh/wazuh/v{version}/extensions/elasticsearch/7.x/wazuh-template.json
    module_source: ""                  # Filebeat module tarball URL/file with {module}; wazuh: https://packages.wazuh.com/4.x/filebeat/{module}.tar.gz
    template_name: siem
    pipeline: filebeat-7.10.2-siem-alerts-pipeline
    backup_paths: []                   # wazuh: [/var/lib/filebeat/filebeat.keystore]
  thresholds:
    disk_warn_percent: 85
    disk_nogo_percent: 90
    upgrade_min_free_percent: 20

root and port_offset move only the profile's defaults: with root /srv/lab every default path
(state_dir, backup_dir, password files, CA files, install_dir, config and data dirs, tools, the
shipper binary) is read under /srv/lab, and with port_offset 1000 the default indexer URL is
https://127.0.0.1:10200. A value set in the file, the environment or a flag is taken as given.
siemctl config view shows each moved value with the origin "profile <name> + root" or
"+ port_offset".

Secrets are read at use, never logged, never put in snapshots, journals or child argv.
A password file readable by group or others is a health warning.
`

func newHelpTopic(name, short, body string) *cobra.Command {
	return &cobra.Command{
		Use:   name,
		Short: short,
		Long:  body,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write([]byte(body))
			return err
		},
		Annotations: map[string]string{"help-topic": "true"},
	}
}
