package manager

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxUpgradeRequest is the most agents one upgrade request carries: the API hands agents to the upgrade
// module in chunks of 500 (framework/wazuh/agent.py), and a request of that size stays far below the
// 3000 agents the spec says fit the API's request timeout.
const MaxUpgradeRequest = 500

// Upgrade task statuses (GET /agents/upgrade_result).
const (
	TaskPending    = "Pending"
	TaskInProgress = "In progress"
	TaskUpdating   = "Updating"
	TaskUpdated    = "Updated"
	TaskError      = "Error"
	TaskTimeout    = "Timeout"
	TaskCancelled  = "Cancelled"
)

// UpgradeOptions are PUT /agents/upgrade's parameters.
type UpgradeOptions struct {
	Version string // upgrade_version ("4.10.0"); "" = the repository's latest for the manager
	WPKRepo string // wpk_repo; "" = the manager's configured repository
	UseHTTP bool
	Force   bool
	// NodeName restricts the request to the agents reporting to that cluster node (node_name).
	NodeName string
}

// UpgradeCreated is the outcome of one upgrade request: the task created per agent and the agents
// refused, with their codes (1701, 1703, 1707, 1731, 1819–1822).
type UpgradeCreated struct {
	Tasks   map[string]int `json:"tasks"`
	Failed  []ItemError    `json:"failed"`
	Message string         `json:"message"`
}

// UpgradeTask is one agent's latest upgrade task.
type UpgradeTask struct {
	Agent      string `json:"agent"`
	TaskID     int    `json:"task_id"`
	Node       string `json:"node,omitempty"`
	Command    string `json:"command"`
	Status     string `json:"status"`
	ErrorMsg   string `json:"error_msg,omitempty"`
	CreateTime string `json:"create_time"`
	UpdateTime string `json:"update_time"`
}

func upgradeRequest(ids []string, o UpgradeOptions) request {
	q := url.Values{"agents_list": {strings.Join(ids, ",")}}
	if o.Version != "" {
		q.Set("upgrade_version", o.Version)
	}
	if o.WPKRepo != "" {
		q.Set("wpk_repo", o.WPKRepo)
	}
	if o.UseHTTP {
		q.Set("use_http", "true")
	}
	if o.Force {
		q.Set("force", "true")
	}
	if o.NodeName != "" {
		q.Set("node_name", o.NodeName)
	}
	// More than a few hundred agents: the manager answers after the module queued them all.
	if len(ids) > 100 {
		q.Set("wait_for_complete", "true")
	}
	return request{method: http.MethodPut, path: "/agents/upgrade", query: q}
}

// UpgradeAgentsCall is the request UpgradeAgents sends, for dry runs.
func UpgradeAgentsCall(ids []string, o UpgradeOptions) string { return upgradeRequest(ids, o).call() }

// UpgradeAgents asks the manager to upgrade the agents (PUT /agents/upgrade), at most
// MaxUpgradeRequest of them; a refusal of the whole request (1823 above the manager, 1824 repository
// unreachable, 1825 no such version) is an *APIError.
func (c *Client) UpgradeAgents(ctx context.Context, ids []string, o UpgradeOptions) (UpgradeCreated, error) {
	if err := validateActionIDs("upgrade", ids); err != nil {
		return UpgradeCreated{}, err
	}
	if len(ids) > MaxUpgradeRequest {
		return UpgradeCreated{}, fmt.Errorf("upgrade agents: %d agents in one request, at most %d", len(ids), MaxUpgradeRequest)
	}
	if o.Version != "" {
		if _, err := ParseVersion(o.Version); err != nil {
			return UpgradeCreated{}, fmt.Errorf("upgrade agents: target %q: %w", o.Version, err)
		}
	}
	type created struct {
		Agent  flexString `json:"agent"`
		TaskID int        `json:"task_id"`
	}
	env, err := callEnvelope[created](ctx, c, upgradeRequest(ids, o))
	if err != nil {
		return UpgradeCreated{}, err
	}
	out := UpgradeCreated{Tasks: make(map[string]int, len(env.AffectedItems)), Failed: env.FailedItems, Message: env.Message}
	for _, t := range env.AffectedItems {
		out.Tasks[string(t.Agent)] = t.TaskID
	}
	if out.Failed == nil {
		out.Failed = []ItemError{}
	}
	return out, nil
}

// UpgradeResults reads the agents' latest upgrade tasks (GET /agents/upgrade_result), MaxUpgradeRequest
// agents per request. Agents without a task (1813) or not active right now (1707: restarting after an
// upgrade, or gone) come back in the failures; the caller judges them by the agents' own state.
func (c *Client) UpgradeResults(ctx context.Context, ids []string) ([]UpgradeTask, []ItemError, error) {
	var tasks []UpgradeTask
	fails := []ItemError{}
	for start := 0; start < len(ids); start += MaxUpgradeRequest {
		chunk := ids[start:min(start+MaxUpgradeRequest, len(ids))]
		for _, id := range chunk {
			if err := ValidateAgentID(id); err != nil {
				return nil, nil, err
			}
		}
		q := url.Values{"agents_list": {strings.Join(chunk, ",")}}
		env, err := callEnvelope[UpgradeTask](ctx, c, request{method: http.MethodGet, path: "/agents/upgrade_result", query: q})
		if err != nil {
			return nil, nil, err
		}
		tasks = append(tasks, env.AffectedItems...)
		fails = append(fails, env.FailedItems...)
	}
	return tasks, fails, nil
}
