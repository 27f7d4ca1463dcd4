package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// ManagerAgentID is agent 000, the manager itself.
const ManagerAgentID = "000"

// Agent statuses as the API names them.
const (
	AgentActive         = "active"
	AgentDisconnected   = "disconnected"
	AgentNeverConnected = "never_connected"
	AgentPending        = "pending"
)

// Page sizes of GET /agents.
const (
	DefaultPageLimit = 500
	MaxPageLimit     = 100000
)

// Agent is one registered agent (GET /agents item). JSON output uses
// snake_case; the wire form is decoded by UnmarshalJSON.
type Agent struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	IP            string    `json:"ip"`
	RegisterIP    string    `json:"register_ip"`
	Status        string    `json:"status"`
	StatusCode    int       `json:"status_code"`
	Version       string    `json:"version"` // "Wazuh v4.9.0"; "" if never connected
	Manager       string    `json:"manager"`
	NodeName      string    `json:"node_name"`
	DateAdd       time.Time `json:"date_add"`
	LastKeepAlive time.Time `json:"last_keep_alive"` // 9999-12-31T23:59:59Z for 000
	Group         []string  `json:"group"`
	OS            AgentOS   `json:"os"`
}

// AgentOS is the agent's operating system.
type AgentOS struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
	Version  string `json:"version"`
}

type wireAgent struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	IP            string   `json:"ip"`
	RegisterIP    string   `json:"registerIP"`
	Status        string   `json:"status"`
	StatusCode    flexInt  `json:"status_code"`
	Version       string   `json:"version"`
	Manager       string   `json:"manager"`
	NodeName      string   `json:"node_name"`
	DateAdd       string   `json:"dateAdd"`
	LastKeepAlive string   `json:"lastKeepAlive"`
	Group         []string `json:"group"`
	OS            AgentOS  `json:"os"`
}

// UnmarshalJSON decodes the API's wire form (registerIP, dateAdd,
// lastKeepAlive). Unparseable dates become the zero time.
func (a *Agent) UnmarshalJSON(b []byte) error {
	var w wireAgent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	a.fromWire(&w)
	return nil
}

func (a *Agent) fromWire(w *wireAgent) {
	*a = Agent{
		ID: w.ID, Name: w.Name, IP: w.IP, RegisterIP: w.RegisterIP, Status: w.Status,
		StatusCode: int(w.StatusCode), Version: w.Version, Manager: w.Manager, NodeName: w.NodeName,
		DateAdd: parseAPITime(w.DateAdd), LastKeepAlive: parseAPITime(w.LastKeepAlive),
		Group: w.Group, OS: w.OS,
	}
	if a.IP == "" {
		a.IP = a.RegisterIP
	}
}

func parseAPITime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// ParsedVersion parses Version ("Wazuh v4.9.0").
func (a Agent) ParsedVersion() (Version, error) { return ParseVersion(a.Version) }

// IsManager reports agent 000.
func (a Agent) IsManager() bool { return a.ID == ManagerAgentID }

// ValidateAgentID accepts the ids Wazuh gives: three digits ("001"), or more
// without a leading zero past agent 999 ("1000", "10000"). "000" (the
// manager) is valid here; actions reject it separately.
func ValidateAgentID(id string) error {
	if len(id) >= 3 && strings.Trim(id, "0123456789") == "" && (len(id) == 3 || id[0] != '0') {
		return nil
	}
	return fmt.Errorf("%w %q: agent id must be three digits like 001 (or the number past 999, like 1000)", ErrInvalidAgentID, id)
}

// validateActionIDs checks ids for an action on agents: three digits, not
// 000, at least one.
func validateActionIDs(action string, ids []string) error {
	if len(ids) == 0 {
		return fmt.Errorf("%s agents: no agent id given", action)
	}
	var errs []error
	for _, id := range ids {
		if err := ValidateAgentID(id); err != nil {
			errs = append(errs, err)
			continue
		}
		if id == ManagerAgentID {
			errs = append(errs, fmt.Errorf("%w: cannot %s agent 000, it is the manager itself; use `siemctl services %s manager`", ErrManagerAgent, action, serviceVerb(action)))
		}
	}
	return errors.Join(errs...)
}

func serviceVerb(action string) string {
	if action == "remove" {
		return "stop"
	}
	return action
}

