package indexer

import (
	"context"
	"net/http"
	"net/url"
)

// LocalNode is the node this client's URL reaches (GET /_nodes/_local): its name and real
// OpenSearch version. A rolling upgrade records it before the node stops and waits for that name
// to be back in _nodes at a newer version.
func (c *Client) LocalNode(ctx context.Context) (NodeVersion, error) {
	q := url.Values{"filter_path": {"nodes.*.name,nodes.*.version,nodes.*.roles"}}
	r, err := c.call(ctx, http.MethodGet, request{path: "/_nodes/_local", query: q}, "/_nodes/_local")
	if err != nil {
		return NodeVersion{}, err
	}
	var raw struct {
		Nodes map[string]struct {
			Name    string   `json:"name"`
			Version string   `json:"version"`
			Roles   []string `json:"roles"`
		} `json:"nodes"`
	}
	if err := c.decode(r, &raw); err != nil {
		return NodeVersion{}, err
	}
	for id, n := range raw.Nodes {
		return NodeVersion{ID: id, Name: n.Name, Version: n.Version, Roles: n.Roles}, nil
	}
	return NodeVersion{}, c.badResponse(r, nil, "no local node")
}
