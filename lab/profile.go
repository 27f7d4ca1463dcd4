package lab

import (
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Profile is one lab layout: the package, unit and path names of a stock install. "siem" is the
// reference layout (siem-* packages and units, /var/siem); "wazuh" a stock Wazuh 4.x host (wazuh-* packages, /var/ossec, the API's
// own self-signed certificate, the dashboard on 443, a stock ossec.conf without a syslog listener).
// Everything the lab writes that differs between the two is read from here, and the paths and
// ports are where siemctl's profile of the same name has its defaults (internal/config/profiles.go),
// under the lab's root and shifted by its port offset.
type Profile struct {
	Name      string // siem | wazuh (also siemctl's profile)
	Indexer   string // package and unit base; etc/<name>, usr/share/<name>, var/lib/<name>, var/log/<name>
	Manager   string // package and unit base
	Dashboard string // package and unit base; etc/<name>
	// InstallDir is the manager's install directory relative to the root (var/siem, var/ossec).
	InstallDir string
	Control    string // the manager's control tool under InstallDir/bin
	APIUser    string // the manager API's administrator (siemctl's manager.username)
	WUIUser    string // the dashboard's API user
	Org        string // O and OU of the lab certificates (the Wazuh certs tool's shape)
	// DashboardConfig is the dashboard's config file relative to the root.
	DashboardConfig string
	// DashboardAPIConfig is the dashboard's Wazuh app config with the API host and the WUI user's
	// credentials (usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml), relative to the root; "": none.
	DashboardAPIConfig string
	// DashboardPort is the dashboard's default port (before the port offset).
	DashboardPort int
	// Syslog: the packaged ossec.conf has a syslog <remote> (siem); a stock Wazuh one has none.
	Syslog bool
	// APICertFromCA: the manager API's certificate is signed by the lab CA (siem); otherwise the
	// API generates its own self-signed server.crt at first start, as on a stock Wazuh host.
	APICertFromCA bool
	Shipper       ShipperLayout
}

// Profiles are the lab's layouts by name.
var Profiles = map[string]Profile{
	"siem": {Name: "siem", Indexer: "siem-indexer", Manager: "siem-manager", Dashboard: "siem-dashboard",
		InstallDir: "var/siem", Control: "siem-control", APIUser: "siem", WUIUser: "siem-wui", Org: "Siem",
		DashboardConfig: "etc/siem-dashboard/dashboard.yml", DashboardPort: 5601, Syslog: true, APICertFromCA: true,
		Shipper: SiemShipper},
	"wazuh": {Name: "wazuh", Indexer: "wazuh-indexer", Manager: "wazuh-manager", Dashboard: "wazuh-dashboard",
		InstallDir: "var/ossec", Control: "wazuh-control", APIUser: "wazuh", WUIUser: "wazuh-wui", Org: "Wazuh",
		DashboardConfig: "etc/wazuh-dashboard/opensearch_dashboards.yml", DashboardPort: 443,
		DashboardAPIConfig: "usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml",
		Shipper:            WazuhShipper},
}

// DefaultProfile is the layout of a lab whose state names none (labs made before profiles).
const DefaultProfile = "siem"

// ProfileNames lists the profiles, sorted.
func ProfileNames() []string { return slices.Sorted(maps.Keys(Profiles)) }

// ProfileFor returns the named profile ("" is DefaultProfile) or an error naming the known ones.
func ProfileFor(name string) (Profile, error) {
	if name == "" {
		name = DefaultProfile
	}
	p, ok := Profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("lab: unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// Indexer paths relative to the root.
func (p Profile) IndexerHome() string  { return "usr/share/" + p.Indexer }
func (p Profile) IndexerConf() string  { return "etc/" + p.Indexer }
func (p Profile) IndexerData() string  { return "var/lib/" + p.Indexer }
func (p Profile) IndexerLogs() string  { return "var/log/" + p.Indexer }
func (p Profile) IndexerTmp() string   { return "var/tmp/" + p.Indexer }
func (p Profile) SecurityInit() string { return p.IndexerHome() + "/bin/indexer-security-init.sh" }
func (p Profile) HashTool() string {
	return p.IndexerHome() + "/plugins/opensearch-security/tools/hash.sh"
}

// DashboardHome is the dashboard's home relative to the root.
func (p Profile) DashboardHome() string { return "usr/share/" + p.Dashboard }

// DashboardConf is the dashboard's config directory relative to the root.
func (p Profile) DashboardConf() string { return "etc/" + p.Dashboard }

// Unit names.
func (p Profile) IndexerUnit() string   { return p.Indexer + ".service" }
func (p Profile) ManagerUnit() string   { return p.Manager + ".service" }
func (p Profile) DashboardUnit() string { return p.Dashboard + ".service" }

// Packages are the component packages in start order.
func (p Profile) Packages() []string {
	return []string{p.Indexer, p.Manager, p.Dashboard, p.Shipper.Package}
}

// Units are the component units in start order.
func (p Profile) Units() []string {
	return []string{p.IndexerUnit(), p.ManagerUnit(), p.DashboardUnit(), p.Shipper.Unit()}
}

// AlertsPrefix is the alerts index prefix (siemctl's indexer.alerts_index_prefix).
func (p Profile) AlertsPrefix() string { return p.Shipper.IndexPrefix }

// AlertsFile is the manager's alerts.json relative to the root.
func (p Profile) AlertsFile() string { return filepath.Join(p.InstallDir, "logs/alerts/alerts.json") }

// Ports are the profile's default ports shifted by offset. The indexer's transport port is out of
// the 9200+N range (not 9300+N) so that labs whose offsets differ by 100 do not collide: offset N's
// transport would be offset N+100's HTTP port.
func (p Profile) Ports(offset int) Ports {
	return Ports{Indexer: 9200 + offset, Transport: 19300 + offset, API: 55000 + offset, Agent: 1514 + offset,
		Enrollment: 1515 + offset, Syslog: 514 + offset, Dashboard: p.DashboardPort + offset}
}

// Subject is the distinguished name of a lab certificate (C=US, L=California, O and OU Org).
func (p Profile) Subject(cn string) pkix.Name {
	return pkix.Name{Country: []string{"US"}, Locality: []string{"California"}, Organization: []string{p.Org},
		OrganizationalUnit: []string{p.Org}, CommonName: cn}
}

// DN is a certificate's DN as OpenSearch security prints it (RFC 2253, most specific first), e.g.
// plugins.security.authcz.admin_dn.
func (p Profile) DN(cn string) string {
	return fmt.Sprintf("CN=%s,OU=%s,O=%s,L=California,C=US", cn, p.Org, p.Org)
}
