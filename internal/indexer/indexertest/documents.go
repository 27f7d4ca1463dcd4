package indexertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Documents is one index of the fake that stores documents with OpenSearch's optimistic
// concurrency: PUT /<index> creates it (400 resource_already_exists_exception when there), GET and
// PUT /<index>/_doc/<id> read and write with _seq_no/_primary_term, op_type=create and
// if_seq_no/if_primary_term, answering 409 version_conflict_engine_exception with the bodies
// OpenSearch 2.x sends.
type Documents struct {
	Index string

	mu      sync.Mutex
	exists  bool
	seq     int64 // the index's last _seq_no (-1: none)
	term    int64
	docs    map[string]storedDoc
	writes  int
	Refused int // conditional writes answered 409
	// BeforeWrite, when set, runs (unlocked) before each document write is decided: a test's hook
	// to write in between.
	BeforeWrite func()
}

type storedDoc struct {
	seq     int64
	version int64
	source  json.RawMessage
}

// NewDocuments returns an empty fake index named index (not yet created).
func NewDocuments(index string) *Documents {
	return &Documents{Index: index, seq: -1, term: 1, docs: map[string]storedDoc{}}
}

// Routes are the fake's routes for the index and the document ids.
func (d *Documents) Routes(ids ...string) map[string]Route {
	out := map[string]Route{"PUT /" + d.Index: {Handler: d.createIndex}}
	for _, id := range ids {
		out["GET /"+d.Index+"/_doc/"+id] = Route{Handler: func(w http.ResponseWriter, r *http.Request) { d.get(w, id) }}
		out["PUT /"+d.Index+"/_doc/"+id] = Route{Handler: func(w http.ResponseWriter, r *http.Request) { d.put(w, r, id) }}
	}
	return out
}

// Writes is the number of accepted document writes.
func (d *Documents) Writes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writes
}

// Source returns the stored source of id (nil when absent).
func (d *Documents) Source(id string) json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.docs[id].source
}

// Overwrite stores source under id unconditionally (another writer), as a new version.
func (d *Documents) Overwrite(id string, source json.RawMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.exists = true
	d.store(id, source)
}

func (d *Documents) store(id string, source json.RawMessage) storedDoc {
	d.seq++
	old := d.docs[id]
	doc := storedDoc{seq: d.seq, version: old.version + 1, source: source}
	d.docs[id] = doc
	d.writes++
	return doc
}

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (d *Documents) errorBody(status int, typ, reason string) string {
	cause := fmt.Sprintf(`{"type":%q,"reason":%q,"index":%q,"index_uuid":"Xk3tq0vDTYOQ7m2yJc9qVg"}`, typ, reason, d.Index)
	return fmt.Sprintf(`{"error":{"root_cause":[%s],"type":%q,"reason":%q,"index":%q,"index_uuid":"Xk3tq0vDTYOQ7m2yJc9qVg"},"status":%d}`, cause, typ, reason, d.Index, status)
}

func (d *Documents) createIndex(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.exists {
		reply(w, http.StatusBadRequest, d.errorBody(400, "resource_already_exists_exception", "index ["+d.Index+"/Xk3tq0vDTYOQ7m2yJc9qVg] already exists"))
		return
	}
	d.exists = true
	reply(w, http.StatusOK, fmt.Sprintf(`{"acknowledged":true,"shards_acknowledged":true,"index":%q}`, d.Index))
}

func (d *Documents) get(w http.ResponseWriter, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.exists {
		reply(w, http.StatusNotFound, d.errorBody(404, "index_not_found_exception", "no such index ["+d.Index+"]"))
		return
	}
	doc, ok := d.docs[id]
	if !ok {
		reply(w, http.StatusNotFound, fmt.Sprintf(`{"_index":%q,"_id":%q,"found":false}`, d.Index, id))
		return
	}
	reply(w, http.StatusOK, fmt.Sprintf(`{"_index":%q,"_id":%q,"_version":%d,"_seq_no":%d,"_primary_term":%d,"found":true,"_source":%s}`,
		d.Index, id, doc.version, doc.seq, d.term, doc.source))
}

func (d *Documents) put(w http.ResponseWriter, r *http.Request, id string) {
	body, _ := io.ReadAll(r.Body)
	if !json.Valid(body) {
		reply(w, http.StatusBadRequest, d.errorBody(400, "mapper_parsing_exception", "failed to parse"))
		return
	}
	if d.BeforeWrite != nil {
		d.BeforeWrite()
	}
	q := r.URL.Query()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.exists = true // a write creates a missing index, as OpenSearch does
	old, found := d.docs[id]
	conflict := func(reason string) {
		d.Refused++
		reply(w, http.StatusConflict, d.errorBody(409, "version_conflict_engine_exception", reason))
	}
	switch {
	case q.Get("op_type") == "create":
		if found {
			conflict(fmt.Sprintf("[%s]: version conflict, document already exists (current version [%d])", id, old.version))
			return
		}
	case q.Has("if_seq_no"):
		seq, err1 := strconv.ParseInt(q.Get("if_seq_no"), 10, 64)
		term, err2 := strconv.ParseInt(q.Get("if_primary_term"), 10, 64)
		if err1 != nil || err2 != nil {
			reply(w, http.StatusBadRequest, d.errorBody(400, "illegal_argument_exception", "if_seq_no and if_primary_term must be numbers"))
			return
		}
		if !found {
			conflict(fmt.Sprintf("[%s]: version conflict, required seqNo [%d], primary term [%d]. but no document was found", id, seq, term))
			return
		}
		if seq != old.seq || term != d.term {
			conflict(fmt.Sprintf("[%s]: version conflict, required seqNo [%d], primary term [%d]. current document has seqNo [%d] and primary term [%d]", id, seq, term, old.seq, d.term))
			return
		}
	}
	doc := d.store(id, body)
	result := "updated"
	if !found {
		result = "created"
	}
	status := http.StatusOK
	if !found {
		status = http.StatusCreated
	}
	reply(w, status, fmt.Sprintf(`{"_index":%q,"_id":%q,"_version":%d,"result":%q,"_shards":{"total":2,"successful":2,"failed":0},"_seq_no":%d,"_primary_term":%d}`,
		d.Index, id, doc.version, result, doc.seq, d.term))
}
