package cluster

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
)

// APICall is one indexer REST call that fixes something.
type APICall struct {
	Method string `json:"method"`
	Path   string `json:"path"` // with the leading slash, escaped
	Body   string `json:"body"` // JSON, "" for none
}

// String is the call as the OpenSearch console writes it:
// PUT /siem-lab-red/_settings {"index.routing.allocation.require._name":null}.
func (c APICall) String() string {
	s := c.Method + " " + c.Path
	if c.Body != "" {
		s += " " + c.Body
	}
	return s
}

// Curl is the call as a curl command line against baseURL, authenticated as
// user (curl asks for the password: it never appears on the command line),
// verifying TLS with caFile unless insecure.
func (c APICall) Curl(baseURL, user, caFile string, insecure bool) string {
	args := []string{"curl"}
	if user != "" {
		args = append(args, "-u", shellQuote(user))
	}
	switch {
	case insecure:
		args = append(args, "-k")
	case caFile != "":
		args = append(args, "--cacert", shellQuote(caFile))
	}
	args = append(args, "-X", c.Method, shellQuote(strings.TrimRight(baseURL, "/")+c.Path))
	if c.Body != "" {
		args = append(args, "-H", shellQuote("Content-Type: application/json"), "-d", shellQuote(c.Body))
	}
	return strings.Join(args, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Remedy is what to do about one decider that keeps a shard unassigned: the
// problem read from the allocation explanation and either a REST call or a
// command.
type Remedy struct {
	Decider string   `json:"decider"`
	Problem string   `json:"problem"`
	Call    *APICall `json:"call,omitempty"`
	Command string   `json:"command,omitempty"`
	// indices of an index-level Call (PUT /<indices>/_settings), so that
	// the same fix for several indices becomes one call (see Merge).
	indices []string
}

// indexSettings is the call that puts body on the indices' settings.
func indexSettings(indices []string, body string) *APICall {
	esc := make([]string, len(indices))
	for i, ix := range indices {
		esc[i] = url.PathEscape(ix)
	}
	return &APICall{Method: "PUT", Path: "/" + strings.Join(esc, ",") + "/_settings", Body: body}
}

// Merge joins the remedies that put the same index settings for the same
// problem into one call on all their indices (OpenSearch takes a
// comma-separated index list) and drops duplicates; the order is kept.
func Merge(rs []Remedy) []Remedy {
	out := []Remedy{}
	at := map[string]int{}
	for _, r := range rs {
		key := r.String()
		if len(r.indices) > 0 && r.Call != nil {
			key = "index\x00" + r.Decider + "\x00" + r.Problem + "\x00" + r.Call.Body
		}
		i, ok := at[key]
		if !ok {
			at[key] = len(out)
			out = append(out, r)
			continue
		}
		if len(r.indices) == 0 {
			continue
		}
		m := &out[i]
		for _, ix := range r.indices {
			if !slices.Contains(m.indices, ix) {
				m.indices = append(m.indices, ix)
			}
		}
		m.Call = indexSettings(m.indices, m.Call.Body)
	}
	return out
}

// String is the problem and the fix on one line.
func (r Remedy) String() string {
	fix := r.Command
	if r.Call != nil {
		fix = r.Call.String()
	}
	return r.Problem + ": " + fix
}

// filterRE reads the filter decider's explanation (OpenSearch
// FilterAllocationDecider): "node does not match index setting
// [index.routing.allocation.require] filters [_name:\"x\"]", "node matches
// cluster setting [cluster.routing.allocation.exclude] filters [...]".
var (
	filterRE     = regexp.MustCompile(`^node (does not match|matches) (index|cluster) setting \[([a-z._]+)\] filters \[(.*)\]$`)
	filterAttrRE = regexp.MustCompile(`([^\s,:"]+):"([^"]*)"`)
)

// Remedies reads an allocation explanation and says what to do about each
// decider that said NO, most specific first: an allocation filter that keeps
// the shard off every node gives the exact call that removes it. The
// cluster-wide allocation.enable setting is not judged here (see Shards and
// the indexer.allocation health check, which read it from the settings).
func Remedies(e indexer.Explanation) []Remedy {
	var filters, others []Remedy
	seen := map[string]bool{}
	nodes := map[string][]string{}
	all, holding := map[string]bool{}, map[string]bool{} // holding: the nodes that hold a copy already
	sameShardSaid := false                               // the multi-node same_shard remedy, once a shard
	for _, d := range e.Blocking() {
		nodes[d.Decider+"\x00"+d.Explanation] = append(nodes[d.Decider+"\x00"+d.Explanation], d.Node)
		all[d.Node] = true
		if d.Decider == "same_shard" {
			holding[d.Node] = true
		}
	}
	for _, d := range e.Blocking() {
		key := d.Decider + "\x00" + d.Explanation
		if seen[key] {
			continue
		}
		seen[key] = true
		switch d.Decider {
		case "filter":
			if r, ok := filterRemedy(e.Index, d.Explanation, nodes[key], len(all)); ok {
				filters = append(filters, r)
			}
		case "same_shard":
			if e.Primary {
				continue // only a replica can meet its primary
			}
			if len(all) > 1 {
				if sameShardSaid || len(holding) < len(all) {
					continue // other nodes said no for their own reasons, named by their deciders
				}
				// Every node holds a copy already: fewer nodes than copies, as while a node of a
				// multi-node cluster is away. Dropping replicas there would leave the data one
				// node from loss; the node coming back is the fix.
				others = append(others, Remedy{Decider: d.Decider,
					Problem: fmt.Sprintf("every node that could hold this replica (%s) already holds a copy of the shard: the cluster has fewer nodes than the index has copies", strings.Join(sortedKeys(all), ", ")),
					Command: "bring the missing indexer node back (`siemctl services start indexer` on its host) and the replica recovers on it; until then the index stays yellow"})
				sameShardSaid = true // once for the shard, whatever each node's wording
				continue
			}
			others = append(others, Remedy{Decider: d.Decider,
				Problem: "a replica cannot sit on the node holding its primary: on a single node accept yellow or drop the replicas",
				Call:    indexSettings([]string{e.Index}, `{"index.number_of_replicas":0}`), indices: []string{e.Index}})
		case "disk_threshold":
			others = append(others, Remedy{Decider: d.Decider, Problem: "the disk watermark blocks allocation",
				Command: "free disk space, or temporarily `siemctl indexer watermark --recover`"})
		case "max_retry":
			others = append(others, Remedy{Decider: d.Decider, Problem: "allocation gave up after repeated failures",
				Command: "fix the cause (see the details), then POST /_cluster/reroute?retry_failed=true"})
		}
	}
	return append(filters, others...)
}

// filterRemedy turns one filter decider's explanation into the call that
// removes the filter's attributes; nodes are those the filter said NO on, of
// allNodes nodes that said NO at all.
func filterRemedy(index, explanation string, nodes []string, allNodes int) (Remedy, bool) {
	m := filterRE.FindStringSubmatch(explanation)
	if m == nil {
		return Remedy{}, false
	}
	verb, scope, setting := m[1], m[2], m[3]
	attrs := filterAttrRE.FindAllStringSubmatch(m[4], -1)
	if len(attrs) == 0 {
		return Remedy{}, false
	}
	var kv []string
	reset := map[string]any{}
	for _, a := range attrs {
		kv = append(kv, fmt.Sprintf("%s.%s=%q", setting, a[1], a[2]))
		reset[setting+"."+a[1]] = nil
	}
	sort.Strings(kv)
	what := "matches none of the nodes"
	if verb == "matches" {
		what = "excludes every node"
	}
	if len(nodes) < allNodes {
		what = "keeps the shard off some nodes"
	}
	sort.Strings(nodes)
	var problem string
	var call *APICall
	if scope == "index" {
		problem = fmt.Sprintf("the allocation filter %s on index %s %s (%s)", strings.Join(kv, ", "), index, what, strings.Join(nodes, ", "))
		body, _ := json.Marshal(reset)
		call = indexSettings([]string{index}, string(body))
	} else {
		problem = fmt.Sprintf("the cluster-wide allocation filter %s %s (%s)", strings.Join(kv, ", "), what, strings.Join(nodes, ", "))
		body, _ := json.Marshal(map[string]any{"persistent": reset, "transient": reset})
		call = &APICall{Method: "PUT", Path: "/_cluster/settings", Body: string(body)}
	}
	return Remedy{Decider: "filter", Problem: problem + ": remove it", Call: call}, true
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