// AgentQuery filters GET /agents.
type AgentQuery struct {
	Status    []string // active, pending, never_connected, disconnected
	OlderThan string   // 10s, 5m, 2h, 7d or seconds
	Select    []string // fields (dotted for nested); id is always returned
	Limit     int      // page size: default 500, at most 100000
	Q         string   // query language, e.g. "os.platform=ubuntu;status=active"
	IDs       []string // agents_list
}

func (q AgentQuery) values() (url.Values, int, error) {
	v := url.Values{}
	for _, id := range q.IDs {
		if err := ValidateAgentID(id); err != nil {
			return nil, 0, err
		}
	}
	for _, s := range q.Status {
		switch s {
		case AgentActive, AgentDisconnected, AgentNeverConnected, AgentPending:
		default:
			return nil, 0, fmt.Errorf("agent status %q: want active, disconnected, never_connected or pending", s)
		}
	}
	if len(q.IDs) > 0 {
		v.Set("agents_list", strings.Join(q.IDs, ","))
	}
	if len(q.Status) > 0 {
		v.Set("status", strings.Join(q.Status, ","))
	}
	if q.OlderThan != "" {
		v.Set("older_than", q.OlderThan)
	}
	if len(q.Select) > 0 {
		v.Set("select", strings.Join(q.Select, ","))
	}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultPageLimit
	case limit > MaxPageLimit:
		limit = MaxPageLimit
	}
	v.Set("sort", "+id")
	return v, limit, nil
}

// Agents iterates over the agents matching q, fetching pages of q.Limit with
// offset until total_affected_items, decoding each page as a stream (memory
// stays flat however many agents there are). An error ends the iteration;
// unknown ids in q.IDs are reported after the last agent as a *PartialError
// (errors.Is(err, ErrAgentNotFound)).
func (c *Client) Agents(ctx context.Context, q AgentQuery) iter.Seq2[Agent, error] {
	return func(yield func(Agent, error) bool) {
		params, limit, err := q.values()
		if err != nil {
			yield(Agent{}, err)
			return
		}
		var (
			offset  int
			failed  []ItemError
			message string
			// first and last id of the previous page: a page that starts
			// with either is the server serving a page again
			prevFirst, prevLast string
			bad                 error // the server ignores offset
		)
		// A page is decoded as a stream (memory stays flat), so its cap
		// grows with the page size: 16 KiB per agent asked for.
		rq := request{method: http.MethodGet, path: "/agents", query: params, max: max(netclient.MaxAnswer, int64(limit)<<14)}
		for {
			params.Set("offset", strconv.Itoa(offset))
			params.Set("limit", strconv.Itoa(limit))
			var (
				page        agentPage
				first, last string
			)
			err := c.do(ctx, rq, func(r io.Reader) error {
				return decodeAgentPage(r, &page, func(a *Agent) bool {
					if page.count > limit {
						bad = c.pagingError(rq, fmt.Sprintf("the page at offset %d holds more than the %d agents asked for: the server ignores limit; stopped", offset, limit))
						return false
					}
					if page.count == 1 {
						first = a.ID
						if prevFirst != "" && (a.ID == prevFirst || a.ID == prevLast) {
							bad = c.pagingError(rq, fmt.Sprintf("the page at offset %d starts again with agent %s, already listed: the server ignores offset; stopped", offset, a.ID))
							return false
						}
					}
					last = a.ID
					return yield(*a, nil)
				})
			})
			prevFirst, prevLast = first, last
			if bad != nil {
				yield(Agent{}, bad)
				return
			}
			if errors.Is(err, errStop) {
				return
			}
			if err != nil {
				yield(Agent{}, err)
				return
			}
			if offset == 0 {
				failed, message = page.failed, page.message
			}
			offset += page.count
			if offset > page.total {
				yield(Agent{}, c.pagingError(rq, fmt.Sprintf("%d agents received but total_affected_items is %d: the server ignores offset or limit; stopped", offset, page.total)))
				return
			}
			if page.count == 0 || offset >= page.total {
				break
			}
		}
		if len(failed) > 0 {
			yield(Agent{}, &PartialError{Message: message, Failed: failed})
		}
	}
}

// pagingError is a listing the server does not page as asked.
func (c *Client) pagingError(rq request, detail string) error {
	return &netclient.Error{Service: service, Op: rq.op(), URL: c.endpoint(rq.path, nil), Kind: netclient.ErrBadResponse, Detail: detail}
}

