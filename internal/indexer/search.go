package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// DefaultTimeField is the alerts time field usable in ranges ("now-5m TO now").
const DefaultTimeField = "timestamp"

// MaxSearchSize caps SearchRequest.Size (index.max_result_window default).
const MaxSearchSize = 10000

// SortField orders hits; Order is "asc" or "desc".
type SortField struct {
	Field string
	Order string
}

// SearchRequest is a bounded, query_string search. Query travels in the JSON
// body (never in the URL). Zero Since/Until leave that side open.
type SearchRequest struct {
	Index       string // index name or pattern, e.g. siem-alerts-4.x-*
	Query       string // query_string syntax; "" matches all
	Since       time.Time
	Until       time.Time
	TimeField   string      // default DefaultTimeField
	Size        int         // default 10, at most MaxSearchSize
	Sort        []SortField // default: TimeField desc
	SearchAfter []any       // the Sort of the last hit of the previous page
	Source      []string    // fields to return; nil: the whole _source
}

// SearchResult is the useful part of a search answer.
type SearchResult struct {
	Total         int64  `json:"total"`
	TotalRelation string `json:"total_relation"` // eq | gte
	Hits          []Hit  `json:"hits"`
}

// Hit is one document.
type Hit struct {
	Index  string          `json:"index"`
	ID     string          `json:"id"`
	Sort   []any           `json:"sort,omitempty"`
	Source json.RawMessage `json:"source,omitempty"`
}

// query builds the bool filter shared by search and count.
func buildQuery(q string, timeField string, since, until time.Time) map[string]any {
	var filters []any
	if strings.TrimSpace(q) != "" {
		filters = append(filters, map[string]any{"query_string": map[string]any{"query": q}})
	}
	if !since.IsZero() || !until.IsZero() {
		rng := map[string]any{"format": "epoch_millis"}
		if !since.IsZero() {
			rng["gte"] = since.UnixMilli()
		}
		if !until.IsZero() {
			rng["lte"] = until.UnixMilli()
		}
		filters = append(filters, map[string]any{"range": map[string]any{timeField: rng}})
	}
	if len(filters) == 0 {
		return map[string]any{"match_all": map[string]any{}}
	}
	return map[string]any{"bool": map[string]any{"filter": filters}}
}

func validIndexExpr(op, expr string) error {
	if strings.TrimSpace(expr) == "" || strings.ContainsAny(expr, " /?#") {
		return &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: fmt.Sprintf("invalid index expression %q", expr)}
	}
	return nil
}

// searchPath is /<index>/<endpoint> (_search, _count) once index is a
// valid index expression.
func searchPath(index, endpoint string) (string, error) {
	path := "/" + escapePath(index) + "/" + endpoint
	return path, validIndexExpr("POST "+path, index)
}

// searchPost sends body to POST path (from searchPath) and decodes the
// answer into out; a pattern that matches nothing is an empty answer, not an
// error. limit bounds the answer (0: netclient.MaxAnswer).
func (c *Client) searchPost(ctx context.Context, path string, body any, limit int64, out any) (*response, error) {
	b, err := marshal("POST "+path, body)
	if err != nil {
		return nil, err
	}
	q := url.Values{"ignore_unavailable": {"true"}, "allow_no_indices": {"true"}}
	r, err := c.call(ctx, http.MethodPost, request{path: path, query: q, body: b, max: limit}, path)
	if err != nil {
		return nil, err
	}
	if err := c.decode(r, out); err != nil {
		return r, err
	}
	return r, c.shardFailures(r)
}

// queryRejections are the failure types of a shard that could not run the query itself (its
// query_string does not parse, a field it names cannot be queried so): the caller's query, a 400.
var queryRejections = map[string]bool{"query_shard_exception": true, "parse_exception": true, "search_parse_exception": true,
	"x_content_parse_exception": true, "illegal_argument_exception": true, "number_format_exception": true}

