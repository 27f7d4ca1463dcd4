package manager

import (
	"context"
	"net/http"
	"time"
)

// ClusterNode is one node of GET /cluster/healthcheck (framework master.py get_health): the master has
// no sync status; a worker's last keepalive and sync times are as the master saw them.
type ClusterNode struct {
	Name         string `json:"name"`
	Type         string `json:"type"` // master | worker
	Version      string `json:"version"`
	IP           string `json:"ip"`
	ActiveAgents int    `json:"n_active_agents"`
	// LastKeepAlive is zero for the master.
	LastKeepAlive time.Time `json:"last_keep_alive"`
	// LastIntegrityCheck and LastAgentInfoSync are the ends of the last syncs (zero: none yet).
	LastIntegrityCheck time.Time `json:"last_check_integrity"`
	LastAgentInfoSync  time.Time `json:"last_sync_agentinfo"`
}

// ClusterHealthcheck reads GET /cluster/healthcheck: the connected nodes, sorted by name. A worker
// that cannot reach its master answers 3023 (*APIError); a manager without cluster 3013.
func (c *Client) ClusterHealthcheck(ctx context.Context) ([]ClusterNode, error) {
	type sync struct {
		End       string `json:"date_end_master"`
		EndWorker string `json:"date_end"`
	}
	env, err := callEnvelope[struct {
		Info struct {
			Name    string `json:"name"`
			Type    string `json:"type"`
			Version string `json:"version"`
			IP      string `json:"ip"`
			Active  int    `json:"n_active_agents"`
		} `json:"info"`
		Status *struct {
			LastKeepAlive      string `json:"last_keep_alive"`
			LastCheckIntegrity sync   `json:"last_check_integrity"`
			LastSyncAgentInfo  sync   `json:"last_sync_agentinfo"`
		} `json:"status"`
	}](ctx, c, request{method: http.MethodGet, path: "/cluster/healthcheck"})
	if err != nil {
		return nil, err
	}
	out := make([]ClusterNode, 0, len(env.AffectedItems))
	for _, it := range env.AffectedItems {
		n := ClusterNode{Name: it.Info.Name, Type: it.Info.Type, Version: it.Info.Version, IP: it.Info.IP, ActiveAgents: it.Info.Active}
		if it.Status != nil {
			n.LastKeepAlive = clusterDate(it.Status.LastKeepAlive)
			n.LastIntegrityCheck = clusterDate(it.Status.LastCheckIntegrity.End)
			n.LastAgentInfoSync = clusterDate(it.Status.LastSyncAgentInfo.End)
		}
		out = append(out, n)
	}
	return out, nil
}

// clusterDate parses the cluster's dates ("%Y-%m-%dT%H:%M:%S.%fZ"; "n/a" before the first sync).
func clusterDate(s string) time.Time {
	for _, layout := range []string{"2006-01-02T15:04:05.999999Z", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// RulesetSync is one node of GET /cluster/ruleset/synchronization.
type RulesetSync struct {
	Name   string `json:"name"`
	Synced bool   `json:"synced"`
}

// ClusterRulesetSync reads whether each node's ruleset matches the master's.
func (c *Client) ClusterRulesetSync(ctx context.Context) ([]RulesetSync, error) {
	env, err := callEnvelope[RulesetSync](ctx, c, request{method: http.MethodGet, path: "/cluster/ruleset/synchronization"})
	if err != nil {
		return nil, err
	}
	return env.AffectedItems, nil
}
