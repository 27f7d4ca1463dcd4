// Package emu holds the lab's emulators of the manager and the dashboard, and the
// package contents the lab builds from them (see /work/shared and the lab contract).
package emu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/siemctl/siemctl/lab/emu/dashboard"
	"github.com/siemctl/siemctl/lab/emu/faults"
	"github.com/siemctl/siemctl/lab/emu/manager"
)

// Ports are the lab's listening ports.
type Ports struct{ API, Agent, Enrollment, Syslog, Dashboard, Indexer int }

// PackageSpec describes one package to build.
type PackageSpec struct {
	Component string // "manager" | "dashboard"
	Version   string // upstream version "4.9.0" or "4.10.0" (Debian version is Version+"-1")
	Root      string // absolute DPKG_ROOT of the lab
	Binary    string // absolute path of the multi-call binary to ship (the siemlab executable)
	Ports     Ports
	Layout    Layout // zero: the siem layout
	// SeedFrom is the id of the first agent the manager seeds (0: 1): the nodes of a manager cluster
	// seed disjoint ids (siem-managerd --seed-from).
	SeedFrom int
}

// Layout is where the packages put the emulators and what they call them: the lab profile's names.
// Empty fields take the siem layout's values.
type Layout struct {
	InstallDir  string // the manager's install directory relative to the root: var/siem | var/ossec
	ManagerUnit string // siem-manager.service | wazuh-manager.service
	Control     string // the control tool: siem-control (with check) | wazuh-control (without)
	// Stock: a stock Wazuh 4.x manager: its packaged ossec.conf (StockOssecConf: no syslog listener
	// unless Syslog), the API listening on every address.
	Stock  bool
	Syslog bool
	// The dashboard's package: its home (bin/, VERSION.json), unit, config file and certificates.
	DashboardHome   string // usr/share/siem-dashboard | usr/share/wazuh-dashboard
	DashboardUnit   string
	DashboardConfig string // etc/siem-dashboard/dashboard.yml | etc/wazuh-dashboard/opensearch_dashboards.yml
	DashboardCerts  string // etc/siem-dashboard/certs | etc/wazuh-dashboard/certs
}

// SiemLayout is the siem profile's layout.
var SiemLayout = Layout{InstallDir: "var/siem", ManagerUnit: "siem-manager.service", Control: ProgControl,
	DashboardHome: "usr/share/siem-dashboard", DashboardUnit: "siem-dashboard.service",
	DashboardConfig: "etc/siem-dashboard/dashboard.yml", DashboardCerts: "etc/siem-dashboard/certs"}

func (l Layout) withDefaults() Layout {
	d := SiemLayout
	for _, f := range []struct{ v, def *string }{{&l.InstallDir, &d.InstallDir}, {&l.ManagerUnit, &d.ManagerUnit}, {&l.Control, &d.Control},
		{&l.DashboardHome, &d.DashboardHome}, {&l.DashboardUnit, &d.DashboardUnit}, {&l.DashboardConfig, &d.DashboardConfig},
		{&l.DashboardCerts, &d.DashboardCerts}} {
		if *f.v == "" {
			*f.v = *f.def
		}
	}
	return l
}

// File is one file of a package.
type File struct {
	Path     string      // relative to Root, no leading slash, e.g. "var/siem/bin/siem-managerd"
	Mode     fs.FileMode // 0755 for executables
	Data     []byte      // content (ignored when Link != "")
	Link     string      // non-empty: a symlink with this target
	Conffile bool        // listed in DEBIAN/conffiles
}

// Program names dispatched by Main.
const (
	ProgManagerd = "siem-managerd"
	ProgControl  = "siem-control"
	// ProgWazuhControl is the real tool's name: like siem-control but without `check`.
	ProgWazuhControl = "wazuh-control"
	// ProgAnalysisd tests the configuration (-t) like the real wazuh-analysisd.
	ProgAnalysisd   = "wazuh-analysisd"
	ProgAgentCtl    = "agent_control"
	ProgManageAgent = "manage_agents"
	ProgClusterCtl  = "cluster_control"
	ProgDashboard   = "siem-dashboard"
)

// Programs lists every emulator program name.
func Programs() []string {
	return []string{ProgManagerd, ProgControl, ProgWazuhControl, ProgAnalysisd, ProgAgentCtl, ProgManageAgent, ProgClusterCtl, ProgDashboard}
}

// ErrSpec reports an invalid PackageSpec.
var ErrSpec = errors.New("invalid package spec")

