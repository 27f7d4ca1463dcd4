package manager

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// The /cluster endpoints (api/api/controllers/cluster_controller.py and framework/wazuh/cluster.py at
// v4.9.0). /cluster/status is answered by handleClusterStatus.

func (s *APIServer) clusterRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /cluster/local/info", s.handleClusterLocalInfo)
	m.HandleFunc("GET /cluster/local/config", s.handleClusterLocalConfig)
	m.HandleFunc("GET /cluster/nodes", s.handleClusterNodes)
	m.HandleFunc("GET /cluster/healthcheck", s.handleClusterHealthcheck)
	m.HandleFunc("GET /cluster/ruleset/synchronization", s.handleClusterRulesetSync)
}

// clusterRunning answers 3013 when this node runs no cluster daemon.
func (s *APIServer) clusterRunning(w http.ResponseWriter) bool {
	if s.o.Cluster == nil {
		writeWazuhError(w, 400, 3013, "")
		return false
	}
	return true
}

// clusterHealth reads the healthcheck through the master; a worker that cannot reach it answers 3023.
func (s *APIServer) clusterHealth(w http.ResponseWriter, filter []string) ([]ClusterNode, bool) {
	nodes, err := s.o.Cluster.Health(filter)
	if errors.Is(err, ErrClusterDisconnected) {
		writeWazuhError(w, 500, 3023, "")
		return nil, false
	}
	if err != nil {
		writeWazuhError(w, 500, 1000, err.Error())
		return nil, false
	}
	return nodes, true
}

func nodesList(r *http.Request) []string {
	v := first(queryOf(r), "nodes_list")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func (s *APIServer) handleClusterLocalInfo(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) || !s.clusterRunning(w) {
		return
	}
	c := s.o.Cluster.Config()
	item := orderedObject{{"node", c.NodeName}, {"cluster", c.Name}, {"type", c.NodeType}}
	writeJSON(w, r, 200, affected([]any{item}, 1, &failures{}, "All selected information was returned", "", "No information was returned"))
}

// handleClusterLocalConfig is GET /cluster/local/config: this node's <cluster> section as the
// daemon read it (the spec's ClusterLocalConfig: hidden is the string "yes"|"no" as ossec.conf
// spells it, disabled a boolean, nodes the master's addresses).
func (s *APIServer) handleClusterLocalConfig(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) || !s.clusterRunning(w) {
		return
	}
	c := s.o.Cluster.Config()
	hidden := "no"
	if c.Hidden {
		hidden = "yes"
	}
	nodes := c.Nodes
	if nodes == nil {
		nodes = []string{}
	}
	item := orderedObject{{"name", c.Name}, {"node_name", c.NodeName}, {"node_type", c.NodeType}, {"key", c.Key}, {"port", c.Port},
		{"bind_addr", c.BindAddr}, {"nodes", nodes}, {"hidden", hidden}, {"disabled", c.Disabled}}
	writeJSON(w, r, 200, affected([]any{item}, 1, &failures{}, "All selected information was returned", "", "No information was returned"))
}

func (s *APIServer) handleClusterHealthcheck(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r, "nodes_list") || !s.clusterRunning(w) {
		return
	}
	nodes, ok := s.clusterHealth(w, nodesList(r))
	if !ok {
		return
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Info.Name < nodes[j].Info.Name })
	items := make([]any, 0, len(nodes))
	for _, n := range nodes {
		info := orderedObject{{"name", n.Info.Name}, {"type", n.Info.Type}, {"version", n.Info.Version}, {"ip", n.Info.IP},
			{"n_active_agents", n.Info.NActiveAgents}}
		item := orderedObject{{"info", info}}
		if n.Status != nil {
			item = append(item, kvAny{"status", n.Status})
		}
		items = append(items, item)
	}
	writeJSON(w, r, 200, affected(items, len(items), &failures{}, "All selected nodes healthcheck information was returned",
		"Some nodes healthcheck information was not returned", "No healthcheck information was returned"))
}

func (s *APIServer) handleClusterRulesetSync(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r, "nodes_list") || !s.clusterRunning(w) {
		return
	}
	nodes, ok := s.clusterHealth(w, nil)
	if !ok {
		return
	}
	want := nodesList(r)
	var fails failures
	var items []any
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Info.Name < nodes[j].Info.Name })
	for _, n := range nodes {
		if len(want) == 0 || slices.Contains(want, n.Info.Name) {
			items = append(items, orderedObject{{"name", n.Info.Name}, {"synced", n.Synced}})
		}
	}
	for _, name := range want {
		if !containsNode(nodes, name) {
			fails.add(werr(1730, ""), name)
		}
	}
	if items == nil {
		items = []any{}
	}
	writeJSON(w, r, 200, affected(items, len(items), &fails, "Nodes ruleset synchronization status was successfully read",
		"Could not read ruleset synchronization status in some nodes", "Could not read ruleset synchronization status"))
}

