package manager

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// The upgrade endpoints (framework/wazuh/agent.py upgrade_agents, get_upgrade_result): the API checks
// the agents first (000: 1703, unknown: 1701, not matching the filters: 1731, not active: 1707), then
// hands the rest to the upgrade module in chunks, whose per-agent refusals (1819 no WPK, 1820 already
// upgrading, 1821 too old for a remote upgrade, 1822 version greater or equal) come back as
// failed_items and whose request-wide ones (1823 above the manager without force, 1825 no such WPK
// version) as HTTP 500. With agents_list=all, the refusals are left out of failed_items (the
// framework's exclude_codes: 1703, 1707, 1731 and the module's codes).

var (
	reWazuhVersion = regexp.MustCompile(`^(?:[Ww]azuh )?[vV]?\d+\.\d+\.\d+$`)
	rePath         = regexp.MustCompile(`^[\w\-.\\/:]+$`)
	reWPKPath      = regexp.MustCompile(`^[\w\-./]+\.wpk$`)
)

// upgradeFilterParams are the agent filters the upgrade endpoints take (manager is the spec's
// manager_host parameter).
var upgradeFilterParams = []string{"q", "os.platform", "os.version", "os.name", "manager", "version", "group", "node_name", "name", "ip", "registerIP"}

// moduleErrors are the upgrade module's (and the task manager's) refusals the API answers with code 1810 +
// the module's code: the framework reserves 1810–1899 for them and answers the module's own message
// (exception 1810), so they are not in errorCatalog.
var moduleErrors = map[int]wazuhError{
	1813: {Message: "No task in DB"},
	1819: {Message: msgNoWPK},
	1820: {Message: msgAlreadyUpgrade},
	1821: {Message: msgNotMinimal},
	1822: {Message: msgGreaterEqual},
	1823: {Message: "Upgrading an agent to a version higher than the manager requires the force flag"},
	1825: {Message: "The version of the WPK does not exist in the repository"},
}

// merr is a module refusal with its code.
func merr(code int) wazuhError {
	e := moduleErrors[code]
	e.Code = code
	return e
}

// upgradeParams validates the query of an upgrade endpoint; extra names its own parameters.
func upgradeParams(w http.ResponseWriter, r *http.Request, required []string, extra ...string) bool {
	if !checkParams(w, r, append(append([]string{"agents_list"}, upgradeFilterParams...), extra...)...) {
		return false
	}
	q := queryOf(r)
	for _, p := range required {
		if first(q, p) == "" {
			badParam(w, fmt.Sprintf("Missing query parameter '%s'", p))
			return false
		}
	}
	for k, vs := range q {
		for _, v := range vs {
			msg := ""
			switch k {
			case "use_http", "force":
				if v != "true" && v != "false" {
					msg = fmt.Sprintf("'%s' is not of type 'boolean'", v)
				}
			case "package_type":
				if v != "rpm" && v != "deb" {
					msg = fmt.Sprintf("'%s' is not one of ['rpm', 'deb']", v)
				}
			case "upgrade_version":
				if !reWazuhVersion.MatchString(v) {
					msg = fmt.Sprintf("'%s' is not a 'wazuh_version'", v)
				}
			case "wpk_repo":
				if !rePath.MatchString(v) {
					msg = fmt.Sprintf("'%s' is not a 'path'", v)
				}
			case "file_path":
				if !reWPKPath.MatchString(v) {
					msg = fmt.Sprintf("'%s' is not a 'wpk_path'", v)
				}
			case "installer":
				if !reAlphanumeric.MatchString(v) {
					msg = fmt.Sprintf("'%s' is not a 'alphanumeric'", v)
				}
			}
			if msg != "" {
				badParam(w, msg)
				return false
			}
		}
	}
	return true
}

// upgradeSelection resolves agents_list and the filters: the agents to hand on, in id order, and the
// failures so far. explicit is false for agents_list=all (or, on upgrade_result, no list).
func (s *APIServer) upgradeSelection(w http.ResponseWriter, r *http.Request, allowAll bool) (sel []*Agent, c *viewCtx, fails *failures, explicit, ok bool) {
	q := queryOf(r)
	ids, all, ok := parseIDList(w, first(q, "agents_list"), allowAll)
	if !ok {
		return nil, nil, nil, false, false
	}
	explicit = !all && ids != nil
	fq := map[string][]string{}
	for _, p := range upgradeFilterParams {
		if v, has := q[p]; has {
			fq[p] = v
		}
	}
	f, ok := s.parseFilter(w, fq, false)
	if !ok {
		return nil, nil, nil, false, false
	}
	agents, ok := s.loadAgents(w)
	if !ok {
		return nil, nil, nil, false, false
	}
	if localOnly(r) {
		agents = localAgents(agents)
	}
	c = s.viewCtx(agents)
	byID := indexAgents(agents)
	if !explicit {
		ids = ids[:0]
		for _, a := range agents {
			ids = append(ids, a.ID)
		}
	}
	fails = &failures{}
	fail := func(code int, sid string) {
		if explicit {
			fails.add(werr(code, ""), sid)
		}
	}
	eachRequested(ids, byID, fail, func(sid string, a *Agent) {
		switch {
		case !f.match(c, a):
			fail(1731, sid)
		case c.status(a) != StatusActive:
			fail(1707, sid)
		default:
			sel = append(sel, a)
		}
	})
	sort.Slice(sel, func(i, j int) bool { return sel[i].ID < sel[j].ID })
	return sel, c, fails, explicit, true
}

type taskCreated struct {
	Agent  string `json:"agent"`
	TaskID int    `json:"task_id"`
}