// PackageFiles returns every file of the component's package.
func PackageFiles(spec PackageSpec) ([]File, error) {
	if !filepath.IsAbs(spec.Root) {
		return nil, fmt.Errorf("%w: root %q is not absolute", ErrSpec, spec.Root)
	}
	parts := strings.Split(spec.Version, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: version %q", ErrSpec, spec.Version)
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("%w: version %q", ErrSpec, spec.Version)
		}
	}
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, fmt.Errorf("%w: read binary: %w", ErrSpec, err)
	}
	p, lay := spec.Ports, spec.Layout.withDefaults()
	root := filepath.Clean(spec.Root)
	abs := func(rel string) string { return filepath.Join(root, rel) }
	faultsEnv := faults.EnvDir + "=" + faults.DirForRoot(root)
	switch spec.Component {
	case "manager":
		home := lay.InstallDir
		if p.API == 0 || p.Agent == 0 || p.Enrollment == 0 || (p.Syslog == 0 && (!lay.Stock || lay.Syslog)) || (lay.Stock && p.Indexer == 0) {
			return nil, fmt.Errorf("%w: manager needs API, Agent, Enrollment, Syslog (when it listens) and Indexer (stock) ports", ErrSpec)
		}
		conf, apiYAML := manager.DefaultOssecConf(p.Agent, p.Enrollment, p.Syslog), manager.DefaultAPIYAML("127.0.0.1", p.API)
		if lay.Stock {
			so := manager.StockOptions{AgentPort: p.Agent, EnrollmentPort: p.Enrollment, IndexerPort: p.Indexer, Root: root}
			if lay.Syslog {
				so.SyslogPort = p.Syslog
			}
			conf, apiYAML = manager.StockOssecConf(so), manager.DefaultAPIYAML("0.0.0.0", p.API)
		}
		exec := abs(home+"/bin/siem-managerd") + " --home " + abs(home)
		if spec.SeedFrom > 1 {
			exec += " --seed-from " + strconv.Itoa(spec.SeedFrom)
		}
		files := []File{
			{Path: home + "/bin/siem-managerd", Mode: 0o755, Data: bin},
			{Path: home + "/bin/" + lay.Control, Mode: 0o777, Link: "siem-managerd"},
			{Path: home + "/bin/" + ProgAnalysisd, Mode: 0o777, Link: "siem-managerd"},
			{Path: home + "/bin/agent_control", Mode: 0o777, Link: "siem-managerd"},
			{Path: home + "/bin/manage_agents", Mode: 0o777, Link: "siem-managerd"},
			{Path: home + "/bin/cluster_control", Mode: 0o777, Link: "siem-managerd"},
			{Path: home + "/VERSION", Mode: 0o644, Data: []byte("v" + spec.Version + "\n")},
			{Path: home + "/REVISION", Mode: 0o644, Data: []byte(strconv.Itoa(manager.DefaultRevision(spec.Version)) + "\n")},
			{Path: home + "/etc/ossec.conf", Mode: 0o640, Data: conf, Conffile: true},
			{Path: home + "/etc/rules/local_rules.xml", Mode: 0o640, Data: []byte(defaultLocalRules), Conffile: true},
			{Path: home + "/etc/decoders/local_decoder.xml", Mode: 0o640, Data: []byte(defaultLocalDecoder), Conffile: true},
			{Path: home + "/api/configuration/api.yaml", Mode: 0o640, Data: apiYAML, Conffile: true},
			{Path: home + "/logs/alerts/.keep", Mode: 0o644, Data: nil},
			{Path: home + "/queue/db/.keep", Mode: 0o644, Data: nil},
			{Path: home + "/queue/sockets/.keep", Mode: 0o644, Data: nil},
			{Path: "usr/lib/systemd/system/" + lay.ManagerUnit, Mode: 0o644, Data: unit(strings.TrimSuffix(lay.ManagerUnit, ".service")+" (Wazuh-like emulator)", faultsEnv,
				exec, abs(home+"/logs/siem-managerd.log"))},
		}
		return files, nil
	case "dashboard":
		if p.Dashboard == 0 || p.Indexer == 0 {
			return nil, fmt.Errorf("%w: dashboard needs Dashboard and Indexer ports", ErrSpec)
		}
		dconf := dashboard.DefaultConfig(abs(lay.DashboardCerts), p.Dashboard, p.Indexer)
		if lay.Stock {
			dconf = dashboard.StockConfig(abs(lay.DashboardCerts), p.Dashboard, p.Indexer)
		}
		name := strings.TrimSuffix(lay.DashboardUnit, ".service")
		logDir := "var/log/" + name
		return []File{
			{Path: lay.DashboardHome + "/bin/siem-dashboard", Mode: 0o755, Data: bin},
			{Path: logDir + "/.keep", Mode: 0o644},
			{Path: lay.DashboardHome + "/VERSION.json", Mode: 0o644, Data: fmt.Appendf(nil, "{\"version\": %q, \"revision\": \"01\"}\n", spec.Version)},
			{Path: lay.DashboardConfig, Mode: 0o640, Data: dconf, Conffile: true},
			{Path: "usr/lib/systemd/system/" + lay.DashboardUnit, Mode: 0o644, Data: unit(name+" (OpenSearch Dashboards-like emulator)", faultsEnv,
				abs(lay.DashboardHome+"/bin/siem-dashboard")+" --config "+abs(lay.DashboardConfig), abs(logDir+"/"+name+".log"))},
		}, nil
	}
	return nil, fmt.Errorf("%w: unknown component %q", ErrSpec, spec.Component)
}

