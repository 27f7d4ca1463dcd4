package manager

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// The emulator's wazuh-clusterd. The real daemon (framework/wazuh/core/cluster at v4.9.0) runs a master
// that serves workers on the cluster port (1516) and a worker that connects to the master named in
// <nodes>: the worker says hello with its name, cluster name, type and version, the master refuses a
// worker of another cluster (3030) or another version (3031), the worker sends a keepalive every 60 s and
// synchronises integrity (every 9 s) and agent-info (every 10 s), and the master drops a worker whose
// last keepalive is older than 120 s. The wire format here is the emulator's own (JSON lines over TCP);
// the behaviour, the API answers built from it and the cluster.log lines follow the real daemons.

// ClusterConfig is ossec.conf's <cluster> section.
type ClusterConfig struct {
	Name     string
	NodeName string
	NodeType string // master | worker
	Key      string
	Port     int
	BindAddr string
	Nodes    []string // the master's address
	Hidden   bool
	Disabled bool
}

// ParseClusterConfig reads the <cluster> section of ossec.conf with the daemons' defaults.
func ParseClusterConfig(data []byte) (ClusterConfig, error) {
	c := ClusterConfig{Name: "wazuh", NodeName: "node01", NodeType: "master", Port: 1516, BindAddr: "0.0.0.0", Disabled: true}
	roots, cerr := parseXML(data)
	if cerr != nil {
		return c, cerr
	}
	for _, root := range roots {
		for _, sec := range root.children {
			if sec.name != "cluster" {
				continue
			}
			for _, ch := range sec.children {
				v := strings.TrimSpace(ch.text)
				var err *ConfigError
				switch ch.name {
				case "name":
					c.Name = v
				case "node_name":
					c.NodeName = v
				case "node_type":
					if v != "master" && v != "worker" {
						err = invalidValue(ch.name, v)
					}
					c.NodeType = v
				case "key":
					c.Key = v
				case "port":
					c.Port, err = intVal(ch, 1, 65535)
				case "bind_addr":
					c.BindAddr = v
				case "nodes":
					c.Nodes = nil
					for _, n := range ch.children {
						if n.name == "node" {
							c.Nodes = append(c.Nodes, strings.TrimSpace(n.text))
						}
					}
				case "hidden":
					c.Hidden, err = yesno(ch)
				case "disabled":
					c.Disabled, err = yesno(ch)
				}
				if err != nil {
					return c, err
				}
			}
		}
	}
	if !c.Disabled && c.NodeType == "worker" && len(c.Nodes) == 0 {
		return c, confErr("(3004): Error in cluster configuration: No master node configured in <nodes>.")
	}
	return c, nil
}

// cluster.json intervals of v4.9.0 (framework/wazuh/core/cluster/cluster.json).
const (
	clusterKeepAlive      = 60 * time.Second
	clusterRetry          = 10 * time.Second
	clusterSyncIntegrity  = 9 * time.Second
	clusterSyncAgentInfo  = 10 * time.Second
	clusterCheckKeepAlive = 60 * time.Second
	clusterMaxNoKeepAlive = 120 * time.Second
)

// decimalsDate is common.DECIMALS_DATE_FORMAT ("%Y-%m-%dT%H:%M:%S.%fZ").
const decimalsDate = "2006-01-02T15:04:05.000000Z"

// notAvailable is master.py's DEFAULT_DATE.
const notAvailable = "n/a"

// ClusterNodeInfo is a node's `info` in the healthcheck (and, without n_active_agents, in /cluster/nodes).
type ClusterNodeInfo struct {
	Name          string `json:"name"`
	Type          string `json:"type"`
	Version       string `json:"version"`
	IP            string `json:"ip"`
	NActiveAgents int    `json:"n_active_agents"`
}

// WorkerStatus is a worker's `status` in the healthcheck (master.py WorkerHandler.to_dict).
type WorkerStatus struct {
	SyncIntegrityFree     bool           `json:"sync_integrity_free"`
	LastCheckIntegrity    map[string]any `json:"last_check_integrity"`
	LastSyncIntegrity     map[string]any `json:"last_sync_integrity"`
	SyncAgentInfoFree     bool           `json:"sync_agent_info_free"`
	LastSyncAgentInfo     map[string]any `json:"last_sync_agentinfo"`
	LastSyncAgentGroup    map[string]any `json:"last_sync_agentgroup"`
	LastSyncFullAgentGrp  map[string]any `json:"last_sync_full_agentgroup"`
	LastKeepAlive         string         `json:"last_keep_alive"`
	lastKeepAlive         time.Time
	rulesetHash           string
	integrityStart, agent time.Time
}

