package manager

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// The master's distributed API (framework/wazuh/core/cluster/dapi/dapi.py at v4.9.0 and v4.14.7): a
// distributed_master request on the master (PUT /agents/upgrade, /agents/upgrade_custom) is split by
// the node each agent reports to (get_solver_node groups the agents of global.db by node_name; ids the
// master does not know stay with the master), each node's share is run on that node (the master's own
// locally, a worker's forwarded to it with dapi_fwd) and the answers are merged (reduce(or_)). A worker
// that is not connected is not among the master's clients: local_server.py raises 3022 "Unknown node
// ID" and forward() turns it into a WazuhError whose ids are the node's name, so its share comes back
// as one failed item {3022, [node]} beside the other nodes' results, or, when it is the only node of
// the request, as the whole answer (HTTP 400, title "Wazuh Cluster Error"). agent-info sync
// (sync_a_w_m) carries each worker's agents to the master, which writes them into its global.db with
// the worker as their node_name and keeps them there when the worker leaves.
//
// The emulator's wire: a worker opens a second connection to the master ("dapi" hello) on which the
// master writes the requests it forwards and the worker answers them, one at a time.

// ErrUnknownNode is the master's answer for a node that is not connected (3022).
var ErrUnknownNode = errors.New("unknown node ID")

// dapiFwd is one forwarded request: an API endpoint with its query, run on the worker as if it had been
// asked there.
type dapiFwd struct {
	Method string              `json:"method"`
	Path   string              `json:"path"`
	Query  map[string][]string `json:"query"`
}

// dapiReply is the worker's answer: the API's status and body, and the upgrade tasks it created (the
// worker's upgrade module reports them to the master's task manager).
type dapiReply struct {
	Status      int        `json:"status"`
	ContentType string     `json:"content_type"`
	Body        []byte     `json:"body"`
	Tasks       []taskWire `json:"tasks,omitempty"`
}

// taskWire is a task as the worker's module reports it to the master.
type taskWire struct {
	Agent   int           `json:"agent"`
	Command string        `json:"command"`
	Target  string        `json:"target"`
	Created time.Time     `json:"created"`
	Start   time.Time     `json:"start"`
	Fate    string        `json:"fate,omitempty"`
	Timing  UpgradeTiming `json:"timing"`
}

type dapiChan struct {
	mu   sync.Mutex
	conn net.Conn
	rd   *bufio.Reader
}

// remoteNode is what the master knows of a worker that synced its agents (their rows are in the
// master's database).
type remoteNode struct {
	lost time.Time // when the worker left (zero while connected)
}

// joined and left track the workers' sessions (d.mu held).
func (d *ClusterDaemon) joined(name string) {
	if r := d.remote[name]; r != nil {
		r.lost = time.Time{}
	}
}

func (d *ClusterDaemon) left(name string) {
	if r := d.remote[name]; r != nil {
		r.lost = d.o.Now()
	}
}

// synced writes a worker's agent-info rows into the master's database, where they stay when the
// worker leaves (d.mu held).
func (d *ClusterDaemon) synced(name string, agents []*Agent) error {
	if d.remote[name] == nil {
		d.remote[name] = &remoteNode{}
	}
	return d.o.SyncAgents(name, agents)
}

// Lost is when the worker left the cluster (zero while it is connected or was never seen).
func (d *ClusterDaemon) Lost(node string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.remote[node]; r != nil {
		return r.lost
	}
	return time.Time{}
}

// IsMaster says whether this node is the master.
func (d *ClusterDaemon) IsMaster() bool { return d.o.Conf.NodeType == "master" }

// NodeName is this node's name.
func (d *ClusterDaemon) NodeName() string { return d.o.Conf.NodeName }

// ConnectedWorkers are the workers connected now, in connection order.
func (d *ClusterDaemon) ConnectedWorkers() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, n := range d.order {
		if d.workers[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

func (d *ClusterDaemon) agentInfo() []*Agent {
	if d.o.AgentInfo == nil {
		return nil
	}
	return d.o.AgentInfo()
}

// attachDAPI keeps a worker's DAPI connection until the worker's session ends.
func (d *ClusterDaemon) attachDAPI(ctx context.Context, name string, c net.Conn, rd *bufio.Reader) {
	d.mu.Lock()
	w := d.workers[name]
	if w != nil {
		w.dapi = &dapiChan{conn: c, rd: rd}
	}
	d.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case <-ctx.Done():
	case <-w.closed:
	}
}

// Forward runs a request on a connected worker (ErrUnknownNode when it is not connected).
func (d *ClusterDaemon) Forward(node string, fwd dapiFwd) (dapiReply, error) {
	d.mu.Lock()
	w := d.workers[node]
	var ch *dapiChan
	if w != nil {
		ch = w.dapi
	}
	d.mu.Unlock()
	if ch == nil {
		return dapiReply{}, fmt.Errorf("%w: %s", ErrUnknownNode, node)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if err := writeMsg(ch.conn, clusterMsg{Cmd: "dapi", Fwd: &fwd}); err != nil {
		return dapiReply{}, fmt.Errorf("%w: %s: %v", ErrUnknownNode, node, err)
	}
	_ = ch.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer func() { _ = ch.conn.SetReadDeadline(time.Time{}) }()
	m, err := readMsg(ch.rd)
	if err != nil || m.FwdReply == nil {
		return dapiReply{}, fmt.Errorf("%w: %s: no answer (%v)", ErrUnknownNode, node, err)
	}
	return *m.FwdReply, nil
}

// serveDAPI is the worker's side of the DAPI channel: it connects to the master and answers the
// requests forwarded to it until the session ends.
func (d *ClusterDaemon) serveDAPI(ctx context.Context, tag string) {
	d.mu.Lock()
	addr, dialer := d.masterAddr, d.dialer
	d.mu.Unlock()
	if dialer == nil || d.o.DAPI == nil {
		return
	}
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		d.log.write("ERROR", tag, "D API", fmt.Sprintf("Could not open the DAPI channel: %v", err))
		return
	}
	go func() { <-ctx.Done(); _ = c.Close() }()
	defer c.Close()
	if err := writeMsg(c, clusterMsg{Cmd: "dapi", Name: d.o.Conf.NodeName, Cluster: d.o.Conf.Name, Version: d.o.Version}); err != nil {
		return
	}
	rd := bufio.NewReader(c)
	for ctx.Err() == nil {
		m, err := readMsg(rd)
		if err != nil {
			return
		}
		if m.Fwd == nil {
			continue
		}
		reply := d.o.DAPI(*m.Fwd)
		if err := writeMsg(c, clusterMsg{FwdReply: &reply}); err != nil {
			return
		}
	}
}
