package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Documents written with optimistic concurrency: a record several hosts
// change (the rolling upgrade's coordination record, internal/ops/rollout)
// is read with its _seq_no/_primary_term and written only if nobody wrote
// in between (if_seq_no/if_primary_term), or created only if it is not
// there yet (op_type=create). The cluster's primary shard decides; a loser
// gets ErrVersionConflict.

// ErrVersionConflict: a conditional write lost (409
// version_conflict_engine_exception: the document changed since it was
// read, or a create found it already there). Kind: netclient.ErrBadResponse.
var ErrVersionConflict = errors.New("version conflict")

// Document is one stored document with its concurrency tokens.
type Document struct {
	Found       bool
	SeqNo       int64
	PrimaryTerm int64
	Source      json.RawMessage
}

// GetDocument reads index/id (a real-time get: the latest write, refreshed
// or not). A missing document is Found false; a missing index is
// ErrIndexNotFound.
func (c *Client) GetDocument(ctx context.Context, index, id string) (Document, error) {
	op := "GET /" + index + "/_doc/" + id
	if err := checkConcreteName(op, index); err != nil {
		return Document{}, err
	}
	path := "/" + url.PathEscape(index) + "/_doc/" + url.PathEscape(id)
	r, err := c.call(ctx, http.MethodGet, request{path: path}, path, http.StatusNotFound)
	if err != nil {
		return Document{}, err
	}
	if r.status == http.StatusNotFound {
		if typ, _ := parseError(r.body); typ == "index_not_found_exception" {
			return Document{}, c.statusError(r.op, r.status, r.header, r.body)
		}
	}
	var raw struct {
		Found       *bool           `json:"found"`
		SeqNo       *int64          `json:"_seq_no"`
		PrimaryTerm *int64          `json:"_primary_term"`
		Source      json.RawMessage `json:"_source"`
	}
	if err := c.decode(r, &raw); err != nil {
		return Document{}, err
	}
	if raw.Found == nil {
		return Document{}, c.badResponse(r, nil, "no found field")
	}
	if !*raw.Found {
		return Document{}, nil
	}
	if raw.SeqNo == nil || raw.PrimaryTerm == nil || len(raw.Source) == 0 {
		return Document{}, c.badResponse(r, nil, "no _seq_no, _primary_term or _source")
	}
	return Document{Found: true, SeqNo: *raw.SeqNo, PrimaryTerm: *raw.PrimaryTerm, Source: raw.Source}, nil
}

// Condition is when PutDocument writes: Create (only if absent), or only
// if the document still has SeqNo/PrimaryTerm (IfMatch).
type Condition struct {
	Create      bool
	IfMatch     bool
	SeqNo       int64
	PrimaryTerm int64
}

// PutDocumentCall is the request PutDocument sends, for dry runs.
func PutDocumentCall(index, id string, cond Condition) string {
	path, q := putTarget(index, id, cond)
	return http.MethodPut + " " + path + "?" + q.Encode()
}

func putTarget(index, id string, cond Condition) (string, url.Values) {
	path := "/" + url.PathEscape(index) + "/_doc/" + url.PathEscape(id)
	q := url.Values{"refresh": {"wait_for"}}
	switch {
	case cond.Create:
		q.Set("op_type", "create")
	case cond.IfMatch:
		q.Set("if_seq_no", strconv.FormatInt(cond.SeqNo, 10))
		q.Set("if_primary_term", strconv.FormatInt(cond.PrimaryTerm, 10))
	}
	return path, q
}

// PutDocument writes doc (JSON-encodable, or json.RawMessage) as index/id
// under cond and returns the new concurrency tokens (Source is not set). A
// lost condition is ErrVersionConflict. The write waits for a refresh
// (refresh=wait_for), so searches see it on return.
func (c *Client) PutDocument(ctx context.Context, index, id string, doc any, cond Condition) (Document, error) {
	op := "PUT /" + index + "/_doc/" + id
	if err := checkConcreteName(op, index); err != nil {
		return Document{}, err
	}
	if id == "" {
		return Document{}, &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: "empty document id"}
	}
	b, err := marshal(op, doc)
	if err != nil {
		return Document{}, err
	}
	path, q := putTarget(index, id, cond)
	r, err := c.call(ctx, http.MethodPut, request{path: path, query: q, body: b}, path, http.StatusConflict)
	if err != nil {
		return Document{}, err
	}
	if r.status == http.StatusConflict {
		typ, reason := parseError(r.body)
		if typ == "version_conflict_engine_exception" {
			return Document{}, c.typedError(r, netclient.ErrBadResponse, ErrVersionConflict, reason)
		}
		return Document{}, c.statusError(r.op, r.status, r.header, r.body)
	}
	var raw struct {
		SeqNo       *int64 `json:"_seq_no"`
		PrimaryTerm *int64 `json:"_primary_term"`
		Result      string `json:"result"`
	}
	if err := c.decode(r, &raw); err != nil {
		return Document{}, err
	}
	if raw.SeqNo == nil || raw.PrimaryTerm == nil {
		return Document{}, c.badResponse(r, nil, "no _seq_no or _primary_term")
	}
	return Document{Found: true, SeqNo: *raw.SeqNo, PrimaryTerm: *raw.PrimaryTerm}, nil
}

// EnsureIndex creates index with body (settings, mappings) unless it
// exists; created says whether this call made it. Two callers racing both
// succeed (resource_already_exists_exception is "there already").
func (c *Client) EnsureIndex(ctx context.Context, name string, body []byte) (created bool, err error) {
	err = c.CreateIndex(ctx, name, body)
	if err == nil {
		return true, nil
	}
	var ne *netclient.Error
	if errors.As(err, &ne) && ne.Status == http.StatusBadRequest && strings.HasPrefix(ne.Detail, "resource_already_exists_exception") {
		return false, nil
	}
	return false, err
}
