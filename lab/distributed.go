package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// A distributed lab (siemlab up --topology distributed) is a Wazuh distributed deployment on this
// one machine: three indexer nodes forming one OpenSearch cluster, a manager master and a worker
// (each with the real Filebeat shipping to all three nodes) and a dashboard. Each simulated host is
// a lab of its own under DIR/hosts/<host> (its dpkg root, its private systemd and cgroups lab-<id>,
// its packages, siemctl.yaml and env), built by the single lab's code for the components it runs;
// DIR/lab.json names the topology and the hosts, DIR/inventory.ini is an Ansible inventory of them.
//
// Addresses and ports: every host listens on its own loopback address (DistHosts: 127.0.0.11-13
// for the indexers, .21-.22 for the managers, .31 for the dashboard), on DistPorts: the single
// lab's port plus 20000 (the manager API 45000), plus the port offset. A single lab binds 127.0.0.1
// or, for the wazuh profile's agent, enrollment, syslog, API and dashboard ports, every address
// (0.0.0.0) on ports 443-6515 and 55000-60000 (offsets 0-5000); no distributed port falls in those
// ranges, so distributed and single labs run side by side at any offsets, and two distributed labs
// whose offsets differ (by a multiple of 100, as single labs do) do too.

// Topologies of siemlab up.
const (
	TopologySingle      = "single"
	TopologyDistributed = "distributed"
)

// Host roles of a distributed lab.
const (
	RoleIndexer   = "indexer"
	RoleManager   = "manager"
	RoleDashboard = "dashboard"
)

// DistHost is one simulated host of a distributed lab.
type DistHost struct {
	Name     string `json:"name"`
	Role     string `json:"role"` // indexer | manager | dashboard
	Address  string `json:"address"`
	NodeType string `json:"node_type,omitempty"` // manager cluster: master | worker
	Dir      string `json:"dir"`
}

// DistHosts are the hosts of a distributed lab in start order (the master before the worker).
var DistHosts = []DistHost{
	{Name: "indexer-1", Role: RoleIndexer, Address: "127.0.0.11"},
	{Name: "indexer-2", Role: RoleIndexer, Address: "127.0.0.12"},
	{Name: "indexer-3", Role: RoleIndexer, Address: "127.0.0.13"},
	{Name: "manager-1", Role: RoleManager, Address: "127.0.0.21", NodeType: "master"},
	{Name: "manager-2", Role: RoleManager, Address: "127.0.0.22", NodeType: "worker"},
	{Name: "dashboard-1", Role: RoleDashboard, Address: "127.0.0.31"},
}

// roleComponents are the components each role runs.
var roleComponents = map[string][]string{
	RoleIndexer:   {"indexer"},
	RoleManager:   {"manager", "shipper"},
	RoleDashboard: {"dashboard"},
}

// DistPorts are a distributed lab's ports (every host uses the ones of its role on its address).
func (p Profile) DistPorts(offset int) Ports {
	return Ports{Indexer: 29200 + offset, Transport: 39300 + offset, API: 45000 + offset, Agent: 21514 + offset,
		Enrollment: 21515 + offset, Syslog: 20514 + offset, Dashboard: p.DashboardPort + 20000 + offset, Cluster: 21516 + offset}
}

// hostPlan is a host's part of the distributed lab while it is built.
type hostPlan struct {
	DistHost
	all         []DistHost
	clusterName string // the manager cluster's <name>
	clusterKey  string // the manager cluster's <key> (32 characters)
}

func (h *hostPlan) byRole(role string) []DistHost {
	var out []DistHost
	for _, x := range h.all {
		if x.Role == role {
			out = append(out, x)
		}
	}
	return out
}

// indexerCluster is this host's node of the indexer cluster (nil in a single lab).
func (l *Lab) indexerCluster() *IndexerCluster {
	if l.cluster == nil {
		return nil
	}
	c := &IndexerCluster{NodeName: l.cluster.Name, Address: l.cluster.Address, NodesDN: l.prof.DN("indexer-*"),
		PathRepo: []string{sharedSnapshotDir(l.st.Dir)}}
	for _, n := range l.cluster.byRole(RoleIndexer) {
		c.SeedHosts = append(c.SeedHosts, net.JoinHostPort(n.Address, fmt.Sprint(l.st.Ports.Transport)))
		c.ManagerNodes = append(c.ManagerNodes, n.Name)
	}
	return c
}

