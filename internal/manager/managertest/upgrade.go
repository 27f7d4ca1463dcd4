package managertest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The agent upgrade endpoints, as the real API answers them (the lab's emulator has the module with
// its timing and faults; this fake lets a test decide each task's fate): the API's checks (000: 1703,
// unknown: 1701, not active: 1707), the module's per-agent refusals (1820 a task still running, 1822
// the agent at or above the target) in failed_items, and with agents_list=all the refusals left out.

// TaskOutcome is what an upgrade task does: its status (and error_msg), and the version the agent
// reports afterwards ("" leaves the agent as it is; Disconnect leaves it disconnected).
type TaskOutcome struct {
	Status     string
	ErrorMsg   string
	Version    string
	Disconnect bool
}

// Task is one upgrade task.
type Task struct {
	ID       int
	Agent    string
	Node     string
	Status   string
	ErrorMsg string
}

var upgradeMessages = map[int]string{3022: "Unknown node ID", 1813: "No task in DB", 1820: "Upgrade procedure could not start. Agent already upgrading",
	1822: "Current agent version is greater or equal", 1819: "The WPK for this platform is not available"}

func versionLess(a, b string) bool {
	pa, pb := vparts(a), vparts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func vparts(s string) [3]int {
	var v [3]int
	for i, p := range strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(s, "Wazuh "), "v"), ".", 3) {
		v[i], _ = strconv.Atoi(p)
	}
	return v
}

// SetUpgradeOutcome decides the fate of the tasks created from now on (nil: they stay In progress).
func (s *Server) SetUpgradeOutcome(f func(agent string) TaskOutcome) {
	s.mu.Lock()
	s.upgradeOutcome = f
	s.mu.Unlock()
}

// SetNodeDown makes a cluster node disconnected from the master. The real master (dapi.py forward(),
// local_server.py dapi_fwd) answers a request whose agents all report to that node with its WazuhError
// 3022 "Unknown node ID" (HTTP 400, title "Wazuh Cluster Error"), and a request with agents of other
// nodes too with a failed item 3022 whose id is the node's name beside the other nodes' results.
func (s *Server) SetNodeDown(node string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.downNodes == nil {
		s.downNodes = map[string]bool{}
	}
	s.downNodes[node] = down
}

// FinishTask applies an outcome to an agent's task and the agent.
func (s *Server) FinishTask(agent string, o TaskOutcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(agent, o)
}

func (s *Server) finishLocked(agent string, o TaskOutcome) {
	if t := s.tasks[agent]; t != nil && o.Status != "" {
		t.Status, t.ErrorMsg = o.Status, o.ErrorMsg
	}
	for i := range s.agents {
		if s.agents[i].ID != agent {
			continue
		}
		if o.Version != "" { // back with the new version: a fresh keepalive
			s.agents[i].Version = o.Version
			s.agents[i].Status = "active"
			s.agents[i].LastKeepAlive = s.cfg.Now().UTC().Format(time.RFC3339)
		}
		if o.Disconnect {
			s.agents[i].Status = "disconnected"
		}
	}
}

// Tasks returns the latest task of each agent.
func (s *Server) Tasks() map[string]Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Task{}
	for k, t := range s.tasks {
		out[k] = *t
	}
	return out
}

