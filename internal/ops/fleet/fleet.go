// Package fleet is siemctl's view of the manager's agents: streamed listing
// (the manager API, paginated, with the agent control tool as a fallback when
// the API is down), one agent's details, restart and removal with per-agent
// outcomes, and the agents whose version is out of line with the manager
// (newer.go: the one "agents newer than X" verdict that `agents outdated`,
// the agents health check and gate.agents read).
// Inputs (ids, statuses, durations, versions) are validated before anything
// is sent.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
)

// DefaultPageSize is the GET /agents page size: 50 requests for 100,000
// agents, which leaves most of the API's shared 300 requests/minute to
// everybody else, while each page is still decoded as a stream.
const DefaultPageSize = 2000

// API is the part of the manager API client the fleet uses (*manager.Client).
type API interface {
	Agents(ctx context.Context, q manager.AgentQuery) iter.Seq2[manager.Agent, error]
	Agent(ctx context.Context, id string) (manager.Agent, error)
	RestartAgents(ctx context.Context, ids []string) (manager.Result, error)
	RestartAllAgents(ctx context.Context) (manager.Result, error)
	DeleteAgents(ctx context.Context, ids []string, opts manager.DeleteOptions) (manager.Result, error)
	ManagerInfo(ctx context.Context) (manager.ManagerInfo, error)
}

// Tools is the part of the manager's command-line tools the fleet uses
// (manager.Tools).
type Tools interface {
	AgentList(ctx context.Context, f manager.AgentListFilter) ([]manager.ToolAgent, error)
	AgentInfo(ctx context.Context, id string) (manager.ToolAgentInfo, error)
}

// Statuses are the agent statuses the API knows.
var Statuses = []string{manager.AgentActive, manager.AgentDisconnected, manager.AgentNeverConnected, manager.AgentPending}

// ErrInvalidInput marks bad ids, statuses, durations or versions: nothing
// was sent.
var ErrInvalidInput = errors.New("invalid input")

// ValidateStatuses accepts the API's four statuses.
func ValidateStatuses(ss []string) error {
	for _, s := range ss {
		if !slices.Contains(Statuses, s) {
			return fmt.Errorf("%w: status %q: use %s", ErrInvalidInput, s, strings.Join(Statuses, ", "))
		}
	}
	return nil
}

var olderThanRE = regexp.MustCompile(`^([0-9]{1,9})([smhd]?)$`)

// ValidateOlderThan accepts the API's timeframes: 30s, 15m, 12h, 7d or bare
// seconds.
func ValidateOlderThan(d string) error {
	m := olderThanRE.FindStringSubmatch(d)
	if m == nil {
		return fmt.Errorf("%w: --older-than %q: use a number with s, m, h or d, like 30m or 7d", ErrInvalidInput, d)
	}
	return nil
}