// shipperHosts are Filebeat's output hosts: every indexer node (nil in a single lab).
func (l *Lab) shipperHosts() []string {
	if l.cluster == nil {
		return nil
	}
	var out []string
	for _, u := range l.st.IndexerURLs {
		out = append(out, strings.TrimPrefix(u, "https://"))
	}
	return out
}

var (
	reLocalIP = regexp.MustCompile(`(?m)^[ \t]*<local_ip>[^<]*</local_ip>\n`)
	reRemote  = regexp.MustCompile(`(?m)^([ \t]*)</remote>`)
	reCluster = regexp.MustCompile(`(?s)[ \t]*<cluster>.*?</cluster>\n`)
	reAPIHost = regexp.MustCompile(`(?m)^host: .*$`)
	reIdxHost = regexp.MustCompile(`(?m)^([ \t]*)<host>https://127\.0\.0\.1:[0-9]+</host>\n`)
	reSrvHost = regexp.MustCompile(`(?m)^server\.host: .*$`)
	reOSHosts = regexp.MustCompile(`(?m)^opensearch\.hosts: .*$`)
)

// configureHost edits what the packages installed the way an administrator sets up a host of a
// distributed deployment: the manager's ossec.conf (its remotes on the host's address, the
// <cluster> section, the <indexer> hosts) and api.yaml (host), the dashboard's config (its address,
// every indexer node) and its API config (the master).
func (l *Lab) configureHost() error {
	h := l.cluster
	// The host's own name, as its /etc/hostname: the manager calls itself by it (its agents' manager
	// in the master's list, agent 000, the alerts' manager.name).
	if err := writeFile(filepath.Join(l.st.Root, "etc", "hostname"), []byte(h.Name+"\n"), 0o644); err != nil {
		return err
	}
	if l.runs("manager") {
		conf := filepath.Join(l.managerDir(), "etc/ossec.conf")
		data, err := os.ReadFile(conf)
		if err != nil {
			return fmt.Errorf("read ossec.conf: %w", err)
		}
		s := reLocalIP.ReplaceAllString(string(data), "")
		s = reRemote.ReplaceAllString(s, "$1  <local_ip>"+h.Address+"</local_ip>\n$1</remote>")
		var hosts strings.Builder
		for _, u := range l.st.IndexerURLs {
			hosts.WriteString("${1}<host>" + u + "</host>\n")
		}
		s = reIdxHost.ReplaceAllString(s, hosts.String())
		s = reCluster.ReplaceAllString(s, "")
		i := strings.Index(s, "</ossec_config>")
		if i < 0 {
			return fmt.Errorf("%s has no </ossec_config>", conf)
		}
		s = s[:i] + clusterSection(h, l.st.Ports.Cluster) + s[i:]
		if err := writeFile(conf, []byte(s), 0o640); err != nil {
			return err
		}
		api := filepath.Join(l.managerDir(), "api/configuration/api.yaml")
		data, err = os.ReadFile(api)
		if err != nil {
			return fmt.Errorf("read api.yaml: %w", err)
		}
		if err := writeFile(api, reAPIHost.ReplaceAll(data, []byte("host: "+h.Address)), 0o640); err != nil {
			return err
		}
	}
	if l.runs("dashboard") {
		conf := filepath.Join(l.st.Root, l.prof.DashboardConfig)
		data, err := os.ReadFile(conf)
		if err != nil {
			return fmt.Errorf("read dashboard config: %w", err)
		}
		data = reSrvHost.ReplaceAll(data, []byte("server.host: "+h.Address))
		data = reOSHosts.ReplaceAll(data, []byte("opensearch.hosts: "+yamlList(l.st.IndexerURLs)))
		if err := writeFile(conf, data, 0o640); err != nil {
			return err
		}
		if l.prof.DashboardAPIConfig != "" {
			p := filepath.Join(l.st.Root, l.prof.DashboardAPIConfig)
			data, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("read dashboard API config: %w", err)
			}
			master := h.byRole(RoleManager)[0].Address
			data = []byte(strings.Replace(string(data), "url: https://localhost", "url: https://"+master, 1))
			if err := writeFile(p, data, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterSection is the real <cluster> section of a manager node (Wazuh's ossec.conf reference):
// every node names the master's address in <nodes>.
func clusterSection(h *hostPlan, port int) string {
	master := h.byRole(RoleManager)[0]
	return fmt.Sprintf(`  <cluster>
    <name>%s</name>
    <node_name>%s</node_name>
    <node_type>%s</node_type>
    <key>%s</key>
    <port>%d</port>
    <bind_addr>%s</bind_addr>
    <nodes>
        <node>%s</node>
    </nodes>
    <hidden>no</hidden>
    <disabled>no</disabled>
  </cluster>

`, h.clusterName, h.Name, h.NodeType, h.clusterKey, port, h.Address, master.Address)
}

// Distributed is a running distributed lab.
type Distributed struct {
	core
	hosts  []*Lab
	Timing map[string]time.Duration // per phase, filled by UpDistributed
}

// Hosts are the host labs in start order.
func (d *Distributed) Hosts() []*Lab { return d.hosts }

// Host returns the named host's lab.
func (d *Distributed) Host(name string) (*Lab, error) {
	var names []string
	for _, h := range d.hosts {
		if h.st.Host == name {
			return h, nil
		}
		names = append(names, h.st.Host)
	}
	return nil, fmt.Errorf("no host %q in this lab (hosts: %s)", name, strings.Join(names, ", "))
}

// HostsOf returns the host labs of a role, in start order.
func (d *Distributed) HostsOf(role string) []*Lab {
	var out []*Lab
	for i, h := range d.hosts {
		if d.st.Hosts[i].Role == role {
			out = append(out, h)
		}
	}
	return out
}

// Role is the role of a host lab of a distributed lab ("" for a single lab).
func (l *Lab) Role() string {
	for r, comps := range roleComponents {
		if len(l.st.Components) > 0 && l.st.Components[0] == comps[0] {
			return r
		}
	}
	return ""
}

// Host is the name of a distributed lab's host ("" for a single lab).
func (l *Lab) Host() string { return l.st.Host }

// Address is the address the lab's components listen on.
func (l *Lab) Address() string { return l.addr() }

// EnvFile is DIR/env (a host's DIR/hosts/<host>/env).
func (l *Lab) EnvFile() string { return filepath.Join(l.st.Dir, "env") }

// IsDistributed tells whether DIR/lab.json is a distributed lab's.
func IsDistributed(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	st, err := readState(abs)
	return err == nil && st.Topology == TopologyDistributed
}

// OpenDistributed returns the distributed lab recorded in dir/lab.json.
func OpenDistributed(dir string, logger *slog.Logger, emus Emulators) (*Distributed, error) {
	st, prof, logger, err := openState(dir, logger)
	if err != nil {
		return nil, err
	}
	if st.Topology != TopologyDistributed {
		return nil, fmt.Errorf("%s is a single lab, not a distributed one", dir)
	}
	d := &Distributed{core: core{st: st, prof: prof, log: logger, prog: io.Discard, emu: emus, poll: 250 * time.Millisecond, tmo: 180 * time.Second}}
	for _, h := range st.Hosts {
		hl, err := OpenWith(h.Dir, logger, emus)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		d.hosts = append(d.hosts, hl)
	}
	return d, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// UpDistributed builds and starts a distributed lab in opts.Dir and waits until the indexer
// cluster is green with every node, each manager answers and ships, and the dashboard answers.
// On failure it stops whatever it started (the files stay for inspection).
func UpDistributed(ctx context.Context, opts Options) (_ *Distributed, err error) {
	dir, prof, err := normalizeOptions(&opts)
	if err != nil {
		return nil, err
	}
	if opts.Emulators == nil {
		return nil, errors.New("lab: a distributed lab needs the emulators (the managers and the dashboard)")
	}
	if st, err := readState(dir); err == nil {
		if running(st) {
			return nil, fmt.Errorf("%s: %w (siemlab down --dir %s)", dir, ErrAlreadyUp, dir)
		}
	}
	for _, h := range DistHosts {
		if st, err := readState(filepath.Join(dir, "hosts", h.Name)); err == nil && running(st) {
			return nil, fmt.Errorf("%s: %w (siemlab down --dir %s)", dir, ErrAlreadyUp, dir)
		}
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	ports := prof.DistPorts(opts.PortOffset)
	d := &Distributed{
		core: core{st: &State{ID: LabID(dir), Profile: prof.Name, Syslog: true, Dir: dir, Ports: ports, PortOffset: opts.PortOffset, Version: opts.Version,
			Versions: map[string]string{}, Emulators: true, Faults: []string{}, StartedAt: opts.Now().UTC(), Topology: TopologyDistributed},
			prof: prof, log: opts.Logger, prog: opts.Progress, emu: opts.Emulators, poll: opts.Poll, tmo: opts.StartTimeout},
		Timing: map[string]time.Duration{},
	}
	clusterKey, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	passwords := map[string]string{}
	for _, n := range []string{secretIndexer, secretManager, secretManagerWUI, secretKibanaserver} {
		if passwords[n], err = GeneratePassword(); err != nil {
			return nil, err
		}
	}
	var indexerURLs []string
	for _, h := range DistHosts {
		if h.Role == RoleIndexer {
			indexerURLs = append(indexerURLs, fmt.Sprintf("https://%s:%d", h.Address, ports.Indexer))
		}
	}
	all := make([]DistHost, len(DistHosts))
	for i, h := range DistHosts {
		h.Dir = filepath.Join(dir, "hosts", h.Name)
		all[i] = h
	}
	d.st.Hosts = all
	for _, h := range all {
		hp := Ports{Indexer: ports.Indexer}
		switch h.Role {
		case RoleIndexer:
			hp.Transport = ports.Transport
		case RoleManager:
			hp.API, hp.Agent, hp.Enrollment, hp.Syslog, hp.Cluster = ports.API, ports.Agent, ports.Enrollment, ports.Syslog, ports.Cluster
		case RoleDashboard:
			hp.Dashboard = ports.Dashboard
		}
		urls := indexerURLs
		if h.Role == RoleIndexer { // its own node first
			own := fmt.Sprintf("https://%s:%d", h.Address, ports.Indexer)
			urls = append([]string{own}, without(indexerURLs, own)...)
		}
		hl := &Lab{
			core: core{st: &State{ID: LabID(h.Dir), Profile: prof.Name, Syslog: true, Dir: h.Dir, Root: filepath.Join(h.Dir, "root"), Ports: hp,
				PortOffset: opts.PortOffset, Version: opts.Version, Versions: map[string]string{}, Emulators: true, Faults: []string{},
				StartedAt: d.st.StartedAt, Host: h.Name, Address: h.Address, Components: roleComponents[h.Role], IndexerURLs: urls},
				prof: prof, log: opts.Logger.With("host", h.Name), prog: io.Discard, emu: opts.Emulators, poll: opts.Poll, tmo: opts.StartTimeout},
			Timing: map[string]time.Duration{}, passwords: passwords,
			cluster: &hostPlan{DistHost: h, all: all, clusterName: prof.Manager + "-cluster", clusterKey: clusterKey},
		}
		if h.Role == RoleIndexer {
			// A node waits for the others: three JVMs start and form the cluster on shared cores.
			hl.tmo = 2 * opts.StartTimeout
		}
		for _, u := range prof.Units() {
			if hl.runs(unitComponent(prof, u)) {
				hl.st.Units = append(hl.st.Units, u)
			}
		}
		for _, c := range defaultCgroupHierarchies {
			hl.st.Cgroups = append(hl.st.Cgroups, filepath.Join(c, "lab-"+hl.st.ID))
		}
		d.hosts = append(d.hosts, hl)
	}
	began := time.Now()
	fmt.Fprintf(d.prog, "siemlab up: %s (distributed: %d hosts, profile %s, version %s, port offset %d)\n", dir, len(all), prof.Name, opts.Version, opts.PortOffset)
	started := false
	defer func() {
		if err != nil && started {
			fmt.Fprintf(d.prog, "up failed, stopping the lab (files stay in %s)\n", dir)
			_ = d.Down(context.WithoutCancel(ctx))
		}
	}()
	each := func(role string, f func(*Lab, context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			for _, h := range d.hosts {
				if role != "" && h.Role() != role {
					continue
				}
				if err := f(h, ctx); err != nil {
					return fmt.Errorf("host %s: %w", h.st.Host, err)
				}
			}
			return nil
		}
	}
	// parallel runs f on every host at once (each host writes only under its own directory).
	parallel := func(f func(*Lab, context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			errs := make([]error, len(d.hosts))
			var wg sync.WaitGroup
			for i, h := range d.hosts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := f(h, ctx); err != nil {
						errs[i] = fmt.Errorf("host %s: %w", h.st.Host, err)
					}
				}()
			}
			wg.Wait()
			return errors.Join(errs...)
		}
	}
	phases := []phase{
		{"caches", each("", func(h *Lab, ctx context.Context) error {
			if err := h.prepareOpenSearch(ctx, opts); err != nil {
				return err
			}
			return h.prepareFilebeat(ctx, opts)
		})},
		{"certs", d.writeCerts},
		{"packages", parallel(func(h *Lab, ctx context.Context) error { return h.buildPackages(ctx, opts) })},
		{"install", parallel((*Lab).install)},
		{"configure", func(ctx context.Context) error {
			if err := each("", (*Lab).configure)(ctx); err != nil {
				return err
			}
			if err := d.writeInventory(); err != nil {
				return err
			}
			return writeState(d.st)
		}},
		{"systemd", func(ctx context.Context) error { started = true; return each("", (*Lab).startSystemd)(ctx) }},
		{"indexer", d.startIndexers},
		{"manager", each(RoleManager, (*Lab).startManager)},
		{"dashboard", each(RoleDashboard, (*Lab).startDashboard)},
		{"shipper", each(RoleManager, (*Lab).startShipper)},
		{"first-alert", func(ctx context.Context) error { return d.HostsOf(RoleManager)[0].waitFirstAlert(ctx) }},
		// The first alert creates the day's index with the real template's replica
		// (auto_expand_replicas 0-1): the site is ready once that replica is allocated.
		{"green", d.waitGreen},
	}
	if err := runPhases(ctx, phases, d.Timing, d.prog); err != nil {
		return nil, err
	}
	d.Timing["total"] = time.Since(began)
	for _, h := range d.hosts {
		for k, v := range h.st.Versions {
			d.st.Versions[h.st.Host+"/"+k] = v
		}
	}
	if err := writeState(d.st); err != nil {
		return nil, err
	}
	fmt.Fprintf(d.prog, "lab up in %.1fs; memory (RSS in the hosts' cgroups) %d MiB\n", d.Timing["total"].Seconds(), d.MemoryRSS()>>20)
	fmt.Fprintf(d.prog, "  . %s/hosts/<host>/env   # one per host; Ansible inventory: %s/inventory.ini\n", dir, dir)
	return d, nil
}

func without(list []string, x string) []string {
	var out []string
	for _, s := range list {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

// unitComponent is the component of one of the profile's units.
func unitComponent(p Profile, unit string) string {
	for i, u := range p.Units() {
		if u == unit {
			return packageComponents[i]
		}
	}
	return ""
}

// running tells whether a lab state's systemd still runs in its cgroups.
func running(st *State) bool {
	probe := &Systemd{Dir: st.Dir, ID: st.ID}
	return st.SystemdPID > 0 && probe.pidInLab(st.SystemdPID)
}

// writeCerts makes one PKI (one CA, one admin certificate) and gives each host its own leaves.
func (d *Distributed) writeCerts(context.Context) error {
	pki, err := GenerateCerts(CertOptions{Profile: d.prof})
	if err != nil {
		return err
	}
	for _, h := range d.hosts {
		hc, err := pki.HostCerts(d.prof, h.Role(), h.st.Host, net.ParseIP(h.st.Address), CertOptions{})
		if err != nil {
			return err
		}
		if err := hc.WriteDir(filepath.Join(h.st.Dir, "certs")); err != nil {
			return err
		}
	}
	return (&Certs{CA: pki.CA, Admin: pki.Admin}).WriteDir(filepath.Join(d.st.Dir, "certs"))
}

// startIndexers starts every node's unit, initialises security once (through the first node, when
// the cluster has formed) and waits until the cluster is green with every node.
func (d *Distributed) startIndexers(ctx context.Context) error {
	nodes := d.HostsOf(RoleIndexer)
	for _, n := range nodes {
		if err := n.startUnit(ctx, n.prof.IndexerUnit()); err != nil {
			return fmt.Errorf("host %s: %w", n.st.Host, err)
		}
	}
	if err := nodes[0].waitIndexerSecure(ctx); err != nil {
		return fmt.Errorf("host %s: %w", nodes[0].st.Host, err)
	}
	return d.waitGreen(ctx)
}

// waitGreen waits until the indexer cluster is green with every node, up to twice the start
// timeout (a node that starts again is a JVM starting on shared cores, then shard recovery).
func (d *Distributed) waitGreen(ctx context.Context) error {
	want := len(d.HostsOf(RoleIndexer))
	ctx, cancel := context.WithTimeout(ctx, 2*d.tmo)
	defer cancel()
	var last string
	err := poll(ctx, d.poll, func() (bool, error) {
		c, err := d.indexer(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		h, err := c.health(ctx, fmt.Sprintf("?wait_for_nodes=%d&wait_for_status=green&timeout=10s", want))
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%s with %d nodes", h.Status, h.NumberOfNodes)
		return h.Status == "green" && h.NumberOfNodes == want, nil
	})
	if err != nil {
		return fmt.Errorf("indexer cluster not green with %d nodes (last: %s): %w", want, last, err)
	}
	return nil
}

// indexer returns a client of the first indexer node that answers.
func (d *Distributed) indexer(ctx context.Context) (*indexerClient, error) {
	var errs []error
	for _, n := range d.HostsOf(RoleIndexer) {
		c, err := n.indexer()
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		code, _, err := c.do(cctx, http.MethodGet, "/_cluster/health?local=true", nil)
		cancel()
		if err == nil && code == http.StatusOK {
			return c, nil
		}
		if err == nil {
			err = fmt.Errorf("HTTP %d", code)
		}
		errs = append(errs, fmt.Errorf("%s: %w", n.st.Host, err))
	}
	return nil, fmt.Errorf("no indexer node answers: %w", errors.Join(errs...))
}

// MemoryRSS is the sum of VmRSS of every process in the hosts' cgroups, in bytes.
func (d *Distributed) MemoryRSS() int64 {
	var sum int64
	for _, h := range d.hosts {
		sum += h.MemoryRSS()
	}
	return sum
}

// Down stops every host (processes, cgroups) and removes DIR/lab.json; files stay. Idempotent.
func (d *Distributed) Down(ctx context.Context) error {
	var errs []error
	for i := len(d.hosts) - 1; i >= 0; i-- {
		if err := d.hosts[i].Down(ctx); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", d.hosts[i].st.Host, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(d.st.Dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("down: %w", err)
	}
	return nil
}

// downHostDirs sweeps the cgroups of every DIR/hosts/<host> (a distributed lab whose lab.json is
// gone or was never written).
func downHostDirs(ctx context.Context, dir string) error {
	entries, err := os.ReadDir(filepath.Join(dir, "hosts"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("down: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		hd := filepath.Join(dir, "hosts", e.Name())
		if l, err := Open(hd); err == nil {
			errs = append(errs, l.Down(ctx))
			continue
		}
		errs = append(errs, (&Systemd{Dir: hd, ID: LabID(hd)}).Stop(ctx))
	}
	return errors.Join(errs...)
}

// writeInventory writes DIR/inventory.ini: the hosts in groups indexer, manager (master first) and
// dashboard, each with what a playbook needs to act there (its environment file, siemctl config,
// dpkg root, address) as host variables.
func (d *Distributed) writeInventory() error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Ansible inventory of the distributed siemlab lab in %s (written by siemlab up).\n", d.st.Dir)
	b.WriteString("# Every host is local: a task acts on a host by sourcing its env (siemlab_env) or with\n")
	b.WriteString("# SIEMCTL_CONFIG=siemctl_config, APT_CONFIG and DPKG_ROOT (dpkg_root) in its environment.\n")
	for _, role := range []string{RoleIndexer, RoleManager, RoleDashboard} {
		fmt.Fprintf(&b, "\n[%s]\n", role)
		for _, h := range d.HostsOf(role) {
			a := h.apt()
			fmt.Fprintf(&b, "%s ansible_connection=local siemlab_env=%s siemctl_config=%s dpkg_root=%s apt_config=%s address=%s",
				h.st.Host, h.EnvFile(), h.ConfigPath(), h.st.Root, a.ConfigPath(), h.st.Address)
			for _, hh := range d.st.Hosts {
				if hh.Name == h.st.Host && hh.NodeType != "" {
					fmt.Fprintf(&b, " node_type=%s", hh.NodeType)
				}
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\n[all:vars]\nsiemlab_dir=%s\nsiemlab_profile=%s\nport_offset=%d\n", d.st.Dir, d.prof.Name, d.st.PortOffset)
	return writeFile(filepath.Join(d.st.Dir, "inventory.ini"), []byte(b.String()), 0o644)
}

// managerSeedAgents is how many agents a manager emulator seeds (siem-managerd --seed-agents; a test
// holds it to the emulator's default).
const managerSeedAgents = 5

// seedFrom is the id of the first agent this host's manager seeds (0: the emulator's default, 1).
// The manager nodes of a distributed lab seed disjoint agents, as agents enrolled once in a cluster
// are: the master 001-005, the worker 006-010; each reports to its node, and the worker's reach the
// master's database by the agent-info sync, so the master holds every agent as its global.db does.
func (l *Lab) seedFrom() int {
	if l.cluster == nil {
		return 0
	}
	for i, h := range l.cluster.byRole(RoleManager) {
		if h.Name == l.cluster.Name {
			return 1 + i*managerSeedAgents
		}
	}
	return 0
}