// shardFailures reads a search answer's _shards for a query the shards rejected. OpenSearch
// answers 400 only when every shard it ran failed; when others were skipped (the can_match phase
// drops shards whose time range cannot match, as soon as a pattern spans more than 128 shards) or
// succeeded, a query_string that does not parse comes back as 200 with failures and no hits, which
// would read as "no alerts". That is the caller's query: a 400 naming the shard's reason, so the
// commands name the query. Other shard failures (a shard unavailable, a breaker) keep the partial
// answer, as before.
func (c *Client) shardFailures(r *response) error {
	var sh struct {
		Shards *struct {
			Total    int `json:"total"`
			Failed   int `json:"failed"`
			Failures []struct {
				Index  string `json:"index"`
				Reason struct {
					Type     string `json:"type"`
					Reason   string `json:"reason"`
					CausedBy *struct {
						Reason string `json:"reason"`
					} `json:"caused_by"`
				} `json:"reason"`
			} `json:"failures"`
		} `json:"_shards"`
	}
	// _shards has a failures array only when a shard failed: the answer is read a second time only then.
	if !bytes.Contains(r.body, []byte(`"failures"`)) || json.Unmarshal(r.body, &sh) != nil || sh.Shards == nil || sh.Shards.Failed == 0 {
		return nil
	}
	for _, f := range sh.Shards.Failures {
		if !queryRejections[f.Reason.Type] {
			continue
		}
		why := f.Reason.Reason
		if f.Reason.CausedBy != nil && f.Reason.CausedBy.Reason != "" {
			why += ": " + f.Reason.CausedBy.Reason
		}
		return &netclient.Error{Service: service, Op: r.op, URL: c.url, Status: http.StatusBadRequest, Kind: netclient.ErrBadResponse,
			Detail: fmt.Sprintf("%d of %d shards failed (%s on %s): %s", sh.Shards.Failed, sh.Shards.Total, f.Reason.Type, f.Index, why)}
	}
	return nil
}

