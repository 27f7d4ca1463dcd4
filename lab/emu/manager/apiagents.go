package manager

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// ---- agents ----

func (s *APIServer) handleGetAgents(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	params := []string{"agents_list", "offset", "limit", "select", "sort", "search", "status", "q", "older_than", "distinct"}
	for p := range agentFilterParams {
		params = append(params, p)
	}
	if !checkParams(w, r, params...) {
		return
	}
	offset, limit, ok := parsePage(w, q)
	if !ok {
		return
	}
	ids, _, ok := parseIDList(w, first(q, "agents_list"), false)
	if !ok {
		return
	}
	var sel map[string]bool
	if v := first(q, "select"); v != "" {
		sel = map[string]bool{}
		for _, f := range strings.Split(v, ",") {
			if !validField(f) {
				writeWazuhError(w, 400, 1724, fmt.Sprintf("Allowed select fields: %s. Fields: %s", strings.Join(agentFields, ", "), f))
				return
			}
			sel[f] = true
		}
	}
	type sortKey struct {
		field string
		desc  bool
	}
	var sorts []sortKey
	if v := first(q, "sort"); v != "" {
		for _, f := range strings.Split(v, ",") {
			k := sortKey{field: strings.TrimLeft(f, "+- "), desc: strings.HasPrefix(f, "-")}
			if !validField(k.field) {
				writeWazuhError(w, 400, 1403, fmt.Sprintf("Allowed sort fields: %s. Fields: %s", strings.Join(agentFields, ", "), k.field))
				return
			}
			sorts = append(sorts, k)
		}
	}
	filter, ok := s.parseFilter(w, q, false)
	if !ok {
		return
	}
	agents, ok := s.loadAgents(w)
	if !ok {
		return
	}
	c := s.viewCtx(agents)
	var fails failures
	var matched []*Agent
	if ids != nil {
		byID := indexAgents(agents)
		seen := map[int]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			a, ok := byID[id]
			if !ok {
				fails.add(werr(1701, ""), fmt.Sprintf("%03d", id))
				continue
			}
			if filter.match(c, a) {
				matched = append(matched, a)
			}
		}
		sort.Slice(matched, func(i, j int) bool { return matched[i].ID < matched[j].ID })
	} else {
		matched = make([]*Agent, 0, min(len(agents), 1024))
		for _, a := range agents {
			if filter.match(c, a) {
				matched = append(matched, a)
			}
		}
	}
	if len(sorts) > 0 {
		type skey struct {
			s   string
			n   float64
			num bool
		}
		keys := make([][]skey, len(matched))
		for i, a := range matched {
			ks := make([]skey, len(sorts))
			for j, sk := range sorts {
				switch sk.field {
				case "id":
					ks[j] = skey{n: float64(a.ID), num: true}
				case "lastKeepAlive":
					ks[j] = skey{n: float64(c.lastKeepAlive(a)), num: true}
				case "dateAdd":
					ks[j] = skey{n: float64(a.DateAdd), num: true}
				default:
					ks[j] = skey{s: c.field(a, sk.field)}
				}
			}
			keys[i] = ks
		}
		idx := make([]int, len(matched))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(x, y int) bool {
			ki, kj := keys[idx[x]], keys[idx[y]]
			for n, sk := range sorts {
				cmp := 0
				switch {
				case ki[n].num && ki[n].n < kj[n].n:
					cmp = -1
				case ki[n].num && ki[n].n > kj[n].n:
					cmp = 1
				case !ki[n].num && sk.field == "version":
					cmp = compareVersions(ki[n].s, kj[n].s)
				case !ki[n].num:
					cmp = strings.Compare(ki[n].s, kj[n].s)
				}
				if cmp != 0 {
					return (cmp < 0) != sk.desc
				}
			}
			return false
		})
		sorted := make([]*Agent, len(matched))
		for i, j := range idx {
			sorted[i] = matched[j]
		}
		matched = sorted
	}
	total := len(matched)
	page := matched[min(offset, total):min(offset+limit, total)]
	body := make([]byte, 0, 256+len(page)*400)
	body = append(body, `{"data":{"affected_items":[`...)
	for i, a := range page {
		if i > 0 {
			body = append(body, ',')
		}
		body = c.appendAgentJSON(body, a, sel)
	}
	fb, _ := marshalNoEscape(fails.items())
	body = fmt.Appendf(body, `],"total_affected_items":%d,"total_failed_items":%d,"failed_items":%s},"message":%q,"error":%d}`,
		total, fails.count, fb,
		resultMessage(total, fails.count, "All selected agents information was returned", "Some agents information was not returned", "No agent information was returned"),
		envelopeCode(total, fails.count))
	writeBody(w, r, 200, body)
}

func indexAgents(agents []*Agent) map[int]*Agent {
	m := make(map[int]*Agent, len(agents))
	for _, a := range agents {
		m[a.ID] = a
	}
	return m
}

func (s *APIServer) handleSummary(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	agents, ok := s.loadAgents(w)
	if !ok {
		return
	}
	c := s.viewCtx(agents)
	counts := map[string]int{}
	synced, total := 0, 0
	for _, a := range agents {
		if a.ID == 0 {
			continue
		}
		total++
		counts[c.status(a)]++
		if a.Synced {
			synced++
		}
	}
	writeJSON(w, r, 200, orderedObject{{"data", orderedObject{
		{"connection", orderedObject{{"active", counts[StatusActive]}, {"disconnected", counts[StatusDisconnected]},
			{"never_connected", counts[StatusNeverConnected]}, {"pending", counts[StatusPending]}, {"total", total}}},
		{"configuration", orderedObject{{"synced", synced}, {"not_synced", total - synced}, {"total", total}}},
	}}, {"error", 0}})
}