func containsNode(nodes []ClusterNode, name string) bool {
	for _, n := range nodes {
		if n.Info.Name == name {
			return true
		}
	}
	return false
}

var clusterNodeFields = []string{"name", "type", "version", "ip"}

func nodeField(n ClusterNodeInfo, f string) string {
	switch f {
	case "name":
		return n.Name
	case "type":
		return n.Type
	case "version":
		return n.Version
	case "ip":
		return n.IP
	}
	return ""
}

// handleClusterNodes is get_nodes_info: the connected nodes (master first, then workers in connection
// order), filtered by nodes_list (unknown: failed item 1730), type, q and search, sorted, paged.
func (s *APIServer) handleClusterNodes(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	if !checkParams(w, r, "nodes_list", "offset", "limit", "sort", "search", "select", "type", "q", "distinct") || !s.clusterRunning(w) {
		return
	}
	offset, limit, ok := parsePage(w, q)
	if !ok {
		return
	}
	typ := first(q, "type")
	if typ != "" && typ != "worker" && typ != "master" && typ != "all" {
		badParam(w, fmt.Sprintf("'%s' is not one of ['worker', 'master']", typ))
		return
	}
	var sel []string
	if v := first(q, "select"); v != "" {
		for _, f := range strings.Split(v, ",") {
			if !slices.Contains(clusterNodeFields, f) {
				writeWazuhError(w, 400, 1724, fmt.Sprintf("Allowed select fields: %s. Fields: %s", strings.Join(clusterNodeFields, ", "), f))
				return
			}
			if !slices.Contains(sel, f) {
				sel = append(sel, f)
			}
		}
	}
	var query *qNode
	if v := first(q, "q"); v != "" {
		n, ok := queryParam(w, v, func(f string) bool { return slices.Contains(clusterNodeFields, f) })
		if !ok {
			return
		}
		query = n
	}
	health, ok := s.clusterHealth(w, nil)
	if !ok {
		return
	}
	var fails failures
	want := nodesList(r)
	for _, name := range want {
		if !containsNode(health, name) {
			fails.add(werr(1730, ""), name)
		}
	}
	search := strings.ToLower(first(q, "search"))
	neg := strings.HasPrefix(search, "-")
	search = strings.TrimPrefix(search, "-")
	var nodes []ClusterNodeInfo
	for _, n := range health {
		in := n.Info
		switch {
		case len(want) > 0 && !slices.Contains(want, in.Name),
			typ != "" && typ != "all" && in.Type != typ,
			query != nil && !query.matchValues(func(f string) string { return nodeField(in, f) }):
			continue
		}
		if search != "" {
			hit := false
			for _, f := range clusterNodeFields {
				hit = hit || strings.Contains(strings.ToLower(nodeField(in, f)), search)
			}
			if hit == neg {
				continue
			}
		}
		nodes = append(nodes, in)
	}
	if v := first(q, "sort"); v != "" {
		fields := strings.Split(v, ",")
		for _, f := range fields {
			if !slices.Contains(clusterNodeFields, strings.TrimLeft(f, "+-")) {
				writeWazuhError(w, 400, 1403, fmt.Sprintf("Allowed sort fields: %s. Fields: %s", strings.Join(clusterNodeFields, ", "), strings.TrimLeft(f, "+-")))
				return
			}
		}
		sort.SliceStable(nodes, func(i, j int) bool {
			for _, f := range fields {
				desc := strings.HasPrefix(f, "-")
				name := strings.TrimLeft(f, "+-")
				a, b := nodeField(nodes[i], name), nodeField(nodes[j], name)
				c := strings.Compare(a, b)
				if name == "version" {
					c = compareVersions(a, b)
				}
				if c != 0 {
					return (c < 0) != desc
				}
			}
			return false
		})
	}
	fieldsOut := clusterNodeFields
	if sel != nil {
		fieldsOut = sel
	}
	var items []any
	seen := map[string]bool{}
	for _, n := range nodes {
		item := orderedObject{}
		for _, f := range fieldsOut {
			item = append(item, kvAny{f, nodeField(n, f)})
		}
		if first(q, "distinct") == "true" {
			k := fmt.Sprint(item)
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		items = append(items, item)
	}
	total := len(items)
	page := items[min(offset, total):min(offset+limit, total)]
	if page == nil {
		page = []any{}
	}
	writeJSON(w, r, 200, affected(page, total, &fails, "All selected nodes information was returned",
		"Some nodes information was not returned", "No information was returned"))
}