// ClusterNode is one node of the healthcheck; Status is nil for the master.
type ClusterNode struct {
	Info   ClusterNodeInfo `json:"info"`
	Status *WorkerStatus   `json:"status,omitempty"`
	// Synced says the node's ruleset matches the master's (GET /cluster/ruleset/synchronization).
	Synced bool `json:"synced"`
}

// ErrClusterDisconnected is a worker's state while it cannot reach the master (API error 3023).
var ErrClusterDisconnected = errors.New("worker not connected to the master")

// ClusterOptions configures the cluster daemon.
type ClusterOptions struct {
	Home    Home
	Conf    ClusterConfig
	Version string // "4.9.0"
	Now     func() time.Time
	// ActiveAgents counts, on the master, the active agents (not 000) of its database that report to
	// a node (get_health's count by node_name); nil counts Home's database as stored.
	ActiveAgents func(node string) int
	// SyncAgents writes, on the master, a worker's agent-info rows into its database with that worker
	// as their node; nil writes Home's database (AgentStore.SyncNodeAgents).
	SyncAgents func(node string, agents []*Agent) error
	Faults     faults.Checker
	// Intervals; zero uses cluster.json's.
	KeepAlive, Retry, SyncIntegrity, SyncAgentInfo, CheckKeepAlive, MaxNoKeepAlive time.Duration
	// Listen overrides the master's listen address (tests: "127.0.0.1:0").
	Listen string
	// MasterAddr overrides the worker's master address (tests).
	MasterAddr string
	// AgentInfo is a worker's agent-info rows (its agents as it sees them), synced to the master.
	AgentInfo func() []*Agent
	// DAPI answers, on a worker, a request the master forwards to it (clusterdapi.go).
	DAPI func(fwd dapiFwd) dapiReply
}

// ClusterDaemon is a running wazuh-clusterd.
type ClusterDaemon struct {
	o    ClusterOptions
	log  *clusterLog
	ln   net.Listener
	sock net.Listener

	mu      sync.Mutex
	workers map[string]*workerConn // master: connected workers by name
	order   []string               // master: connection order
	remote  map[string]*remoteNode // master: the workers that synced their agents, and when each left
	// worker side
	conn      net.Conn
	rd        *bufio.Reader
	connected bool
	reqMu     sync.Mutex
	// worker side: where the master is, for the DAPI channel
	masterAddr string
	dialer     *net.Dialer
	wg         sync.WaitGroup
	cancel     context.CancelFunc
}

type workerConn struct {
	conn   net.Conn
	info   ClusterNodeInfo
	status WorkerStatus
	dapi   *dapiChan     // the worker's channel for the requests the master forwards (nil until it opens)
	closed chan struct{} // closed when the worker's session ends
}

type clusterMsg struct {
	Cmd         string            `json:"cmd,omitempty"`
	Name        string            `json:"name,omitempty"`
	Cluster     string            `json:"cluster,omitempty"`
	Type        string            `json:"type,omitempty"`
	Version     string            `json:"version,omitempty"`
	RulesetHash string            `json:"ruleset_hash,omitempty"`
	Filter      []string          `json:"filter,omitempty"`
	OK          string            `json:"ok,omitempty"`
	Err         *wazuhError       `json:"err,omitempty"`
	Nodes       []ClusterNode     `json:"nodes,omitempty"`
	Files       map[string]string `json:"files,omitempty"`
	Agents      []*Agent          `json:"agents,omitempty"` // sync_a_w_m: the worker's agent-info rows
	Fwd         *dapiFwd          `json:"fwd,omitempty"`    // dapi: a request the master forwards
	FwdReply    *dapiReply        `json:"fwd_reply,omitempty"`
}

// clusterLog writes logs/cluster.log as wazuh-clusterd does ("%(asctime)s %(levelname)s: [%(tag)s]
// [%(subtag)s] %(message)s", asctime as "%Y/%m/%d %H:%M:%S").
type clusterLog struct {
	mu   sync.Mutex
	path string
	now  func() time.Time
}