// Search runs POST <index>/_search with track_total_hits.
func (c *Client) Search(ctx context.Context, sr SearchRequest) (SearchResult, error) {
	path, err := searchPath(sr.Index, "_search")
	if err != nil {
		return SearchResult{}, err
	}
	tf := sr.TimeField
	if tf == "" {
		tf = DefaultTimeField
	}
	size := sr.Size
	switch {
	case size <= 0:
		size = 10
	case size > MaxSearchSize:
		size = MaxSearchSize
	}
	sorts := sr.Sort
	if len(sorts) == 0 {
		sorts = []SortField{{Field: tf, Order: "desc"}}
	}
	var sortBody []any
	for _, s := range sorts {
		order := strings.ToLower(s.Order)
		if order != "asc" {
			order = "desc"
		}
		sortBody = append(sortBody, map[string]any{s.Field: map[string]any{"order": order, "unmapped_type": "date"}})
	}
	body := map[string]any{
		"size":             size,
		"query":            buildQuery(sr.Query, tf, sr.Since, sr.Until),
		"sort":             sortBody,
		"track_total_hits": true,
	}
	if len(sr.SearchAfter) > 0 {
		body["search_after"] = sr.SearchAfter
	}
	if sr.Source != nil {
		body["_source"] = sr.Source
	}
	var raw struct {
		Hits *struct {
			Total struct {
				Value    int64  `json:"value"`
				Relation string `json:"relation"`
			} `json:"total"`
			Hits []struct {
				Index  string          `json:"_index"`
				ID     string          `json:"_id"`
				Sort   []any           `json:"sort"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	// 16 KiB per hit asked for: -n 10000 may legitimately answer megabytes.
	r, err := c.searchPost(ctx, path, body, max(netclient.MaxAnswer, int64(size)<<14), &raw)
	if err != nil {
		return SearchResult{}, err
	}
	if raw.Hits == nil {
		return SearchResult{}, c.badResponse(r, nil, "no hits")
	}
	out := SearchResult{Total: raw.Hits.Total.Value, TotalRelation: raw.Hits.Total.Relation, Hits: make([]Hit, 0, len(raw.Hits.Hits))}
	for _, h := range raw.Hits.Hits {
		out.Hits = append(out.Hits, Hit{Index: h.Index, ID: h.ID, Sort: h.Sort, Source: h.Source})
	}
	return out, nil
}

// Count runs POST <index>/_count for query_string q (""=all) with
// DefaultTimeField >= since (zero since: no time bound).
func (c *Client) Count(ctx context.Context, index, q string, since time.Time) (int64, error) {
	path, err := searchPath(index, "_count")
	if err != nil {
		return 0, err
	}
	var raw struct {
		Count *int64 `json:"count"`
	}
	r, err := c.searchPost(ctx, path, map[string]any{"query": buildQuery(q, DefaultTimeField, since, time.Time{})}, 0, &raw)
	if err != nil {
		return 0, err
	}
	if raw.Count == nil {
		return 0, c.badResponse(r, nil, "no count")
	}
	return *raw.Count, nil
}

// Newest returns the greatest value of date field in the indices matching
// pattern (found=false when there is no document with that field).
func (c *Client) Newest(ctx context.Context, pattern, field string) (time.Time, bool, error) {
	path, err := searchPath(pattern, "_search")
	if err != nil {
		return time.Time{}, false, err
	}
	if field == "" {
		field = DefaultTimeField
	}
	var raw struct {
		Aggregations *struct {
			Newest struct {
				Value *float64 `json:"value"`
			} `json:"newest"`
		} `json:"aggregations"`
	}
	_, err = c.searchPost(ctx, path, map[string]any{
		"size": 0, "track_total_hits": false,
		"aggs": map[string]any{"newest": map[string]any{"max": map[string]any{"field": field}}},
	}, 0, &raw)
	if err != nil {
		return time.Time{}, false, err
	}
	if raw.Aggregations == nil {
		// No index matched: OpenSearch omits aggregations for an empty target.
		return time.Time{}, false, nil
	}
	if raw.Aggregations.Newest.Value == nil {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(int64(*raw.Aggregations.Newest.Value)).UTC(), true, nil
}

// Bucket is one interval of a histogram: documents with a time in [Start, Start+interval).
type Bucket struct {
	Start time.Time `json:"start"`
	Count int64     `json:"count"`
}

// MaxBuckets bounds a histogram (the cluster's search.max_buckets default is 65,535).
const MaxBuckets = 10000

// Histogram counts the documents matching q in [since, until] per fixed interval of the default
// time field, oldest first, empty intervals included (a gap in the alert flow must show).
func (c *Client) Histogram(ctx context.Context, index, q string, since, until time.Time, interval time.Duration) ([]Bucket, error) {
	path, err := searchPath(index, "_search")
	if err != nil {
		return nil, err
	}
	op := "POST " + path
	if interval < time.Second || interval%time.Second != 0 {
		return nil, &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: fmt.Sprintf("interval %s: want whole seconds", interval)}
	}
	if n := until.Sub(since) / interval; n > MaxBuckets {
		return nil, &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: fmt.Sprintf("%d buckets of %s: at most %d", n, interval, MaxBuckets)}
	}
	var raw struct {
		Aggregations *struct {
			Per struct {
				Buckets []struct {
					Key   *int64 `json:"key"`
					Count int64  `json:"doc_count"`
				} `json:"buckets"`
			} `json:"per"`
		} `json:"aggregations"`
	}
	r, err := c.searchPost(ctx, path, map[string]any{
		"size": 0, "track_total_hits": false,
		"query": buildQuery(q, DefaultTimeField, since, until),
		"aggs": map[string]any{"per": map[string]any{"date_histogram": map[string]any{
			"field":           DefaultTimeField,
			"fixed_interval":  fmt.Sprintf("%ds", int64(interval/time.Second)),
			"min_doc_count":   0,
			"extended_bounds": map[string]any{"min": since.UnixMilli(), "max": until.UnixMilli()},
			// Buckets start at since, not at the epoch's interval boundaries.
			"offset": fmt.Sprintf("%dms", since.UnixMilli()%interval.Milliseconds()),
		}}},
	}, 0, &raw)
	if err != nil {
		return nil, err
	}
	out := []Bucket{}
	if raw.Aggregations == nil {
		// No index matched the pattern: every interval is empty.
		for t := since; !t.After(until); t = t.Add(interval) {
			out = append(out, Bucket{Start: t.UTC()})
		}
		return out, nil
	}
	for _, bk := range raw.Aggregations.Per.Buckets {
		if bk.Key == nil {
			return nil, c.badResponse(r, nil, "histogram bucket without a key")
		}
		out = append(out, Bucket{Start: time.UnixMilli(*bk.Key).UTC(), Count: bk.Count})
	}
	return out, nil
}
