package indexer

import (
	"context"
	"net/http"
	"net/url"
)

// ClusterManager is the elected cluster manager (GET _cat/cluster_manager).
func (c *Client) ClusterManager(ctx context.Context) (string, error) {
	q := url.Values{"format": {"json"}, "h": {"node"}}
	r, err := c.call(ctx, http.MethodGet, request{path: "/_cat/cluster_manager", query: q}, "/_cat/cluster_manager")
	if err != nil {
		return "", err
	}
	var rows []struct {
		Node string `json:"node"`
	}
	if err := c.decode(r, &rows); err != nil {
		return "", err
	}
	if len(rows) == 0 || rows[0].Node == "" {
		return "", c.badResponse(r, nil, "no elected cluster manager")
	}
	return rows[0].Node, nil
}
