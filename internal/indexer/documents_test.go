package indexer_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

// TestDocumentsConcurrency: a document is created once, read with its tokens and written only
// while nobody wrote in between; every lost condition is ErrVersionConflict.
func TestDocumentsConcurrency(t *testing.T) {
	ctx := context.Background()
	docs := indexertest.NewDocuments("siemctl-rollout")
	srv := indexertest.NewServer(t, docs.Routes("run"))
	c := srv.Client(t)

	if _, err := c.GetDocument(ctx, "siemctl-rollout", "run"); !errors.Is(err, indexer.ErrIndexNotFound) {
		t.Fatalf("get before the index: %v, want ErrIndexNotFound", err)
	}
	for i, want := range []bool{true, false} {
		created, err := c.EnsureIndex(ctx, "siemctl-rollout", []byte(`{"settings":{"index":{"number_of_shards":1}}}`))
		if err != nil || created != want {
			t.Fatalf("EnsureIndex #%d: created %v err %v, want %v", i, created, err, want)
		}
	}
	d, err := c.GetDocument(ctx, "siemctl-rollout", "run")
	if err != nil || d.Found {
		t.Fatalf("get absent: %+v %v", d, err)
	}
	w1, err := c.PutDocument(ctx, "siemctl-rollout", "run", map[string]int{"n": 1}, indexer.Condition{Create: true})
	if err != nil || w1.SeqNo != 0 || w1.PrimaryTerm != 1 {
		t.Fatalf("create: %+v %v", w1, err)
	}
	_, err = c.PutDocument(ctx, "siemctl-rollout", "run", map[string]int{"n": 2}, indexer.Condition{Create: true})
	if !errors.Is(err, indexer.ErrVersionConflict) || !errors.Is(err, netclient.ErrBadResponse) {
		t.Fatalf("second create: %v, want ErrVersionConflict", err)
	}
	got, err := c.GetDocument(ctx, "siemctl-rollout", "run")
	if err != nil || !got.Found || got.SeqNo != 0 || string(got.Source) != `{"n":1}` {
		t.Fatalf("get: %+v %v", got, err)
	}
	w2, err := c.PutDocument(ctx, "siemctl-rollout", "run", map[string]int{"n": 3}, indexer.Condition{IfMatch: true, SeqNo: got.SeqNo, PrimaryTerm: got.PrimaryTerm})
	if err != nil || w2.SeqNo != 1 {
		t.Fatalf("conditional write: %+v %v", w2, err)
	}
	// The same tokens again: somebody (we) wrote in between.
	_, err = c.PutDocument(ctx, "siemctl-rollout", "run", map[string]int{"n": 4}, indexer.Condition{IfMatch: true, SeqNo: got.SeqNo, PrimaryTerm: got.PrimaryTerm})
	if !errors.Is(err, indexer.ErrVersionConflict) {
		t.Fatalf("stale write: %v, want ErrVersionConflict", err)
	}
	if string(docs.Source("run")) != `{"n":3}` {
		t.Fatalf("stored %s, want the one accepted write", docs.Source("run"))
	}
	if r, ok := srv.Last("PUT /siemctl-rollout/_doc/run"); !ok || r.Query.Get("if_seq_no") != "0" || r.Query.Get("if_primary_term") != "1" || r.Query.Get("refresh") != "wait_for" {
		t.Fatalf("last write's query %v", r.Query)
	}
}

// TestDocumentsErrors: answers that are not the document are errors with their cause, never a
// silent "absent".
func TestDocumentsErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		route  indexertest.Route
		put    bool
		isErr  error
		detail string
	}{
		{"409 other than a version conflict", indexertest.Route{Status: http.StatusConflict, Body: []byte(`{"error":{"root_cause":[{"type":"engine_exception","reason":"flush in progress"}],"type":"engine_exception","reason":"flush in progress"},"status":409}`)}, true, netclient.ErrBadResponse, "engine_exception"},
		{"403 on write", indexertest.Route{Status: http.StatusForbidden, Body: []byte(`{"error":{"root_cause":[{"type":"security_exception","reason":"no permissions for [indices:data/write/index] and User [name=reader]"}],"type":"security_exception","reason":"no permissions for [indices:data/write/index] and User [name=reader]"},"status":403}`)}, true, netclient.ErrForbidden, "security_exception"},
		{"write answer without tokens", indexertest.Route{Body: []byte(`{"_index":"siemctl-rollout","_id":"run","result":"created"}`)}, true, netclient.ErrBadResponse, "_seq_no"},
		{"get without found", indexertest.Route{Body: []byte(`{"_index":"siemctl-rollout"}`)}, false, netclient.ErrBadResponse, "found"},
		{"get found without source", indexertest.Route{Body: []byte(`{"_index":"siemctl-rollout","_id":"run","found":true,"_seq_no":1,"_primary_term":1}`)}, false, netclient.ErrBadResponse, "_source"},
		{"503 security not initialized", indexertest.Route{Status: 503, Body: []byte("OpenSearch Security not initialized.")}, false, indexer.ErrSecurityNotInitialized, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "GET /siemctl-rollout/_doc/run"
			if tc.put {
				key = "PUT /siemctl-rollout/_doc/run"
			}
			srv := indexertest.NewServer(t, map[string]indexertest.Route{key: tc.route})
			c := srv.Client(t)
			var err error
			if tc.put {
				_, err = c.PutDocument(ctx, "siemctl-rollout", "run", map[string]int{"n": 1}, indexer.Condition{IfMatch: true, SeqNo: 1, PrimaryTerm: 1})
			} else {
				_, err = c.GetDocument(ctx, "siemctl-rollout", "run")
			}
			if !errors.Is(err, tc.isErr) {
				t.Fatalf("err %v, want %v", err, tc.isErr)
			}
			if errors.Is(err, indexer.ErrVersionConflict) {
				t.Fatalf("err %v is not a version conflict", err)
			}
			if tc.detail != "" && !contains(err.Error(), tc.detail) {
				t.Fatalf("err %q does not name %q", err, tc.detail)
			}
		})
	}
	if got := indexer.PutDocumentCall("siemctl-rollout", "run", indexer.Condition{Create: true}); got != "PUT /siemctl-rollout/_doc/run?op_type=create&refresh=wait_for" {
		t.Errorf("PutDocumentCall = %q", got)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