func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ids := splitList(q.Get("agents_list"))
	all := len(ids) == 1 && ids[0] == "all"
	custom := strings.HasSuffix(r.URL.Path, "_custom")
	s.mu.Lock()
	target := strings.TrimPrefix(strings.TrimPrefix(q.Get("upgrade_version"), "Wazuh "), "v")
	if target == "" || custom {
		target = s.cfg.Version
	}
	if versionLess(s.cfg.Version, target) {
		s.mu.Unlock()
		code, msg := 1823, "Upgrading an agent to a version higher than the manager requires the force flag"
		if q.Get("force") == "true" {
			code, msg = 1825, "The version of the WPK does not exist in the repository"
		}
		writeJSON(w, 500, map[string]any{"title": "Wazuh Error", "detail": msg, "error": code})
		return
	}
	byID := map[string]*Agent{}
	for i := range s.agents {
		byID[s.agents[i].ID] = &s.agents[i]
		if all {
			ids = append(ids, s.agents[i].ID)
		}
	}
	if all {
		ids = ids[1:]
	}
	node := q.Get("node_name")
	// The shares of the nodes that are down.
	down := map[string]bool{}
	reachable := 0
	for _, id := range ids {
		if a := byID[id]; a != nil && s.downNodes[a.NodeName] {
			down[a.NodeName] = true
		} else {
			reachable++
		}
	}
	if !all && len(down) == 1 && reachable == 0 {
		s.mu.Unlock()
		writeJSON(w, 400, map[string]any{"title": "Wazuh Cluster Error", "detail": "Unknown node ID", "remediation": "Check the name of the node", "error": 3022})
		return
	}
	type created struct {
		Agent  string `json:"agent"`
		TaskID int    `json:"task_id"`
	}
	items := []created{}
	fails := map[int][]string{}
	for n := range down {
		if !all { // broadcasting reaches the connected nodes only
			fails[3022] = append(fails[3022], n)
		}
	}
	for _, id := range ids {
		a := byID[id]
		code := 0
		switch {
		case a != nil && down[a.NodeName]:
			continue
		case id == "000":
			code = 1703
		case a == nil:
			code = 1701
		case node != "" && a.NodeName != node:
			code = 1731
		case a.Status != "active":
			code = 1707
		case s.tasks[id] != nil && (s.tasks[id].Status == "Pending" || s.tasks[id].Status == "In progress" || s.tasks[id].Status == "Updating"):
			code = 1820
		case !custom && q.Get("force") != "true" && !versionLess(a.Version, target):
			code = 1822
		}
		if code != 0 {
			if !all {
				fails[code] = append(fails[code], id)
			}
			continue
		}
		if s.tasks == nil {
			s.tasks = map[string]*Task{}
		}
		s.nextTask++
		t := &Task{ID: s.nextTask, Agent: id, Node: a.NodeName, Status: "In progress"}
		s.tasks[id] = t
		items = append(items, created{id, t.ID})
		if s.upgradeOutcome != nil {
			s.finishLocked(id, s.upgradeOutcome(id))
		}
	}
	s.mu.Unlock()
	upgradeEnvelope(w, items, len(items), fails, [3]string{"All upgrade tasks were created", "Some agents were not upgraded", "No upgrade task was created"})
}

func (s *Server) upgradeResult(w http.ResponseWriter, r *http.Request) {
	ids := splitList(r.URL.Query().Get("agents_list"))
	all := ids == nil
	s.mu.Lock()
	byID := map[string]*Agent{}
	for i := range s.agents {
		byID[s.agents[i].ID] = &s.agents[i]
		if all && s.agents[i].ID != "000" {
			ids = append(ids, s.agents[i].ID)
		}
	}
	items := []map[string]any{}
	fails := map[int][]string{}
	for _, id := range ids {
		a, t := byID[id], s.tasks[id]
		code := 0
		switch {
		case id == "000":
			code = 1703
		case a == nil:
			code = 1701
		case a.Status != "active":
			code = 1707
		case t == nil:
			code = 1813
		}
		if code != 0 {
			if !all {
				fails[code] = append(fails[code], id)
			}
			continue
		}
		it := map[string]any{"message": "Success", "agent": id, "task_id": t.ID, "node": t.Node, "module": "upgrade_module",
			"command": "upgrade", "status": t.Status, "create_time": "2026-12-07T18:00:00Z", "update_time": "2026-12-07T18:00:10Z"}
		if t.ErrorMsg != "" {
			it["error_msg"] = t.ErrorMsg
		}
		items = append(items, it)
	}
	s.mu.Unlock()
	upgradeEnvelope(w, items, len(items), fails, [3]string{"All upgrade tasks were returned", "Some upgrade tasks were not returned", "No upgrade task was returned"})
}

// upgradeEnvelope is envelope with the module's messages for its codes.
func upgradeEnvelope(w http.ResponseWriter, items any, total int, fails map[int][]string, msgs [3]string) {
	codes := make([]int, 0, len(fails))
	for c := range fails {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	fl := []map[string]any{}
	n := 0
	for _, c := range codes {
		msg, ok := messages[c]
		if !ok {
			msg = upgradeMessages[c]
		}
		ids := fails[c]
		sort.Strings(ids)
		fl = append(fl, map[string]any{"error": map[string]any{"code": c, "message": msg}, "id": ids})
		n += len(ids)
	}
	status, msg := 0, msgs[0]
	switch {
	case n > 0 && total == 0:
		status, msg = 1, msgs[2]
	case n > 0:
		status, msg = 2, msgs[1]
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"affected_items": items, "total_affected_items": total,
		"total_failed_items": n, "failed_items": fl}, "message": msg, "error": status})
}