func (l *clusterLog) write(level, tag, subtag, msg string) {
	line := fmt.Sprintf("%s %s: [%s] [%s] %s\n", l.now().Format("2006/01/02 15:04:05"), level, tag, subtag, msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.path), 0o750); err != nil {
		return
	}
	if f, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o660); err == nil {
		_, _ = f.WriteString(line)
		_ = f.Close()
	}
}

// ClusterLog is logs/cluster.log.
func (h Home) ClusterLog() string { return h.Path("logs", "cluster.log") }

// ClusterSocket is the local server's socket (queue/cluster/c-internal.sock), which cluster_control asks.
func (h Home) ClusterSocket() string { return h.Path("queue", "cluster", "c-internal.sock") }

// StartCluster starts the daemon (master: listening; worker: connecting, retrying) until ctx ends or
// Close. It fails only when the master cannot bind its port.
func StartCluster(ctx context.Context, o ClusterOptions) (*ClusterDaemon, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ActiveAgents == nil {
		o.ActiveAgents = storedActiveAgents(o.Home, o.Conf.NodeName)
	}
	if o.SyncAgents == nil {
		o.SyncAgents = NewAgentStore(o.Home).SyncNodeAgents
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.KeepAlive, clusterKeepAlive)
	def(&o.Retry, clusterRetry)
	def(&o.SyncIntegrity, clusterSyncIntegrity)
	def(&o.SyncAgentInfo, clusterSyncAgentInfo)
	def(&o.CheckKeepAlive, clusterCheckKeepAlive)
	def(&o.MaxNoKeepAlive, clusterMaxNoKeepAlive)
	d := &ClusterDaemon{o: o, log: &clusterLog{path: o.Home.ClusterLog(), now: o.Now}, workers: map[string]*workerConn{},
		remote: map[string]*remoteNode{}}
	ctx, d.cancel = context.WithCancel(ctx)
	if o.Conf.NodeType == "master" {
		addr := o.Listen
		if addr == "" {
			addr = net.JoinHostPort(o.Conf.BindAddr, strconv.Itoa(o.Conf.Port))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			d.log.write("ERROR", "Master", "Main", fmt.Sprintf("Could not start master: %v", err))
			d.cancel()
			return nil, err
		}
		d.ln = ln
		tcp := ln.Addr().(*net.TCPAddr)
		d.log.write("INFO", "Master", "Main", fmt.Sprintf("Serving on ('%s', %d)", tcp.IP, tcp.Port))
		d.wg.Add(2)
		go func() { defer d.wg.Done(); d.serve(ctx) }()
		go func() { defer d.wg.Done(); d.checkKeepAlives(ctx) }()
	} else {
		d.wg.Add(1)
		go func() { defer d.wg.Done(); d.runWorker(ctx) }()
	}
	if err := d.listenLocal(ctx); err != nil {
		d.log.write("ERROR", "Local Server", "Main", err.Error())
	}
	go func() { <-ctx.Done(); d.closeAll() }()
	return d, nil
}

// Addr is the master's bound cluster address ("" on a worker).
func (d *ClusterDaemon) Addr() string {
	if d.ln == nil {
		return ""
	}
	return d.ln.Addr().String()
}

// Config is the node's <cluster> section.
func (d *ClusterDaemon) Config() ClusterConfig { return d.o.Conf }

// Close stops the daemon and waits for its goroutines.
func (d *ClusterDaemon) Close() {
	d.cancel()
	d.closeAll()
	d.wg.Wait()
}

func (d *ClusterDaemon) closeAll() {
	if d.ln != nil {
		_ = d.ln.Close()
	}
	if d.sock != nil {
		_ = d.sock.Close()
		_ = os.Remove(d.o.Home.ClusterSocket())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.workers {
		_ = w.conn.Close()
	}
	if d.conn != nil {
		_ = d.conn.Close()
	}
}

func sleepCtx(ctx context.Context, dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func writeMsg(c net.Conn, m clusterMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second)) // timeout_cluster_request
	_, err = c.Write(append(b, '\n'))
	return err
}

func readMsg(r *bufio.Reader) (clusterMsg, error) {
	var m clusterMsg
	line, err := r.ReadBytes('\n')
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(line, &m)
}

