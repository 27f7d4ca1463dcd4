package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// DistFaultKinds are the faults of a distributed lab's indexer cluster.
func DistFaultKinds() []FaultKind {
	return append([]FaultKind{
		{"indexer-node-down:<host>", "stop an indexer node's unit (indexer-1 … indexer-3): the cluster loses that node (yellow while its replicas are reassigned); heal starts it and waits for green with every node", false},
		{"replica-unassigned", "index siem-lab-replicas with more replicas than the other nodes can hold (one replica UNASSIGNED, cluster yellow); heal deletes it", false},
	}, append(append(mgrFaultKinds, electionFaultKind, masterFaultKind), noRejoinFaultKinds...)...)
}

const replicasIndex = "siem-lab-replicas"

// Fault injects a fault into the distributed lab and records it in DIR/lab.json.
func (d *Distributed) Fault(ctx context.Context, kind string) error {
	return d.setFault(ctx, kind, true)
}

// Heal removes a fault and waits until the cluster is healthy again.
func (d *Distributed) Heal(ctx context.Context, kind string) error {
	return d.setFault(ctx, kind, false)
}

func (d *Distributed) setFault(ctx context.Context, kind string, on bool) error {
	name, arg, _ := strings.Cut(kind, ":")
	var err error
	switch name {
	case "indexer-node-down":
		err = d.nodeDown(ctx, arg, on)
	case "replica-unassigned":
		if arg != "" {
			return fmt.Errorf("%w %q (siemlab fault --list)", ErrUnknownFault, kind)
		}
		err = d.replicaUnassigned(ctx, on)
	case "worker-disconnected":
		err = d.workerDisconnected(ctx, on)
	case "worker-version-mismatch":
		err = d.workerVersionMismatch(ctx, on)
	case "master-version-mismatch":
		err = d.masterVersionMismatch(ctx, on)
	case "election-moved":
		err = d.electionMoved(ctx, arg, on)
	case "indexer-no-rejoin":
		err = d.indexerNoRejoin(ctx, arg, on)
	default:
		return fmt.Errorf("%w %q (siemlab fault --list)", ErrUnknownFault, kind)
	}
	return recordFault(d.st, kind, on, err)
}

// indexerNode is the host named host, which must be an indexer node.
func (d *Distributed) indexerNode(host string) (*Lab, error) {
	h, err := d.Host(host)
	if err != nil {
		return nil, err
	}
	if h.Role() != RoleIndexer {
		return nil, fmt.Errorf("%s is not an indexer node (%s)", host, h.Role())
	}
	return h, nil
}

// nodeDown stops (on) or starts an indexer node's unit. On, it returns once the other nodes see
// the cluster without it; off, once the cluster is green with every node.
func (d *Distributed) nodeDown(ctx context.Context, host string, on bool) error {
	h, err := d.indexerNode(host)
	if err != nil {
		return err
	}
	unit := h.prof.IndexerUnit()
	if !on {
		if err := h.startUnit(ctx, unit); err != nil {
			return err
		}
		return d.waitGreen(ctx)
	}
	if err := h.stopUnit(ctx, unit); err != nil {
		return err
	}
	want := len(d.HostsOf(RoleIndexer)) - 1
	ctx, cancel := context.WithTimeout(ctx, d.tmo)
	defer cancel()
	return poll(ctx, d.poll, func() (bool, error) {
		c, err := d.indexer(ctx)
		if err != nil {
			return false, nil
		}
		hl, err := c.health(ctx, "")
		return err == nil && hl.NumberOfNodes == want, nil
	})
}

// replicaUnassigned creates an index with as many replicas as there are nodes (one copy more than
// the nodes can hold: a node never holds two copies of a shard), so one replica stays UNASSIGNED
// and the cluster yellow; heal deletes it.
func (d *Distributed) replicaUnassigned(ctx context.Context, on bool) error {
	c, err := d.indexer(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.tmo)
	defer cancel()
	if !on {
		if err := c.deleteIndex(ctx, replicasIndex); err != nil {
			return err
		}
		return d.waitGreen(ctx)
	}
	n := len(d.HostsOf(RoleIndexer))
	body := map[string]any{"settings": map[string]any{"index.number_of_shards": 1, "index.number_of_replicas": n}}
	if err := c.createIndex(ctx, replicasIndex, "wait_for_active_shards=1", body); err != nil {
		return err
	}
	// Settled: every copy that can be placed is active, the one that cannot is unassigned.
	return poll(ctx, d.poll, func() (bool, error) {
		h, err := c.health(ctx, "/"+replicasIndex)
		return err == nil && h.Status == "yellow" && h.ActiveShards == n && h.UnassignedShards == 1 && h.InitializingShards == 0, nil
	})
}

