package indexer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/siemctl/siemctl/internal/netclient"
)

// checkConcreteName refuses anything that is not one literal index name.
func checkConcreteName(op, name string) error {
	bad := ""
	switch {
	case name == "":
		bad = "empty name"
	case name == "." || name == "..":
		bad = "reserved name"
	case strings.ContainsAny(name, "*?,"):
		bad = "wildcard or list"
	case strings.HasPrefix(name, "-") || strings.HasPrefix(name, "_"):
		bad = "leading '-' or '_'"
	case strings.ContainsAny(name, " /\\#\"<>|") || strings.TrimSpace(name) != name:
		bad = "illegal character"
	}
	if bad != "" {
		return &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: fmt.Sprintf("refusing index %q: %s", name, bad), Err: ErrUnsafeIndexName}
	}
	return nil
}

// DeleteIndices deletes exactly the named indices. It refuses an empty list
// and any name that is not a literal index (wildcards, lists, names starting
// with '-' or '_' such as _all), and sends expand_wildcards=none and
// allow_no_indices=false so the node cannot widen the request either. A
// missing index fails the whole call (ErrIndexNotFound) and deletes nothing.
func (c *Client) DeleteIndices(ctx context.Context, names []string) error {
	const op = "DELETE /<indices>"
	if len(names) == 0 {
		return &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: "refusing to delete an empty list of indices", Err: ErrUnsafeIndexName}
	}
	seen := map[string]bool{}
	uniq := make([]string, 0, len(names))
	for _, n := range names {
		if err := checkConcreteName(op, n); err != nil {
			return err
		}
		if !seen[n] {
			seen[n] = true
			uniq = append(uniq, n)
		}
	}
	req := opensearchapi.IndicesDeleteReq{Indices: uniq, Params: deleteParams()}
	_, err := c.change(ctx, http.MethodDelete, req, "/"+strings.Join(uniq, ","))
	return err
}

// deleteParams never let a delete expand to more than the literal names.
func deleteParams() opensearchapi.IndicesDeleteParams {
	return opensearchapi.IndicesDeleteParams{ExpandWildcards: "none", AllowNoIndices: new(false), IgnoreUnavailable: new(false)}
}

// DeleteIndexCall is the request DeleteIndices sends for one name, for dry
// runs.
func DeleteIndexCall(name string) string {
	req := opensearchapi.IndicesDeleteReq{Indices: []string{name}, Params: deleteParams()}
	hr, err := req.GetRequest(http.MethodDelete)
	if err != nil {
		return http.MethodDelete + " /" + name
	}
	return hr.Method + " " + hr.URL.RequestURI()
}

// CreateIndex calls PUT <name> with an optional JSON body (settings,
// mappings) and verifies acknowledged.
func (c *Client) CreateIndex(ctx context.Context, name string, body []byte) error {
	op := "PUT /" + name
	if err := checkConcreteName(op, name); err != nil {
		return err
	}
	if body != nil && !json.Valid(body) {
		return &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: "index body is not valid JSON"}
	}
	path := "/" + url.PathEscape(name)
	_, err := c.change(ctx, http.MethodPut, request{path: path, body: body}, path)
	return err
}

// IndexOptions tune IndexDocument.
type IndexOptions struct {
	ID       string // "" lets the node choose
	Pipeline string // ingest pipeline
	Refresh  bool   // refresh=wait_for: searchable on return
}

// IndexDocument stores doc (any JSON-encodable value, or json.RawMessage)
// into index and returns the document id.
func (c *Client) IndexDocument(ctx context.Context, index string, doc any, o IndexOptions) (string, error) {
	op := "POST /" + index + "/_doc"
	if err := checkConcreteName(op, index); err != nil {
		return "", err
	}
	b, err := marshal(op, doc)
	if err != nil {
		return "", err
	}
	path := "/" + url.PathEscape(index) + "/_doc"
	method := http.MethodPost
	if o.ID != "" {
		path += "/" + url.PathEscape(o.ID)
		method = http.MethodPut
	}
	q := url.Values{}
	if o.Pipeline != "" {
		q.Set("pipeline", o.Pipeline)
	}
	if o.Refresh {
		q.Set("refresh", "wait_for")
	}
	r, err := c.call(ctx, method, request{path: path, query: q, body: b}, path)
	if err != nil {
		return "", err
	}
	var raw struct {
		ID     string `json:"_id"`
		Result string `json:"result"`
	}
	if err := c.decode(r, &raw); err != nil {
		return "", err
	}
	if raw.ID == "" {
		return "", c.badResponse(r, nil, "no _id")
	}
	return raw.ID, nil
}

// Refresh calls POST <pattern>/_refresh (empty pattern: all indices).
func (c *Client) Refresh(ctx context.Context, pattern string) (ShardsSummary, error) {
	path := "/_refresh"
	if pattern != "" {
		if err := validIndexExpr("POST "+path, pattern); err != nil {
			return ShardsSummary{}, err
		}
		path = "/" + escapePath(pattern) + "/_refresh"
	}
	q := url.Values{"ignore_unavailable": {"true"}, "allow_no_indices": {"true"}}
	r, err := c.call(ctx, http.MethodPost, request{path: path, query: q}, path)
	if err != nil {
		return ShardsSummary{}, err
	}
	return c.shards(r)
}