// rulesetHash digests etc/rules and etc/decoders (what the integrity sync keeps equal on every node).
func rulesetHash(h Home) (string, map[string]string) {
	files := map[string]string{}
	for _, dir := range []string{"etc/rules", "etc/decoders"} {
		entries, _ := os.ReadDir(h.Path(dir))
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".xml") {
				if b, err := os.ReadFile(h.Path(dir, e.Name())); err == nil {
					files[dir+"/"+e.Name()] = string(b)
				}
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	sum := sha256.New()
	for _, n := range names {
		fmt.Fprintf(sum, "%s\x00%s\x00", n, files[n])
	}
	return hex.EncodeToString(sum.Sum(nil)), files
}

// ---- master ----

func (d *ClusterDaemon) serve(ctx context.Context) {
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		d.wg.Add(1)
		go func() { defer d.wg.Done(); d.handleWorker(ctx, c) }()
	}
}

func (d *ClusterDaemon) handleWorker(ctx context.Context, c net.Conn) {
	defer c.Close()
	tag := "Worker " + randomHex(4)
	peer, port, _ := net.SplitHostPort(c.RemoteAddr().String())
	d.log.write("INFO", tag, "Main", fmt.Sprintf("Connection from ('%s', %s)", peer, port))
	rd := bufio.NewReader(c)
	hello, err := readMsg(rd)
	if err == nil && hello.Cmd == "dapi" {
		d.attachDAPI(ctx, hello.Name, c, rd)
		return
	}
	if err != nil || hello.Cmd != "hello" {
		d.log.write("ERROR", tag, "Main", "Error during handshake with incoming connection.")
		return
	}
	name := hello.Name
	refuse := func(code int, extra string) {
		e := werr(code, extra)
		d.log.write("ERROR", tag, "Main", fmt.Sprintf("Internal error processing request 'b'hello'': Error %d - %s", code, e.Message))
		_ = writeMsg(c, clusterMsg{Err: &e})
	}
	d.mu.Lock()
	_, dup := d.workers[name]
	d.mu.Unlock()
	switch {
	case dup:
		refuse(3028, name)
		return
	case name == d.o.Conf.NodeName:
		refuse(3029, "")
		return
	}
	tag += " " + name
	switch {
	case hello.Cluster != d.o.Conf.Name:
		refuse(3030, "")
		return
	case hello.Version != d.o.Version:
		refuse(3031, "")
		return
	}
	w := &workerConn{conn: c, closed: make(chan struct{}), info: ClusterNodeInfo{Name: name, Type: hello.Type, Version: hello.Version, IP: peer},
		status: WorkerStatus{SyncIntegrityFree: true, SyncAgentInfoFree: true, lastKeepAlive: d.o.Now(),
			LastCheckIntegrity: map[string]any{"date_start_master": notAvailable, "date_end_master": notAvailable},
			LastSyncIntegrity: map[string]any{"date_start_master": notAvailable, "date_end_master": notAvailable, "total_extra_valid": 0,
				"total_files": map[string]int{"missing": 0, "shared": 0, "extra": 0, "extra_valid": 0}},
			LastSyncAgentInfo:    map[string]any{"date_start_master": notAvailable, "date_end_master": notAvailable, "n_synced_chunks": 0},
			LastSyncAgentGroup:   map[string]any{"date_start": notAvailable, "date_end": notAvailable, "n_synced_chunks": 0},
			LastSyncFullAgentGrp: map[string]any{"date_start": notAvailable, "date_end": notAvailable, "n_synced_chunks": 0}}}
	d.mu.Lock()
	d.workers[name] = w
	d.order = append(d.order, name)
	d.joined(name)
	d.mu.Unlock()
	defer func() {
		close(w.closed)
		d.mu.Lock()
		if d.workers[name] == w {
			d.left(name)
			delete(d.workers, name)
			for i, n := range d.order {
				if n == name {
					d.order = append(d.order[:i:i], d.order[i+1:]...)
					break
				}
			}
		}
		d.mu.Unlock()
	}()
	if err := writeMsg(c, clusterMsg{OK: "Client " + name + " added"}); err != nil {
		return
	}
	for ctx.Err() == nil {
		m, err := readMsg(rd)
		if err != nil {
			return // server.py logs "Disconnected <name>." at debug level only
		}
		reply := d.masterRequest(tag, w, m)
		if err := writeMsg(c, reply); err != nil {
			return
		}
	}
}

