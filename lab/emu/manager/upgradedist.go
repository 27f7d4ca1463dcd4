package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The agent upgrade in a cluster (see clusterdapi.go for the distribution): PUT /agents/upgrade and
// /agents/upgrade_custom are distributed_master requests, so the master splits the agents by node,
// runs its own share and forwards each worker's share, whose module creates the tasks and reports them
// to the master's task manager; GET /agents/upgrade_result is local_master, answered by the master
// from that task manager for every node's agents. While a worker is cut from the master the master
// learns nothing more of its tasks: they keep the status they had and turn Timeout at task_timeout.

type ctxKey int

// localOnlyKey marks a request that runs this node's share only (the master's own, or one forwarded
// to a worker).
const localOnlyKey ctxKey = 1

func localOnly(r *http.Request) bool {
	v, _ := r.Context().Value(localOnlyKey).(bool)
	return v
}

func init() {
	errorCatalog[3022] = wazuhError{Message: "Unknown node ID", Remediation: "Check the name of the node"}
}

// localAgents drops the workers' agents.
func localAgents(agents []*Agent) []*Agent {
	out := make([]*Agent, 0, len(agents))
	for _, a := range agents {
		if a.Node == "" {
			out = append(out, a)
		}
	}
	return out
}

// agentInfo is a worker's agent-info rows for the master: its agents as its API shows them now, with
// this node's hostname as their manager (global.db's manager_host).
func (s *APIServer) agentInfo() []*Agent {
	s.settleUpgrades()
	agents, err := s.agents.Agents()
	if err != nil {
		return nil
	}
	c := s.viewCtx(agents)
	out := make([]*Agent, 0, len(agents))
	for _, a := range agents {
		if a.ID == 0 || a.Node != "" {
			continue
		}
		cp := *a
		cp.Key = ""
		cp.Conn, cp.LastKeepAlive, cp.Version, cp.OS = c.status(a), c.lastKeepAlive(a), c.version(a), c.os(a)
		cp.Manager = c.field(a, "manager")
		out = append(out, &cp)
	}
	return out
}

// distributes says whether this request is the master's to split by node.
func (s *APIServer) distributes(r *http.Request) bool {
	return s.o.Cluster != nil && s.o.Cluster.IsMaster() && !localOnly(r)
}

type nodeShare struct {
	node string
	ids  []int
}

type shareAnswer struct {
	status      int
	contentType string
	body        []byte
	err         error
}