// ListAgents collects Agents into a slice (for small result sets).
func (c *Client) ListAgents(ctx context.Context, q AgentQuery) ([]Agent, error) {
	var out []Agent
	for a, err := range c.Agents(ctx, q) {
		if err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}

type agentPage struct {
	count   int // items in this page
	total   int // total_affected_items
	failed  []ItemError
	message string
	status  int
}

// decodeAgentPage streams an envelope of agents: each affected item is
// decoded alone and handed to emit; nothing else is buffered.
func decodeAgentPage(r io.Reader, page *agentPage, emit func(*Agent) bool) error {
	dec := json.NewDecoder(r)
	sawData := false
	err := eachField(dec, func(key string) (bool, error) {
		switch key {
		case "data":
			sawData = true
			return true, decodeAgentData(dec, page, emit)
		case "message":
			return true, decodeField(dec, key, &page.message)
		case "error":
			return true, decodeInt(dec, key, &page.status)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if !sawData {
		return errors.New("decode agents: no data object")
	}
	return nil
}

func decodeAgentData(dec *json.Decoder, page *agentPage, emit func(*Agent) bool) error {
	var (
		w wireAgent
		a Agent
	)
	return eachField(dec, func(key string) (bool, error) {
		switch key {
		case "affected_items":
			if err := expectDelim(dec, '['); err != nil {
				return true, err
			}
			for dec.More() {
				w = wireAgent{}
				if err := dec.Decode(&w); err != nil {
					return true, fmt.Errorf("decode agent %d: %w", page.count, err)
				}
				a.fromWire(&w)
				page.count++
				if !emit(&a) {
					return true, errStop
				}
			}
			return true, expectDelim(dec, ']')
		case "total_affected_items":
			return true, decodeInt(dec, key, &page.total)
		case "failed_items":
			var f []wireItemError
			if err := decodeField(dec, key, &f); err != nil {
				return true, err
			}
			page.failed = itemErrors(f)
			return true, nil
		}
		return false, nil
	})
}

// eachField reads one JSON object from dec, handing each key to field,
// which decodes the key's value and reports whether it knew the key; the
// value of a key it did not know is skipped.
func eachField(dec *json.Decoder, field func(key string) (known bool, err error)) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return err
		}
		known, err := field(key)
		if err == nil && !known {
			err = skipValue(dec)
		}
		if err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

// decodeField decodes the value of key into v.
func decodeField(dec *json.Decoder, key string, v any) error {
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	return nil
}

// decodeInt decodes the value of key, a number or a numeric string, into n.
func decodeInt(dec *json.Decoder, key string, n *int) error {
	var f flexInt
	err := decodeField(dec, key, &f)
	*n = int(f)
	return err
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("decode: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("decode: want %q, got %v", want, tok)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("decode: %w", err)
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("decode: want an object key, got %v", tok)
	}
	return k, nil
}

// skipValue consumes one JSON value without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("decode: %w", err)
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// Agent returns one agent (GET /agents?agents_list=ID). An unknown id is
// ErrAgentNotFound (code 1701).
func (c *Client) Agent(ctx context.Context, id string) (Agent, error) {
	if err := ValidateAgentID(id); err != nil {
		return Agent{}, err
	}
	var (
		found bool
		out   Agent
	)
	for a, err := range c.Agents(ctx, AgentQuery{IDs: []string{id}}) {
		if err != nil {
			var pe *PartialError
			if errors.As(err, &pe) && len(pe.Failed) == 1 {
				return Agent{}, fmt.Errorf("agent %s: %w", id, &pe.Failed[0])
			}
			return Agent{}, fmt.Errorf("agent %s: %w", id, err)
		}
		if a.ID == id {
			out, found = a, true
		}
	}
	if !found {
		return Agent{}, fmt.Errorf("agent %s: %w", id, ErrAgentNotFound)
	}
	return out, nil
}

// AgentsSummary is GET /agents/summary/status (agent 000 excluded).
type AgentsSummary struct {
	Connection struct {
		Active         int `json:"active"`
		Disconnected   int `json:"disconnected"`
		NeverConnected int `json:"never_connected"`
		Pending        int `json:"pending"`
		Total          int `json:"total"`
	} `json:"connection"`
	Configuration struct {
		Synced    int `json:"synced"`
		NotSynced int `json:"not_synced"`
		Total     int `json:"total"`
	} `json:"configuration"`
}

// AgentsSummary counts agents by connection and configuration status.
func (c *Client) AgentsSummary(ctx context.Context) (AgentsSummary, error) {
	return getResult[AgentsSummary](ctx, c, "/agents/summary/status", nil)
}

// Result is the outcome of an action on several items: the ids it affected
// and the per-item failures (HTTP 200 with error 1 or 2).
type Result struct {
	Affected []string    `json:"affected"`
	Failed   []ItemError `json:"failed"`
	Message  string      `json:"message"`
}

// Err is nil when nothing failed, else a *PartialError.
func (r Result) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	return &PartialError{Message: r.Message, Failed: r.Failed}
}

func resultOf(env *Envelope[flexString]) Result {
	r := Result{Affected: make([]string, 0, len(env.AffectedItems)), Failed: env.FailedItems, Message: env.Message}
	for _, id := range env.AffectedItems {
		r.Affected = append(r.Affected, string(id))
	}
	if r.Failed == nil {
		r.Failed = []ItemError{}
	}
	return r
}

// RestartAgents sends a restart to the given agents (PUT
// /agents/restart?agents_list=…). Ids are checked first: three digits and
// never 000. Per-agent failures (1701, 1707, 1750) are in Result.Failed.
func (c *Client) RestartAgents(ctx context.Context, ids []string) (Result, error) {
	if err := validateActionIDs("restart", ids); err != nil {
		return Result{}, err
	}
	return c.agentAction(ctx, restartRequest(ids))
}

// agentAction sends an action on agents and returns which were affected and
// which failed.
func (c *Client) agentAction(ctx context.Context, rq request) (Result, error) {
	env, err := callEnvelope[flexString](ctx, c, rq)
	if err != nil {
		return Result{}, err
	}
	return resultOf(env), nil
}

// restartRequest is PUT /agents/restart for ids (nil: every agent).
func restartRequest(ids []string) request {
	r := request{method: http.MethodPut, path: "/agents/restart"}
	if ids != nil {
		r.query = url.Values{"agents_list": {strings.Join(ids, ",")}}
	}
	return r
}

// RestartAgentsCall is the request RestartAgents (ids) or RestartAllAgents
// (nil) sends, for dry runs.
func RestartAgentsCall(ids []string) string { return restartRequest(ids).call() }

// RestartAllAgents restarts every agent (PUT /agents/restart without a
// list); the manager leaves out 1701/1703/1707, so Failed holds only real
// failures.
func (c *Client) RestartAllAgents(ctx context.Context) (Result, error) {
	return c.agentAction(ctx, restartRequest(nil))
}

// DeleteOptions are the filters of DELETE /agents.
type DeleteOptions struct {
	// Status the agents must have: all (default), active, pending,
	// never_connected, disconnected.
	Status []string
	// OlderThan: the API defaults to 7d, which makes recently seen agents
	// fail with 1731; "" here means "0s" (no age filter).
	OlderThan string
	// Purge removes the key from client.keys for good.
	Purge bool
}

// DeleteAgents removes agents (DELETE /agents). Ids are checked first:
// three digits, never 000.
func (c *Client) DeleteAgents(ctx context.Context, ids []string, opts DeleteOptions) (Result, error) {
	if err := validateActionIDs("remove", ids); err != nil {
		return Result{}, err
	}
	req, err := deleteRequest(ids, opts)
	if err != nil {
		return Result{}, err
	}
	return c.agentAction(ctx, req)
}

// DeleteAgentsCall is the request DeleteAgents sends, for dry runs.
func DeleteAgentsCall(ids []string, opts DeleteOptions) (string, error) {
	if err := validateActionIDs("remove", ids); err != nil {
		return "", err
	}
	req, err := deleteRequest(ids, opts)
	if err != nil {
		return "", err
	}
	return req.call(), nil
}

func deleteRequest(ids []string, opts DeleteOptions) (request, error) {
	status := opts.Status
	if len(status) == 0 {
		status = []string{"all"}
	}
	for _, s := range status {
		switch s {
		case "all", AgentActive, AgentDisconnected, AgentNeverConnected, AgentPending:
		default:
			return request{}, fmt.Errorf("agent status %q: want all, active, disconnected, never_connected or pending", s)
		}
	}
	older := opts.OlderThan
	if older == "" {
		older = "0s"
	}
	q := url.Values{
		"agents_list": {strings.Join(ids, ",")},
		"status":      {strings.Join(status, ",")},
		"older_than":  {older},
		"purge":       {strconv.FormatBool(opts.Purge)},
	}
	return request{method: http.MethodDelete, path: "/agents", query: q}, nil
}