// SendFlow sends the flow's events to the managers in turn (over syslog to each one's address).
func (d *Distributed) SendFlow(ctx context.Context, tag string, rate float64, first int) (int, error) {
	var addrs []string
	for _, m := range d.HostsOf(RoleManager) {
		addrs = append(addrs, net.JoinHostPort(m.addr(), fmt.Sprint(m.st.Ports.Syslog)))
	}
	return sendFlow(ctx, addrs, tag, rate, first, flowSentPath(d.st.Dir, tag))
}

// CheckFlow compares the managers' alerts files with the indexer cluster.
func (d *Distributed) CheckFlow(ctx context.Context, tag string) (FlowReport, error) {
	var files []string
	for _, m := range d.HostsOf(RoleManager) {
		files = append(files, m.alertsFile())
	}
	return checkFlow(ctx, tag, files, flowSentPath(d.st.Dir, tag), d.prof.AlertsPrefix(), d.indexer)
}

// WaitFlow is Lab.WaitFlow across the managers.
func (d *Distributed) WaitFlow(ctx context.Context, tag string, timeout, interval time.Duration) (FlowReport, error) {
	return waitFlow(ctx, tag, timeout, interval, d.CheckFlow)
}

// IndexerNode is one node of the indexer cluster as _cat/nodes shows it.
type IndexerNode struct {
	Name           string `json:"name"`
	IP             string `json:"ip"`
	Version        string `json:"version"`
	Roles          string `json:"node.role"`
	ClusterManager string `json:"cluster_manager"` // "*" on the elected one
}

// DistStatus is what `siemlab status` shows of a distributed lab.
type DistStatus struct {
	Dir          string         `json:"dir"`
	ID           string         `json:"id"`
	Topology     string         `json:"topology"`
	Profile      string         `json:"profile"`
	Hosts        []*Status      `json:"hosts"`
	Cluster      *ClusterHealth `json:"cluster,omitempty"`
	Nodes        []IndexerNode  `json:"nodes,omitempty"`
	ClusterError string         `json:"cluster_error,omitempty"`
	Faults       []string       `json:"faults"`
	MemoryRSS    int64          `json:"memory_rss_bytes"`
	Processes    int            `json:"processes"`
}

// Status reads every host's status and the indexer cluster's health and nodes.
func (d *Distributed) Status(ctx context.Context) (*DistStatus, error) {
	st := &DistStatus{Dir: d.st.Dir, ID: d.st.ID, Topology: d.st.Topology, Profile: d.prof.Name, Faults: append([]string{}, d.st.Faults...)}
	for _, h := range d.hosts {
		hs, err := h.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.st.Host, err)
		}
		st.Hosts = append(st.Hosts, hs)
		st.MemoryRSS += hs.MemoryRSS
		st.Processes += hs.Processes
	}
	c, err := d.indexer(ctx)
	if err != nil {
		st.ClusterError = err.Error()
		return st, nil
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if h, err := c.health(hctx, ""); err != nil {
		st.ClusterError = err.Error()
	} else {
		st.Cluster = &h
	}
	var nodes []IndexerNode
	if data, err := c.ok(hctx, http.MethodGet, "/_cat/nodes?format=json&h=name,ip,version,node.role,cluster_manager&s=name", nil); err != nil {
		st.ClusterError = err.Error()
	} else if err := json.Unmarshal(data, &nodes); err != nil {
		st.ClusterError = "_cat/nodes: " + err.Error()
	}
	st.Nodes = nodes
	return st, nil
}

// String renders the status as text: the lab, the cluster, then each host.
func (s *DistStatus) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lab %s (distributed, profile %s, %d hosts)  processes=%d  memory=%d MiB\n", s.Dir, s.Profile, len(s.Hosts), s.Processes, s.MemoryRSS>>20)
	if s.Cluster != nil {
		fmt.Fprintf(&b, "cluster  %s (nodes %d, active shards %d, unassigned %d)\n", s.Cluster.Status, s.Cluster.NumberOfNodes, s.Cluster.ActiveShards, s.Cluster.UnassignedShards)
	} else {
		fmt.Fprintf(&b, "cluster  unreachable: %s\n", s.ClusterError)
	}
	for _, n := range s.Nodes {
		fmt.Fprintf(&b, "node     %-12s %-12s %s %s %s\n", n.Name, n.IP, n.Version, n.Roles, n.ClusterManager)
	}
	if len(s.Faults) > 0 {
		fmt.Fprintf(&b, "faults   %s\n", strings.Join(s.Faults, ", "))
	}
	for _, h := range s.Hosts {
		b.WriteString("\n")
		b.WriteString(h.String())
	}
	return b.String()
}