// upgradeDistributed splits an upgrade request by node, runs each share where its agents are and
// merges the answers.
func (s *APIServer) upgradeDistributed(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	ids, all, ok := parseIDList(w, first(q, "agents_list"), true)
	if !ok {
		return
	}
	master := s.o.Cluster.NodeName()
	var shares []nodeShare
	if all {
		// broadcasting: every connected node upgrades its own agents.
		shares = append(shares, nodeShare{node: master})
		for _, n := range s.o.Cluster.ConnectedWorkers() {
			shares = append(shares, nodeShare{node: n})
		}
	} else {
		agents, ok := s.loadAgents(w)
		if !ok {
			return
		}
		byID := indexAgents(agents)
		at := map[string]int{}
		for _, id := range ids {
			node := master
			if a := byID[id]; a != nil && a.Node != "" {
				node = a.Node
			}
			i, seen := at[node]
			if !seen {
				i = len(shares)
				at[node] = i
				shares = append(shares, nodeShare{node: node})
			}
			shares[i].ids = append(shares[i].ids, id)
		}
	}
	answers := make([]shareAnswer, len(shares))
	for i, sh := range shares {
		sq := url.Values{}
		for k, v := range q {
			sq[k] = v
		}
		if !all {
			list := make([]string, len(sh.ids))
			for j, id := range sh.ids {
				list[j] = fmt.Sprintf("%03d", id)
			}
			sq.Set("agents_list", strings.Join(list, ","))
		}
		if sh.node == master {
			rec := httptest.NewRecorder()
			req := r.Clone(context.WithValue(r.Context(), localOnlyKey, true))
			req.URL.RawQuery = sq.Encode()
			s.handleUpgrade(rec, req)
			answers[i] = shareAnswer{status: rec.Code, contentType: rec.Header().Get("Content-Type"), body: rec.Body.Bytes()}
			continue
		}
		reply, err := s.o.Cluster.Forward(sh.node, dapiFwd{Method: r.Method, Path: r.URL.Path, Query: sq})
		if err != nil {
			answers[i] = shareAnswer{err: err}
			s.o.Logger.Warn("upgrade: forward to a worker", "node", sh.node, "err", err)
			continue
		}
		answers[i] = shareAnswer{status: reply.Status, contentType: reply.ContentType, body: s.adoptTasks(sh.node, reply)}
	}
	if len(shares) == 1 {
		a := answers[0]
		if a.err != nil {
			// The only node of the request is not connected: forward()'s WazuhError is the answer.
			e := werr(3022, "")
			writeProblem(w, 400, problem{Title: "Wazuh Cluster Error", Detail: e.Message, Remediation: e.Remediation, Error: e.Code})
			return
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
		return
	}
	created := []taskCreated{}
	fails := &failures{}
	for i, a := range answers {
		switch {
		case a.err != nil:
			fails.add(werr(3022, ""), shares[i].node)
			continue
		case a.status != http.StatusOK:
			// An exception without ids replaces the merged result (WazuhException.__or__).
			w.Header().Set("Content-Type", a.contentType)
			w.WriteHeader(a.status)
			_, _ = w.Write(a.body)
			return
		}
		var env struct {
			Data struct {
				AffectedItems []taskCreated `json:"affected_items"`
				FailedItems   []failedItem  `json:"failed_items"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.body, &env); err != nil {
			writeWazuhError(w, 500, 1000, fmt.Sprintf("node %s: %v", shares[i].node, err))
			return
		}
		created = append(created, env.Data.AffectedItems...)
		for _, f := range env.Data.FailedItems {
			for _, id := range f.ID {
				fails.add(f.Error, id)
			}
		}
	}
	sort.Slice(created, func(i, j int) bool { return idLess(created[i].Agent, created[j].Agent) })
	writeJSON(w, r, 200, affected(created, len(created), fails, "All upgrade tasks were created",
		"Some agents were not upgraded", "No upgrade task was created"))
}

// adoptTasks records a worker's new tasks in the master's task manager (task ids are the master's) and
// returns the worker's answer with those ids.
func (s *APIServer) adoptTasks(node string, reply dapiReply) []byte {
	if reply.Status != http.StatusOK || len(reply.Tasks) == 0 {
		return reply.Body
	}
	m := s.upgrades
	ids := map[string]int{}
	m.mu.Lock()
	for _, tw := range reply.Tasks {
		t := &task{ID: m.nextID, Agent: tw.Agent, Node: node, Command: tw.Command, Target: tw.Target, Created: tw.Created,
			Start: tw.Start, Fate: tw.Fate, Remote: true, Timing: tw.Timing}
		m.nextID++
		m.tasks[tw.Agent] = t
		ids[fmt.Sprintf("%03d", tw.Agent)] = t.ID
	}
	m.mu.Unlock()
	var env map[string]json.RawMessage
	var data map[string]json.RawMessage
	var items []taskCreated
	if json.Unmarshal(reply.Body, &env) != nil || json.Unmarshal(env["data"], &data) != nil || json.Unmarshal(data["affected_items"], &items) != nil {
		return reply.Body
	}
	for i := range items {
		if id, ok := ids[items[i].Agent]; ok {
			items[i].TaskID = id
		}
	}
	data["affected_items"], _ = json.Marshal(items)
	env["data"], _ = json.Marshal(data)
	b, err := json.Marshal(env)
	if err != nil {
		return reply.Body
	}
	return b
}

// serveDAPI runs, on a worker, a request the master forwarded: this node's share of an upgrade, with
// the tasks its module created for the master's task manager.
func (s *APIServer) serveDAPI(f dapiFwd) dapiReply {
	u := url.URL{Path: f.Path, RawQuery: url.Values(f.Query).Encode()}
	req := httptest.NewRequest(f.Method, u.String(), nil)
	req = req.WithContext(context.WithValue(req.Context(), localOnlyKey, true))
	rec := httptest.NewRecorder()
	if f.Method != http.MethodPut || (f.Path != "/agents/upgrade" && f.Path != "/agents/upgrade_custom") {
		writeWazuhError(rec, 400, 1000, "the emulator forwards only the agent upgrade requests: "+f.Method+" "+f.Path)
		return dapiReply{Status: rec.Code, ContentType: rec.Header().Get("Content-Type"), Body: rec.Body.Bytes()}
	}
	s.handleUpgrade(rec, req)
	reply := dapiReply{Status: rec.Code, ContentType: rec.Header().Get("Content-Type"), Body: rec.Body.Bytes()}
	var env struct {
		Data struct {
			AffectedItems []taskCreated `json:"affected_items"`
		} `json:"data"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(reply.Body, &env) != nil {
		return reply
	}
	conf, _ := s.loadConfig()
	tm := timingOf(conf)
	m := s.upgrades
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range env.Data.AffectedItems {
		id, err := strconv.Atoi(it.Agent)
		if t := m.tasks[id]; err == nil && t != nil && t.ID == it.TaskID {
			reply.Tasks = append(reply.Tasks, taskWire{Agent: id, Command: t.Command, Target: t.Target, Created: t.Created,
				Start: t.Start, Fate: t.Fate, Timing: tm})
		}
	}
	return reply
}

// remoteTaskItem is a task's upgrade_result item; a worker's task as the master knows it: its progress
// stops when the worker left, and it turns Timeout at task_timeout.
func (s *APIServer) remoteTaskItem(t *task, now time.Time, tm UpgradeTiming) orderedObject {
	at := now
	if t.Remote {
		tm = t.Timing
		if s.o.Cluster != nil {
			if cut := s.o.Cluster.Lost(t.Node); !cut.IsZero() && cut.Before(now) {
				at = cut
			}
		}
	}
	st, upd, msg := t.status(at, tm)
	if at != now && (st == TaskPending || st == TaskInProgress || st == TaskUpdating) {
		if deadline := t.Created.Add(tm.TaskTimeout); !now.Before(deadline) {
			st, upd, msg = TaskTimeout, deadline, ""
		}
	}
	return taskItem(t, st, upd, msg)
}