func unit(desc, env, exec, logFile string) []byte {
	return fmt.Appendf(nil, `[Unit]
Description=%s
After=network.target

[Service]
Type=simple
Environment=%s
ExecStart=%s
StandardOutput=append:%s
StandardError=append:%s
TimeoutStopSec=2
Restart=no

[Install]
WantedBy=multi-user.target
`, desc, env, exec, logFile, logFile)
}

// defaultLocalRules and defaultLocalDecoder are the lab manager's own starting files (written for
// the lab, not Wazuh's package files): where a site's rules and decoders go, with one example each.
const defaultLocalRules = `<!-- local_rules.xml of the siemlab manager: a site's own rules go here (ids 100000 and up). -->
<group name="local,syslog,sshd,">
  <!-- siemlab example: an sshd authentication failure from the lab's test address raises level 5. -->
  <rule id="100001" level="5">
    <if_sid>5716</if_sid>
    <srcip>1.1.1.1</srcip>
    <description>siemlab: sshd authentication failure from the test address 1.1.1.1.</description>
    <group>authentication_failed,</group>
  </rule>
</group>
`

const defaultLocalDecoder = `<!-- local_decoder.xml of the siemlab manager: a site's own decoders go here. -->
<!-- siemlab example: events of the program "siemlab-example" are decoded by name only. -->
<decoder name="siemlab-example">
  <program_name>siemlab-example</program_name>
</decoder>
`

// SetAPIUserPassword changes a manager API user's password offline (users file under installDir).
func SetAPIUserPassword(installDir, user, password string) error {
	return manager.SetAPIUserPassword(manager.Home{Dir: installDir}, user, password)
}

// SetDashboardKeystore writes the dashboard's keystore (opensearch.username/opensearch.password,
// as `opensearch-dashboards-keystore add … --stdin` does) into its config directory confDir.
func SetDashboardKeystore(confDir string, settings map[string]string) error {
	return dashboard.WriteKeystore(filepath.Join(confDir, dashboard.KeystoreName), settings)
}

// SetFault switches a fault on or off under ROOT/var/lib/siem-lab-faults.
func SetFault(root, kind string, on bool) error {
	return faults.Set(faults.DirForRoot(root), kind, on)
}

// Main runs the emulator program name (the basename of argv[0]) and returns its exit code.
func Main(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	switch name {
	case ProgManagerd, ProgDashboard:
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
	}
	toolEnv := func() manager.ToolEnv {
		h := manager.ToolHome(exe, os.Getenv("SIEM_HOME"))
		return manager.ToolEnv{Home: h, FaultsDir: h.FaultsDir(os.Getenv(faults.EnvDir)), Stdout: stdout, Stderr: stderr, Name: name}
	}
	switch name {
	case ProgManagerd:
		return manager.DaemonMain(ctx, args, stderr, os.Getenv)
	case ProgControl, ProgWazuhControl:
		return manager.Control(ctx, toolEnv(), args)
	case ProgAnalysisd:
		return manager.Analysisd(ctx, toolEnv(), args)
	case ProgAgentCtl:
		return manager.AgentControl(ctx, toolEnv(), args)
	case ProgManageAgent:
		return manager.ManageAgents(ctx, toolEnv(), args)
	case ProgClusterCtl:
		return manager.ClusterControl(ctx, toolEnv(), args)
	case ProgDashboard:
		return dashboard.Main(ctx, args, exe, stdout, stderr)
	}
	fmt.Fprintf(stderr, "emu: unknown program %q (known: %s)\n", name, strings.Join(Programs(), ", "))
	return 127
}