func (s *APIServer) handleRestart(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	var ids []int
	explicit := false
	if pid := r.PathValue("agent_id"); pid != "" {
		if !checkParams(w, r) {
			return
		}
		l, _, ok := parseIDList(w, pid, false)
		if !ok {
			return
		}
		ids, explicit = l, true
	} else {
		if !checkParams(w, r, "agents_list") {
			return
		}
		l, _, ok := parseIDList(w, first(q, "agents_list"), false)
		if !ok {
			return
		}
		ids, explicit = l, l != nil
	}
	agents, ok := s.loadAgents(w)
	if !ok {
		return
	}
	c := s.viewCtx(agents)
	byID := indexAgents(agents)
	if !explicit {
		ids = ids[:0]
		for _, a := range agents {
			ids = append(ids, a.ID)
		}
	}
	var fails failures
	done := []string{}
	fail := func(code int, sid string) {
		if explicit {
			fails.add(werr(code, ""), sid)
		}
	}
	eachRequested(ids, byID, fail, func(sid string, a *Agent) {
		if c.status(a) != StatusActive {
			fail(1707, sid)
			return
		}
		done = append(done, sid)
	})
	sort.Strings(done)
	if len(done) > 0 {
		s.o.Logger.Info("restart command sent", "agents", len(done))
	}
	writeJSON(w, r, 200, affected(done, len(done), &fails, "Restart command was sent to all agents",
		"Restart command was not sent to some agents", "Restart command was not sent to any agent"))
}

// eachRequested walks the distinct agent ids of a request in their order: the manager (000) goes to
// fail with the real API's 1703, an unknown id with 1701, every other agent to ok.
func eachRequested(ids []int, byID map[int]*Agent, fail func(code int, sid string), ok func(sid string, a *Agent)) {
	seen := map[int]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		sid := fmt.Sprintf("%03d", id)
		a, found := byID[id]
		switch {
		case id == 0:
			fail(1703, sid)
		case !found:
			fail(1701, sid)
		default:
			ok(sid, a)
		}
	}
}

func (s *APIServer) handleDeleteAgents(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	// DELETE /agents declares neither search nor group_config_status.
	params := []string{"agents_list", "status", "older_than", "purge", "q"}
	for p := range agentFilterParams {
		if p != "group_config_status" {
			params = append(params, p)
		}
	}
	if !checkParams(w, r, params...) {
		return
	}
	if _, ok := q["agents_list"]; !ok {
		badParam(w, "Missing query parameter 'agents_list'")
		return
	}
	if _, ok := q["status"]; !ok {
		badParam(w, "Missing query parameter 'status'")
		return
	}
	ids, all, ok := parseIDList(w, first(q, "agents_list"), true)
	if !ok {
		return
	}
	if !all && len(ids) == 0 {
		badParam(w, "[] is too short")
		return
	}
	if _, ok := q["older_than"]; !ok {
		q.Set("older_than", "7d")
	}
	purge := first(q, "purge") == "true"
	filter, ok := s.parseFilter(w, q, true)
	if !ok {
		return
	}
	if conf, err := s.loadConfig(); err == nil && conf.AuthDisabled {
		writeWazuhError(w, 400, 1726, "")
		return
	}
	var fails failures
	var removed []*Agent
	extra := fmt.Sprintf("some of the requirements are not met -> older_than: %s, status: %s", first(q, "older_than"), pyList(filter.status))
	err := s.agents.Update(func(cur []*Agent) ([]*Agent, bool, error) {
		c := s.viewCtx(cur)
		byID := indexAgents(cur)
		del := map[int]bool{}
		if all {
			for _, a := range cur {
				if a.ID != 0 && filter.match(c, a) {
					del[a.ID] = true
				}
			}
		} else {
			fail := func(code int, sid string) { fails.add(werr(code, ""), sid) }
			eachRequested(ids, byID, fail, func(sid string, a *Agent) {
				if !filter.match(c, a) {
					fails.add(werr(1731, extra), sid)
					return
				}
				del[a.ID] = true
			})
		}
		if len(del) == 0 {
			return nil, false, nil
		}
		next := make([]*Agent, 0, len(cur)-len(del))
		for _, a := range cur {
			if del[a.ID] {
				removed = append(removed, a)
			} else {
				next = append(next, a)
			}
		}
		return next, true, nil
	})
	if err != nil {
		s.o.Logger.Error("delete agents", "err", err)
		writeProblem(w, 500, problem{Detail: "Error deleting an agent", Error: 1757})
		return
	}
	if !purge {
		if err := markRemoved(s.o.Home.ClientKeys(), removed); err != nil {
			s.o.Logger.Error("client.keys", "err", err)
		}
	}
	done := make([]string, 0, len(removed))
	for _, a := range removed {
		done = append(done, a.IDString())
	}
	sort.Strings(done)
	writeJSON(w, r, 200, affected(done, len(done), &fails, "All selected agents were deleted", "Some agents were not deleted", "No agents were deleted"))
}

func pyList(v []string) string {
	if len(v) == 0 {
		return "None"
	}
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}