func (s *APIServer) handleUpgrade(w http.ResponseWriter, r *http.Request) {
	custom := strings.HasSuffix(r.URL.Path, "/upgrade_custom")
	ok := false
	if custom {
		ok = upgradeParams(w, r, []string{"agents_list", "file_path"}, "file_path", "installer")
	} else {
		ok = upgradeParams(w, r, []string{"agents_list"}, "wpk_repo", "upgrade_version", "use_http", "force", "package_type")
	}
	if !ok {
		return
	}
	if s.distributes(r) {
		s.upgradeDistributed(w, r)
		return
	}
	sel, c, fails, explicit, ok := s.upgradeSelection(w, r, true)
	if !ok {
		return
	}
	q := queryOf(r)
	conf, _ := s.loadConfig()
	tm := timingOf(conf)
	now := s.o.Now()
	manager := strings.TrimPrefix(c.managerVersion, "v")
	target := manager
	if v := first(q, "upgrade_version"); v != "" && !custom {
		target = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(v, "Wazuh "), "wazuh "), "v")
		target = strings.TrimPrefix(target, "V")
	}
	force := first(q, "force") == "true"
	moduleFail := func(code int, sid string) {
		if explicit {
			fails.add(merr(code), sid)
		}
	}
	if len(sel) > 0 && !custom {
		// Request-wide refusals of the module: HTTP 500.
		if compareVersions(target, manager) > 0 {
			if !force {
				e := merr(1823)
				writeProblem(w, 500, problem{Title: "Wazuh Error", Detail: e.Message, Error: e.Code})
				return
			}
			e := merr(1825)
			writeProblem(w, 500, problem{Title: "Wazuh Error", Detail: e.Message, Error: e.Code})
			return
		}
	}
	m := s.upgrades
	m.mu.Lock()
	created := []taskCreated{}
	noWPK := s.o.Faults.Active(faults.UpgradeNoWPK)
	noWPKFor := parseNoWPK(s.o.Faults.Arg(faults.UpgradeNoWPK))
	refuse := s.o.Faults.Active(faults.UpgradeBulkRefused)
	fileOK := !custom || s.customFileExists(first(q, "file_path"))
	for _, a := range sel {
		sid := a.IDString()
		cur := c.version(a)
		platform, faulted := "", noWPK && len(noWPKFor) == 0
		if o := c.os(a); o != nil {
			platform = o.Platform
			faulted = faulted || noWPK && noWPKFor.match(o)
		}
		switch t := m.tasks[a.ID]; {
		case t != nil && t.live(now, tm):
			moduleFail(1820, sid)
			continue
		case !custom && (faulted || noWPKPlatforms[strings.ToLower(platform)]):
			moduleFail(1819, sid)
			continue
		case !custom && compareVersions(cur, "3.0.0") < 0:
			moduleFail(1821, sid)
			continue
		case !custom && compareVersions(target, "5.0.0") >= 0 && compareVersions(cur, "4.14.0") < 0:
			if explicit {
				fails.add(wazuhError{Code: 1822, Message: msgDirect5}, sid)
			}
			continue
		case !custom && !force && compareVersions(cur, target) >= 0:
			moduleFail(1822, sid)
			continue
		}
		fate := faultFate(s.o.Faults, m.nextID)
		if !fileOK {
			fate = "nowpk-file"
		}
		command := "upgrade"
		if custom {
			command = "upgrade_custom"
		}
		t := m.create(a.ID, c.nodeName, command, versionTag(target), now, conf, fate, refuse)
		created = append(created, taskCreated{Agent: sid, TaskID: t.ID})
	}
	m.mu.Unlock()
	if len(created) > 0 {
		s.o.Logger.Info("upgrade tasks created", "agents", len(created), "target", target)
	}
	writeJSON(w, r, 200, affected(created, len(created), fails, "All upgrade tasks were created",
		"Some agents were not upgraded", "No upgrade task was created"))
}

func (s *APIServer) handleUpgradeResult(w http.ResponseWriter, r *http.Request) {
	if !upgradeParams(w, r, nil) {
		return
	}
	sel, _, fails, explicit, ok := s.upgradeSelection(w, r, false)
	if !ok {
		return
	}
	conf, _ := s.loadConfig()
	tm := timingOf(conf)
	now := s.o.Now()
	items := []orderedObject{}
	m := s.upgrades
	m.mu.Lock()
	for _, a := range sel {
		t := m.tasks[a.ID]
		if t == nil {
			if explicit {
				fails.add(merr(1813), a.IDString())
			}
			continue
		}
		items = append(items, s.remoteTaskItem(t, now, tm))
	}
	m.mu.Unlock()
	writeJSON(w, r, 200, affected(items, len(items), fails, "All upgrade tasks were returned",
		"Some upgrade tasks were not returned", "No upgrade task was returned"))
}

// noWPKSelector is the upgrade-no-wpk fault's argument: the platforms whose WPK is missing, each
// PLATFORM (os.platform or os.name) or PLATFORM/ARCH (and os.arch), comma separated.
type noWPKSelector []struct{ platform, arch string }

func parseNoWPK(arg string) noWPKSelector {
	var out noWPKSelector
	for _, part := range strings.Split(arg, ",") {
		p, a, _ := strings.Cut(strings.ToLower(strings.TrimSpace(part)), "/")
		if p != "" {
			out = append(out, struct{ platform, arch string }{p, a})
		}
	}
	return out
}

func (sel noWPKSelector) match(o *OS) bool {
	for _, s := range sel {
		if (s.platform == strings.ToLower(o.Platform) || s.platform == strings.ToLower(o.Name)) && (s.arch == "" || s.arch == strings.ToLower(o.Arch)) {
			return true
		}
	}
	return false
}