// masterRequest answers one worker request.
func (d *ClusterDaemon) masterRequest(tag string, w *workerConn, m clusterMsg) clusterMsg {
	now := d.o.Now().UTC()
	d.mu.Lock()
	defer d.mu.Unlock()
	switch m.Cmd {
	case "echo-c":
		w.status.lastKeepAlive = now
		return clusterMsg{OK: "keepalive"}
	case "sync_i_w_m":
		start := now.Format(decimalsDate)
		w.status.LastCheckIntegrity = map[string]any{"date_start_master": start, "date_end_master": d.o.Now().UTC().Format(decimalsDate)}
		w.status.rulesetHash = m.RulesetHash
		hash, files := rulesetHash(d.o.Home)
		if m.RulesetHash == hash {
			d.log.write("INFO", tag, "Integrity check", "Finished in 0.001s. Sync not required.")
			return clusterMsg{OK: "synced", RulesetHash: hash}
		}
		w.status.LastSyncIntegrity = map[string]any{"date_start_master": start, "date_end_master": d.o.Now().UTC().Format(decimalsDate),
			"total_extra_valid": 0, "total_files": map[string]int{"missing": 0, "shared": len(files), "extra": 0, "extra_valid": 0}}
		d.log.write("INFO", tag, "Integrity check", fmt.Sprintf("Finished in 0.001s. Received metadata of %d files. Sync required.", len(files)))
		return clusterMsg{OK: "sync", RulesetHash: hash, Files: files}
	case "sync_a_w_m":
		if err := d.synced(w.info.Name, m.Agents); err != nil {
			d.log.write("ERROR", tag, "Agent-info sync", fmt.Sprintf("Error updating agent-info: %v", err))
			e := werr(1000, err.Error())
			return clusterMsg{Err: &e}
		}
		w.status.LastSyncAgentInfo = map[string]any{"date_start_master": now.Format(decimalsDate),
			"date_end_master": d.o.Now().UTC().Format(decimalsDate), "n_synced_chunks": 1}
		d.log.write("INFO", tag, "Agent-info sync", "Finished in 0.001s. Updated 1 chunks.")
		return clusterMsg{OK: "ok"}
	case "get_health":
		return clusterMsg{OK: "ok", Nodes: d.healthLocked(m.Filter)}
	}
	e := werr(1000, "unknown command '"+m.Cmd+"'")
	return clusterMsg{Err: &e}
}

func (d *ClusterDaemon) checkKeepAlives(ctx context.Context) {
	for sleepCtx(ctx, d.o.CheckKeepAlive) {
		now := d.o.Now()
		d.mu.Lock()
		for name, w := range d.workers {
			if now.Sub(w.status.lastKeepAlive) > d.o.MaxNoKeepAlive {
				d.log.write("ERROR", "Master", "Keep alive", fmt.Sprintf("No keep alives have been received from %s in the last minute. Disconnecting", name))
				_ = w.conn.Close()
			}
		}
		d.mu.Unlock()
	}
}

// healthLocked is master.py get_health: the connected workers, then the master, each with the active
// agents (not 000) the master's database says report to it (get_agents_overview status=active by
// node_name, q=id!=000): a worker's are those its agent-info sync wrote there; d.mu is held.
func (d *ClusterDaemon) healthLocked(filter []string) []ClusterNode {
	want := func(n string) bool { return len(filter) == 0 || slices.Contains(filter, n) }
	hash, _ := rulesetHash(d.o.Home)
	var out []ClusterNode
	if want(d.o.Conf.NodeName) {
		ip := ""
		if len(d.o.Conf.Nodes) > 0 {
			ip = d.o.Conf.Nodes[0]
		}
		out = append(out, ClusterNode{Info: ClusterNodeInfo{Name: d.o.Conf.NodeName, Type: "master", Version: d.o.Version, IP: ip,
			NActiveAgents: d.o.ActiveAgents(d.o.Conf.NodeName)}, Synced: true})
	}
	for _, name := range d.order {
		w := d.workers[name]
		if w == nil || !want(name) {
			continue
		}
		st := w.status
		st.LastKeepAlive = st.lastKeepAlive.UTC().Format(decimalsDate)
		info := w.info
		info.NActiveAgents = d.o.ActiveAgents(name)
		out = append(out, ClusterNode{Info: info, Status: &st, Synced: st.rulesetHash == hash})
	}
	return out
}

// ---- local server (cluster_control) ----

