package indexer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Template is a legacy template (_template).
type Template struct {
	Name          string          `json:"name"`
	Found         bool            `json:"found"`
	IndexPatterns []string        `json:"index_patterns"`
	Order         int             `json:"order"`
	Version       *int64          `json:"version,omitempty"`
	Hash          string          `json:"hash,omitempty"`          // sha256 of the canonical JSON of the whole template
	MappingsHash  string          `json:"mappings_hash,omitempty"` // sha256 of the canonical JSON of its mappings
	Body          json.RawMessage `json:"-"`
}

// ComposableTemplate is an index template (_index_template).
type ComposableTemplate struct {
	Name          string   `json:"name"`
	IndexPatterns []string `json:"index_patterns"`
	Priority      int64    `json:"priority"`
	Version       *int64   `json:"version,omitempty"`
	ComposedOf    []string `json:"composed_of"`
	Hash          string   `json:"hash"`
}

// Pipeline is an ingest pipeline.
type Pipeline struct {
	ID          string          `json:"id"`
	Found       bool            `json:"found"`
	Description string          `json:"description,omitempty"`
	Version     *int64          `json:"version,omitempty"`
	Hash        string          `json:"hash,omitempty"`
	Body        json.RawMessage `json:"-"`
}

// CanonicalHash returns the hex sha256 of data's canonical JSON form: object
// keys sorted, insignificant whitespace removed, numbers kept as written. Use
// it to compare a fetched template or pipeline with a file.
func CanonicalHash(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("canonical JSON: %w", err)
	}
	canon, err := json.Marshal(v) // maps are emitted with sorted keys
	if err != nil {
		return "", fmt.Errorf("canonical JSON: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

type legacyBody struct {
	Order         int             `json:"order"`
	Version       *int64          `json:"version"`
	IndexPatterns []string        `json:"index_patterns"`
	Mappings      json.RawMessage `json:"mappings"`
}

func (c *Client) legacyFrom(r *response, name string, raw json.RawMessage) (Template, error) {
	var b legacyBody
	h, err := c.hashed(r, "template "+name, raw, &b)
	if err != nil {
		return Template{}, err
	}
	t := Template{Name: name, Found: true, IndexPatterns: b.IndexPatterns, Order: b.Order, Version: b.Version, Hash: h, Body: raw}
	if t.IndexPatterns == nil {
		t.IndexPatterns = []string{}
	}
	if len(b.Mappings) > 0 {
		if t.MappingsHash, err = CanonicalHash(b.Mappings); err != nil {
			return Template{}, c.badResponse(r, err, "template "+name)
		}
	}
	return t, nil
}

// LegacyTemplate calls GET _template/<name>; a missing template is
// Found=false, not an error.
func (c *Client) LegacyTemplate(ctx context.Context, name string) (Template, error) {
	if err := validName("GET /_template", "template name", name); err != nil {
		return Template{}, err
	}
	raw, r, err := c.getNamed(ctx, "/_template/", name)
	if err != nil {
		return Template{}, err
	}
	if raw == nil {
		return Template{Name: name, IndexPatterns: []string{}}, nil
	}
	return c.legacyFrom(r, name, raw)
}

// validName refuses an empty, wildcard or list name of one object (what:
// "template name", "pipeline id", …) before any request.
func validName(op, what, name string) error {
	if name == "" || hasWildcard(name) || strings.Contains(name, ",") {
		return &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: fmt.Sprintf("invalid %s %q", what, name)}
	}
	return nil
}

// getNamed GETs prefix+name, an object keyed by name (a template, a
// pipeline), and returns name's value; nil when the node answers 404 or
// does not list name.
func (c *Client) getNamed(ctx context.Context, prefix, name string) (json.RawMessage, *response, error) {
	path := prefix + url.PathEscape(name)
	r, err := c.call(ctx, http.MethodGet, request{path: path}, path, http.StatusNotFound)
	if err != nil || r.status == http.StatusNotFound {
		return nil, r, err
	}
	var m map[string]json.RawMessage
	if err := c.decode(r, &m); err != nil {
		return nil, r, err
	}
	return m[name], r, nil
}

// hashed decodes raw (one object of r's answer, what names it) into v and
// returns raw's CanonicalHash; a failure is a bad response naming what.
func (c *Client) hashed(r *response, what string, raw json.RawMessage, v any) (string, error) {
	if err := json.Unmarshal(raw, v); err != nil {
		return "", c.badResponse(r, err, what)
	}
	h, err := CanonicalHash(raw)
	if err != nil {
		return "", c.badResponse(r, err, what)
	}
	return h, nil
}

// ListLegacyTemplates calls GET _template, sorted by name.
func (c *Client) ListLegacyTemplates(ctx context.Context) ([]Template, error) {
	r, err := c.call(ctx, http.MethodGet, request{path: "/_template"}, "/_template")
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := c.decode(r, &m); err != nil {
		return nil, err
	}
	out := make([]Template, 0, len(m))
	for name, raw := range m {
		t, err := c.legacyFrom(r, name, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ComposableTemplates calls GET _index_template, sorted by name.
func (c *Client) ComposableTemplates(ctx context.Context) ([]ComposableTemplate, error) {
	r, err := c.call(ctx, http.MethodGet, request{path: "/_index_template"}, "/_index_template", http.StatusNotFound)
	if err != nil {
		return nil, err
	}
	if r.status == http.StatusNotFound {
		return []ComposableTemplate{}, nil
	}
	var raw struct {
		IndexTemplates []struct {
			Name          string          `json:"name"`
			IndexTemplate json.RawMessage `json:"index_template"`
		} `json:"index_templates"`
	}
	if err := c.decode(r, &raw); err != nil {
		return nil, err
	}
	out := make([]ComposableTemplate, 0, len(raw.IndexTemplates))
	for _, it := range raw.IndexTemplates {
		var b struct {
			IndexPatterns []string `json:"index_patterns"`
			Priority      int64    `json:"priority"`
			Version       *int64   `json:"version"`
			ComposedOf    []string `json:"composed_of"`
		}
		h, err := c.hashed(r, "index template "+it.Name, it.IndexTemplate, &b)
		if err != nil {
			return nil, err
		}
		ct := ComposableTemplate{Name: it.Name, IndexPatterns: b.IndexPatterns, Priority: b.Priority, Version: b.Version, ComposedOf: b.ComposedOf, Hash: h}
		if ct.IndexPatterns == nil {
			ct.IndexPatterns = []string{}
		}
		if ct.ComposedOf == nil {
			ct.ComposedOf = []string{}
		}
		out = append(out, ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PutLegacyTemplate calls PUT _template/<name> with body (the template JSON)
// and verifies acknowledged.
func (c *Client) PutLegacyTemplate(ctx context.Context, name string, body []byte) error {
	if err := validName("PUT /_template", "template name", name); err != nil {
		return err
	}
	if !json.Valid(body) {
		return &netclient.Error{Op: "PUT /_template/" + name, Kind: netclient.ErrBadResponse, Detail: "template body is not valid JSON"}
	}
	path := "/_template/" + url.PathEscape(name)
	_, err := c.change(ctx, http.MethodPut, request{path: path, body: body}, path)
	return err
}

// LegacyMatch is a legacy template whose patterns match an index name.
type LegacyMatch struct {
	Name  string `json:"name"`
	Order int    `json:"order"`
}

// Overlap is a template the simulate API reports as overlapping the winner.
type Overlap struct {
	Name          string   `json:"name"`
	IndexPatterns []string `json:"index_patterns"`
}

// Simulation tells which templates shape a new index of a given name.
//
// OpenSearch (MetadataCreateIndexService) picks templates like this: if any
// composable template (_index_template) matches the name, the one with the
// highest priority is used alone and every legacy template is ignored;
// otherwise all matching legacy templates (_template) are merged in
// ascending order, a higher order overriding a lower one. The simulate API
// (POST _index_template/_simulate_index/<name>) returns the resolved
// composable template and the other templates overlapping it, but not the
// winner's name, so the name comes from matching the composable templates'
// patterns ourselves, and the simulate answer confirms whether a composable
// template applies at all.
type Simulation struct {
	Index      string        `json:"index"`
	Composable string        `json:"composable,omitempty"` // winning composable template, "" if none
	Legacy     []LegacyMatch `json:"legacy"`               // matching legacy templates, ascending order
	// Applied lists the templates that actually shape the index: the
	// composable winner alone, or the legacy matches (last one wins on
	// conflicts).
	Applied     []string  `json:"applied"`
	Winner      string    `json:"winner,omitempty"` // composable winner, else the highest-order legacy match
	Overlapping []Overlap `json:"overlapping"`
}

// ShadowedBy returns the templates that override template name for this
// index: the composable winner when name is a legacy template, or legacy
// templates of higher order. Empty when name wins or does not match.
func (s Simulation) ShadowedBy(name string) []string {
	out := []string{}
	pos := -1
	for i, l := range s.Legacy {
		if l.Name == name {
			pos = i
		}
	}
	switch {
	case s.Composable != "" && s.Composable != name && pos >= 0:
		out = append(out, s.Composable)
	case s.Composable == "" && pos >= 0:
		for _, l := range s.Legacy[pos+1:] {
			if l.Order > s.Legacy[pos].Order {
				out = append(out, l.Name)
			}
		}
	}
	return out
}

// SimulateIndex resolves which templates apply to a new index named
// indexName (see Simulation for the rules).
func (c *Client) SimulateIndex(ctx context.Context, indexName string) (Simulation, error) {
	if err := validName("POST /_index_template/_simulate_index", "index name", indexName); err != nil {
		return Simulation{}, err
	}
	path := "/_index_template/_simulate_index/" + url.PathEscape(indexName)
	r, err := c.call(ctx, http.MethodPost, request{path: path}, path)
	if err != nil {
		return Simulation{}, err
	}
	var sim struct {
		Template    json.RawMessage `json:"template"`
		Overlapping []Overlap       `json:"overlapping"`
	}
	if err := c.decode(r, &sim); err != nil {
		return Simulation{}, err
	}
	out := Simulation{Index: indexName, Legacy: []LegacyMatch{}, Applied: []string{}, Overlapping: sim.Overlapping}
	if out.Overlapping == nil {
		out.Overlapping = []Overlap{}
	}
	composableApplies := len(sim.Template) > 0 && string(sim.Template) != "null"

	if composableApplies {
		cts, err := c.ComposableTemplates(ctx)
		if err != nil {
			return Simulation{}, err
		}
		var best *ComposableTemplate
		for i := range cts {
			if !matchesAny(cts[i].IndexPatterns, indexName) {
				continue
			}
			if best == nil || cts[i].Priority > best.Priority {
				best = &cts[i]
			}
		}
		if best == nil {
			// The node says one applies but none matched by pattern here
			// (changed between the calls): report it without a name.
			return Simulation{}, c.badResponse(r, errors.New("no matching composable template"), "simulate reports a composable template none of whose patterns match")
		}
		out.Composable = best.Name
	}

	legacy, err := c.ListLegacyTemplates(ctx)
	if err != nil {
		return Simulation{}, err
	}
	for _, t := range legacy {
		if matchesAny(t.IndexPatterns, indexName) {
			out.Legacy = append(out.Legacy, LegacyMatch{Name: t.Name, Order: t.Order})
		}
	}
	sort.SliceStable(out.Legacy, func(i, j int) bool {
		if out.Legacy[i].Order != out.Legacy[j].Order {
			return out.Legacy[i].Order < out.Legacy[j].Order
		}
		return out.Legacy[i].Name < out.Legacy[j].Name
	})
	switch {
	case out.Composable != "":
		out.Applied = []string{out.Composable}
		out.Winner = out.Composable
	case len(out.Legacy) > 0:
		for _, l := range out.Legacy {
			out.Applied = append(out.Applied, l.Name)
		}
		out.Winner = out.Legacy[len(out.Legacy)-1].Name
	}
	return out, nil
}

func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if simpleMatch(p, name) {
			return true
		}
	}
	return false
}

// simpleMatch is OpenSearch's Regex.simpleMatch: '*' matches any run of
// characters; everything else is literal.
func simpleMatch(pattern, s string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == s
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}

// Pipeline calls GET _ingest/pipeline/<id>; a missing pipeline is
// Found=false, not an error.
func (c *Client) Pipeline(ctx context.Context, id string) (Pipeline, error) {
	if err := validName("GET /_ingest/pipeline", "pipeline id", id); err != nil {
		return Pipeline{}, err
	}
	raw, r, err := c.getNamed(ctx, "/_ingest/pipeline/", id)
	if err != nil {
		return Pipeline{}, err
	}
	if raw == nil {
		return Pipeline{ID: id}, nil
	}
	var b struct {
		Description string `json:"description"`
		Version     *int64 `json:"version"`
	}
	h, err := c.hashed(r, "pipeline "+id, raw, &b)
	if err != nil {
		return Pipeline{}, err
	}
	return Pipeline{ID: id, Found: true, Description: b.Description, Version: b.Version, Hash: h, Body: raw}, nil
}