// ValidateIDs checks agent ids (manager.ValidateAgentID) each; 000 (the manager itself)
// refused when forAction is true (restart, remove). Every bad id is reported.
func ValidateIDs(ids []string, action string) error {
	if len(ids) == 0 {
		return fmt.Errorf("%w: no agent id given", ErrInvalidInput)
	}
	var errs []error
	for _, id := range ids {
		if err := manager.ValidateAgentID(id); err != nil {
			errs = append(errs, err)
			continue
		}
		if action != "" && id == manager.ManagerAgentID {
			errs = append(errs, fmt.Errorf("%w: cannot %s agent 000, it is the manager itself; use `siemctl services %s manager`", manager.ErrManagerAgent, action, serviceVerb(action)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return nil
}

func serviceVerb(action string) string {
	if action == "remove" {
		return "stop"
	}
	return action
}

// ParseVersion reads a version for --than (4.9.0, v4.9.0).
func ParseVersion(s string) (manager.Version, error) {
	v, err := manager.ParseVersion(s)
	if err != nil || strings.Contains(strings.TrimSpace(s), " ") {
		return manager.Version{}, fmt.Errorf("%w: version %q: use major.minor.patch like 4.9.0", ErrInvalidInput, s)
	}
	return v, nil
}

// APIDown reports whether err means the manager API cannot answer right
// now (unreachable, timing out, daemons not ready, a gateway error), as
// opposed to refusing the request: then the command-line tools are the
// fallback.
func APIDown(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, netclient.ErrUnreachable) || errors.Is(err, netclient.ErrTimeout) || errors.Is(err, netclient.ErrNotReady) {
		return true
	}
	var ae *manager.APIError
	return errors.As(err, &ae) && ae.Status >= 500 && ae.Code == 0
}

// Row is one agent as listed.
type Row struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	IP            string    `json:"ip"`
	Status        string    `json:"status"`
	Version       string    `json:"version"`
	LastKeepAlive time.Time `json:"-"`
	DateAdd       time.Time `json:"-"`
	Group         []string  `json:"group"`
	OS            string    `json:"os"`
	NodeName      string    `json:"node_name"`
}

func rowFromAgent(a *manager.Agent, r *Row) {
	*r = Row{ID: a.ID, Name: a.Name, IP: a.IP, Status: a.Status, Version: a.Version, LastKeepAlive: a.LastKeepAlive,
		DateAdd: a.DateAdd, Group: a.Group, NodeName: a.NodeName, OS: strings.TrimSpace(a.OS.Name + " " + a.OS.Version)}
	if r.Group == nil {
		r.Group = []string{}
	}
}

// Source says where a listing came from.
type Source string

// Sources.
const (
	SourceAPI  Source = "api"
	SourceTool Source = "agent_control"
)

// ListQuery filters a listing.
type ListQuery struct {
	Status    []string
	OlderThan string // API timeframe; not possible through the tool
	PageSize  int    // default DefaultPageSize
	// PageTimeout bounds the wait for each part of the API's answer (0:
	// only ctx): a listing of 100,000 agents may take longer, no page may.
	PageTimeout time.Duration
	// ToolTimeout is the agent control tool's own budget when the API is
	// down (0: only ctx), never what the API attempt left of a deadline.
	ToolTimeout time.Duration
}

// Listing is the outcome of List.
type Listing struct {
	Source Source
	// APIErr is why the API was not used (Source == SourceTool).
	APIErr error
	Count  int
}

// List streams the agents matching q to emit, page by page, from the API.
// If the API is down before the first agent arrives, it lists through the
// agent control tool instead (fewer fields; --older-than impossible) and
// says so in the Listing. emit must not keep r: it is reused.
func List(ctx context.Context, api API, tools Tools, q ListQuery, emit func(r *Row) error) (Listing, error) {
	if err := ValidateStatuses(q.Status); err != nil {
		return Listing{}, err
	}
	if q.OlderThan != "" {
		if err := ValidateOlderThan(q.OlderThan); err != nil {
			return Listing{}, err
		}
	}
	size := q.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	lst := Listing{Source: SourceAPI}
	var row Row
	var apiErr error
	if api != nil {
		apiCtx, touch, stop := IdleDeadline(ctx, q.PageTimeout)
		for a, err := range api.Agents(apiCtx, manager.AgentQuery{Status: q.Status, OlderThan: q.OlderThan, Limit: size}) {
			if err != nil {
				apiErr = err
				break
			}
			rowFromAgent(&a, &row)
			if err := emit(&row); err != nil {
				stop()
				return lst, err
			}
			lst.Count++
			if lst.Count%256 == 0 {
				touch()
			}
		}
		// The API's own deadline ended, not the caller's: the API is down
		// (hung), and the tool still has its whole budget.
		timedOut := apiErr != nil && apiCtx.Err() != nil && ctx.Err() == nil
		if timedOut {
			apiErr = apiCtx.Explain(apiErr)
		}
		stop()
		if apiErr == nil {
			return lst, nil
		}
		if lst.Count > 0 || !(timedOut || APIDown(apiErr)) || tools == nil || ctx.Err() != nil {
			return lst, fmt.Errorf("list agents: %w", apiErr)
		}
	}
	if q.OlderThan != "" {
		return lst, fmt.Errorf("list agents: %w (agent_control cannot filter by --older-than; retry when the API is back)", apiErr)
	}
	lst.Source, lst.APIErr = SourceTool, apiErr
	filter := manager.ListAll
	switch {
	case len(q.Status) == 1 && q.Status[0] == manager.AgentActive:
		filter = manager.ListActive
	case len(q.Status) == 1 && q.Status[0] == manager.AgentDisconnected:
		filter = manager.ListDisconnected
	}
	toolCtx, cancel := ctx, context.CancelFunc(func() {})
	if q.ToolTimeout > 0 {
		toolCtx, cancel = context.WithTimeout(ctx, q.ToolTimeout)
	}
	agents, err := tools.AgentList(toolCtx, filter)
	cancel()
	if err != nil {
		if apiErr != nil {
			return lst, fmt.Errorf("list agents: API: %w; agent_control: %w", apiErr, err)
		}
		return lst, fmt.Errorf("list agents with agent_control: %w", err)
	}
	sort.SliceStable(agents, func(i, j int) bool { return agents[i].ID < agents[j].ID })
	for _, a := range agents {
		if len(q.Status) > 0 && !slices.Contains(q.Status, a.Status) {
			continue
		}
		row = Row{ID: a.ID, Name: a.Name, IP: a.IP, Status: a.Status, Group: []string{}}
		if err := emit(&row); err != nil {
			return lst, err
		}
		lst.Count++
	}
	return lst, nil
}

// Detail is one agent's details.
type Detail struct {
	Source Source `json:"source"`
	// APIErr is why the API was not used.
	APIErr        error     `json:"-"`
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	IP            string    `json:"ip"`
	RegisterIP    string    `json:"register_ip,omitempty"`
	Status        string    `json:"status"`
	Version       string    `json:"version,omitempty"` // absent: never connected
	OS            string    `json:"os,omitempty"`
	Platform      string    `json:"platform,omitempty"`
	Group         []string  `json:"group"`
	NodeName      string    `json:"node_name,omitempty"`
	Manager       string    `json:"manager,omitempty"`
	DateAdd       time.Time `json:"date_add,omitzero"`
	LastKeepAlive time.Time `json:"last_keep_alive,omitzero"`
	ConfigHash    string    `json:"config_hash,omitempty"`
}

// Show returns one agent (000 included), from the API or, when it is down,
// from `agent_control -i`.
func Show(ctx context.Context, api API, tools Tools, id string) (Detail, error) {
	if err := ValidateIDs([]string{id}, ""); err != nil {
		return Detail{}, err
	}
	var apiErr error
	if api != nil {
		a, err := api.Agent(ctx, id)
		if err == nil {
			return Detail{Source: SourceAPI, ID: a.ID, Name: a.Name, IP: a.IP, RegisterIP: a.RegisterIP, Status: a.Status,
				Version: a.Version, OS: strings.TrimSpace(a.OS.Name + " " + a.OS.Version), Platform: a.OS.Platform,
				Group: nonNil(a.Group), NodeName: a.NodeName, Manager: a.Manager, DateAdd: a.DateAdd, LastKeepAlive: a.LastKeepAlive}, nil
		}
		if !APIDown(err) || tools == nil {
			return Detail{}, explainItem(err)
		}
		apiErr = err
	}
	info, err := tools.AgentInfo(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("agent %s: API: %w; agent_control: %w", id, apiErr, err)
	}
	return Detail{Source: SourceTool, APIErr: apiErr, ID: info.ID, Name: info.Name, IP: info.IP, Status: info.Status,
		Version: info.Version, OS: info.OS, Group: []string{}, LastKeepAlive: info.LastKeepAlive, ConfigHash: info.ConfigHash}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// explainItem adds the code's explanation to a per-item error.
func explainItem(err error) error {
	var ie *manager.ItemError
	if errors.As(err, &ie) {
		if x := ie.Explanation(); x != "" {
			return fmt.Errorf("%w: %s", err, x)
		}
	}
	return err
}

// Outcome of an action on one agent.
type Outcome struct {
	ID          string `json:"id"`
	OK          bool   `json:"ok"`
	Code        int    `json:"code,omitempty"`
	Message     string `json:"message,omitempty"`
	Explanation string `json:"explanation,omitempty"`
}

// Outcomes is the per-agent result of an action.
type Outcomes struct {
	Action string `json:"action"`
	// Source is "manage_agents" when the tool did (some of) the work.
	Source   string    `json:"source,omitempty"`
	Message  string    `json:"message"`
	Agents   []Outcome `json:"agents"`
	OK       int       `json:"ok"`
	Failed   int       `json:"failed"`
	Complete bool      `json:"complete"`
}

func outcomesOf(action string, requested []string, r manager.Result) Outcomes {
	o := Outcomes{Action: action, Message: r.Message, Agents: []Outcome{}}
	byID := map[string]Outcome{}
	for _, id := range r.Affected {
		byID[id] = Outcome{ID: id, OK: true}
	}
	for _, f := range r.Failed {
		for _, id := range f.IDs {
			byID[id] = Outcome{ID: id, Code: f.Code, Message: f.Message, Explanation: f.Explanation()}
		}
	}
	seen := map[string]bool{}
	add := func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		out, ok := byID[id]
		if !ok {
			// The manager said nothing about this id: not confirmed.
			out = Outcome{ID: id, Message: "no answer for this agent"}
		}
		o.Agents = append(o.Agents, out)
		if out.OK {
			o.OK++
		} else {
			o.Failed++
		}
	}
	for _, id := range requested {
		add(id)
	}
	rest := make([]string, 0, len(byID))
	for id := range byID {
		if !seen[id] {
			rest = append(rest, id)
		}
	}
	sort.Strings(rest)
	for _, id := range rest {
		add(id)
	}
	o.Complete = o.Failed == 0
	return o
}

// Restart sends a restart to ids (validated first: three digits, not 000).
// Per-agent failures (1701 unknown, 1703 manager, 1707 not active, 1750 AR
// disabled) are in the outcomes, explained.
func Restart(ctx context.Context, api API, ids []string) (Outcomes, error) {
	if err := ValidateIDs(ids, "restart"); err != nil {
		return Outcomes{}, err
	}
	r, err := api.RestartAgents(ctx, dedupe(ids))
	if err != nil {
		return Outcomes{}, fmt.Errorf("restart agents: %w", err)
	}
	return outcomesOf("restart", dedupe(ids), r), nil
}

// RestartAll restarts every agent; the manager leaves out agents it could
// not reach (1701/1703/1707), so failures are real ones.
func RestartAll(ctx context.Context, api API) (Outcomes, error) {
	r, err := api.RestartAllAgents(ctx)
	if err != nil {
		return Outcomes{}, fmt.Errorf("restart all agents: %w", err)
	}
	return outcomesOf("restart", nil, r), nil
}

// Remove deletes ids (validated first) whatever their status and age
// (status=all, older_than=0s: the API's default 7d would refuse recently
// seen agents with 1731).
func Remove(ctx context.Context, api API, tools Remover, ids []string) (Outcomes, error) {
	if err := ValidateIDs(ids, "remove"); err != nil {
		return Outcomes{}, err
	}
	ids = dedupe(ids)
	r, err := api.DeleteAgents(ctx, ids, removeOptions)
	if err != nil {
		if !APIDown(err) || tools == nil || ctx.Err() != nil {
			return Outcomes{}, fmt.Errorf("remove agents: %w", err)
		}
		o := Outcomes{Action: "remove", Source: SourceRemoveTool, Agents: []Outcome{},
			Message: fmt.Sprintf("the manager API is down (%v): removed with manage_agents", err)}
		for _, id := range ids {
			o.add(removeWithTool(ctx, tools, id))
		}
		o.Complete = o.Failed == 0
		return o, nil
	}
	o := outcomesOf("remove", ids, r)
	// authd could not remove some (9011): manage_agents asks it again
	// through its own channel and says whether the id exists at all.
	if tools == nil {
		return o, nil
	}
	retried := false
	for i, a := range o.Agents {
		if a.OK || a.Code != codeAuthdNotFound {
			continue
		}
		retried = true
		out := removeWithTool(ctx, tools, a.ID)
		if out.OK {
			o.OK++
			o.Failed--
		}
		o.Agents[i] = out
	}
	if retried {
		o.Source = SourceRemoveTool
		o.Complete = o.Failed == 0
		o.Message = fmt.Sprintf("authd refused some removals through the API (%d); manage_agents asked it again. %s", codeAuthdNotFound, o.Message)
	}
	return o, nil
}

// Remover removes an agent with the manager's own tool (manage_agents -r;
// manager.Tools.RemoveAgent): the fallback when the API cannot.
type Remover interface {
	RemoveAgent(ctx context.Context, id string) error
}

// SourceRemoveTool marks outcomes (some) obtained with manage_agents.
const SourceRemoveTool = "manage_agents"

// codeAuthdNotFound is authd's "Agent ID not found" (9011), which the API
// passes on when authd refuses a removal.
const codeAuthdNotFound = 9011

func removeWithTool(ctx context.Context, tools Remover, id string) Outcome {
	err := tools.RemoveAgent(ctx, id)
	switch {
	case err == nil:
		return Outcome{ID: id, OK: true, Message: "removed with manage_agents"}
	case errors.Is(err, manager.ErrAgentNotFound):
		return Outcome{ID: id, Code: 1701, Message: "agent not found (manage_agents)", Explanation: "no agent has this id: see siemctl agents list"}
	}
	return Outcome{ID: id, Message: "manage_agents: " + err.Error()}
}

func (o *Outcomes) add(a Outcome) {
	o.Agents = append(o.Agents, a)
	if a.OK {
		o.OK++
	} else {
		o.Failed++
	}
}

// removeOptions: whatever their status and age (see Remove).
var removeOptions = manager.DeleteOptions{Status: []string{"all"}, OlderThan: "0s"}

// RestartCalls are the requests Restart (ids) or RestartAll (all) sends,
// for dry runs.
func RestartCalls(ids []string, all bool) ([]string, error) {
	if all {
		return []string{manager.RestartAgentsCall(nil)}, nil
	}
	if err := ValidateIDs(ids, "restart"); err != nil {
		return nil, err
	}
	return []string{manager.RestartAgentsCall(dedupe(ids))}, nil
}

// RemoveCalls are the requests Remove sends, for dry runs.
func RemoveCalls(ids []string) ([]string, error) {
	if err := ValidateIDs(ids, "remove"); err != nil {
		return nil, err
	}
	c, err := manager.DeleteAgentsCall(dedupe(ids), removeOptions)
	if err != nil {
		return nil, err
	}
	return []string{c}, nil
}

func dedupe(ids []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