func (d *ClusterDaemon) listenLocal(ctx context.Context) error {
	p := d.o.Home.ClusterSocket()
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	_ = os.Remove(p)
	ln, err := net.Listen("unix", p)
	if err != nil {
		return err
	}
	d.sock = ln
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				m, err := readMsg(bufio.NewReader(c))
				if err != nil {
					return
				}
				nodes, err := d.Health(m.Filter)
				if err != nil {
					e := werr(3023, "")
					_ = writeMsg(c, clusterMsg{Err: &e})
					return
				}
				_ = writeMsg(c, clusterMsg{OK: "ok", Nodes: nodes})
			}()
		}
	}()
	return nil
}

// askLocalCluster is the tools' local client: it asks the running daemon for the healthcheck.
func askLocalCluster(h Home, filter []string) ([]ClusterNode, error) {
	c, err := net.DialTimeout("unix", h.ClusterSocket(), 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := writeMsg(c, clusterMsg{Cmd: "get_health", Filter: filter}); err != nil {
		return nil, err
	}
	m, err := readMsg(bufio.NewReader(c))
	if err != nil {
		return nil, err
	}
	if m.Err != nil {
		return nil, fmt.Errorf("Error %d - %s", m.Err.Code, m.Err.Message)
	}
	return m.Nodes, nil
}

// The framework's messages of the cluster codes (wazuh/core/exception.py at v4.9.0).
func init() {
	for code, msg := range map[int]string{1000: "Wazuh Internal Error", 1730: "Node does not exist",
		3013: "Cluster is not running, it might be disabled in `WAZUH_HOME/etc/ossec.conf`",
		3023: "Worker node is not connected to master", 3028: "Worker node ID already exists",
		3029: "Connected worker with same name as the master", 3030: "Worker does not belong to the same cluster",
		3031: "Worker and master versions are not the same"} {
		if _, ok := errorCatalog[code]; !ok {
			errorCatalog[code] = wazuhError{Message: msg}
		}
	}
}

// removeDaemonPidfile removes one daemon's pidfile (the daemon stopped, the process lives on).
func removeDaemonPidfile(h Home, daemon string) {
	if _, p := pidfile(h, daemon); p != "" {
		_ = os.Remove(p)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startClusterd starts the node's cluster daemon when <cluster> enables it (nil, nil when disabled);
// the master failing to bind its port fails the manager, as wazuh-clusterd does.
func startClusterd(ctx context.Context, h Home, confBytes []byte, api *APIServer, fchk faults.Checker, now func() time.Time, olog *ossecLog) (*ClusterDaemon, error) {
	cc, err := ParseClusterConfig(confBytes)
	if err != nil || cc.Disabled {
		return nil, nil
	}
	v, _ := h.ReadVersion()
	d, err := StartCluster(ctx, ClusterOptions{Home: h, Conf: cc, Version: v.Plain(), Now: now, Faults: fchk,
		ActiveAgents: api.activeAgents, SyncAgents: api.agents.SyncNodeAgents, AgentInfo: api.agentInfo, DAPI: api.serveDAPI})
	if err != nil {
		olog.write("wazuh-clusterd", "CRITICAL", fmt.Sprintf("(1206): Unable to Bind port '%d' due to [%v]", cc.Port, err))
		markFailed(h, "wazuh-clusterd")
		return nil, err
	}
	return d, nil
}

// activeAgents counts the agents (not 000) of this node's database that are active and report to
// node, as get_health does with status=active and node_name=node on the master's global.db.
func (s *APIServer) activeAgents(node string) int {
	agents, err := s.agents.Agents()
	if err != nil {
		return 0
	}
	c := s.viewCtx(agents)
	n := 0
	for _, a := range agents {
		if a.ID > 0 && c.status(a) == StatusActive && c.agentNode(a) == node {
			n++
		}
	}
	return n
}

// storedActiveAgents counts the active agents of h's database by node as stored (no view of faults):
// the daemon's default when no API counts them.
func storedActiveAgents(h Home, self string) func(node string) int {
	store := NewAgentStore(h)
	return func(node string) int {
		agents, _ := store.Agents()
		n := 0
		for _, a := range agents {
			an := a.Node
			if an == "" {
				an = self
			}
			if a.ID > 0 && a.Conn == StatusActive && an == node {
				n++
			}
		}
		return n
	}
}
