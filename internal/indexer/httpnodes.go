package indexer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// NodeHTTP is one node's HTTP publish address as a base URL (the scheme of this client's URL).
type NodeHTTP struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// HTTPNodes lists the cluster's nodes with their HTTP publish addresses (GET _nodes/http), sorted
// by name. A node without an HTTP address (http disabled) is left out.
func (c *Client) HTTPNodes(ctx context.Context) ([]NodeHTTP, error) {
	q := url.Values{"filter_path": {"nodes.*.name,nodes.*.http.publish_address"}}
	r, err := c.call(ctx, http.MethodGet, request{path: "/_nodes/http", query: q}, "/_nodes/http")
	if err != nil {
		return nil, err
	}
	var body struct {
		Nodes map[string]struct {
			Name string `json:"name"`
			HTTP struct {
				PublishAddress string `json:"publish_address"`
			} `json:"http"`
		} `json:"nodes"`
	}
	if err := c.decode(r, &body); err != nil {
		return nil, err
	}
	scheme := "https"
	if u, err := url.Parse(c.url); err == nil {
		scheme = u.Scheme
	}
	out := []NodeHTTP{}
	for _, n := range body.Nodes {
		addr := PublishURL(scheme, n.HTTP.PublishAddress)
		if n.Name == "" || addr == "" {
			continue
		}
		out = append(out, NodeHTTP{Name: n.Name, URL: addr})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PublishURL is the base URL of a publish address as OpenSearch prints it ("10.0.0.2:9200",
// "host/10.0.0.2:9200", "[::1]:9200"): the address the node bound (the part after the host name),
// "" when it is not host:port.
func PublishURL(scheme, publish string) string {
	if i := strings.LastIndexByte(publish, '/'); i >= 0 {
		publish = publish[i+1:]
	}
	host, port, err := net.SplitHostPort(publish)
	if err != nil || host == "" || port == "" {
		return ""
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// At returns a client of another node of the same cluster at base URL u, with this client's
// credentials, TLS settings, CA and timeout. Close it when done.
func (c *Client) At(u string) (*Client, error) {
	opts := c.opts
	opts.URL = u
	cl, err := New(opts)
	if err != nil {
		return nil, fmt.Errorf("indexer node at %s: %w", u, err)
	}
	return cl, nil
}
