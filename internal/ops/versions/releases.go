package versions

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/packages"
)

// Release is one line of the release table: the Wazuh 4.x releases From…To (inclusive) and the
// OpenSearch their indexer package is built on.
type Release struct {
	From, To   string
	OpenSearch string
	// Lucene is that OpenSearch's Lucene ("9.12") and Codec the Lucene codec its new segments are
	// written with: an OpenSearch on an older codec cannot read them at all.
	Lucene, Codec string
	Source        string
}

// Releases is the one table of which OpenSearch each Wazuh 4.x indexer carries, oldest first
// (sources: wazuh-packages and wazuh-indexer pull requests; see the docs/upgrade.md).
// There is no 4.15: the 4.x line goes on as 4.14.x patches.
var Releases = []Release{
	{"4.8.0", "4.8.2", "2.10.0", "9.7", "Lucene95", "wazuh-packages PR #2562"},
	{"4.9.0", "4.9.2", "2.13.0", "9.10", "Lucene99", "wazuh-kubernetes#879, wazuh#25327"},
	{"4.10.0", "4.10.3", "2.16.0", "9.11", "Lucene99", "wazuh-indexer#1351"},
	{"4.11.0", "4.11.2", "2.16.0", "9.11", "Lucene99", "wazuh-indexer#787"},
	{"4.12.0", "4.12.1", "2.19.1", "9.12", "Lucene912", "wazuh-indexer PR #739, #702"},
	{"4.13.0", "4.13.1", "2.19.2", "9.12", "Lucene912", "wazuh-indexer PR #815"},
	{"4.14.0", "4.14.1", "2.19.3", "9.12", "Lucene912", "wazuh-indexer PR #1050"},
	{"4.14.2", "4.14.4", "2.19.4", "9.12", "Lucene912", "wazuh-indexer#1230"},
	{"4.14.5", "4.14.7", "2.19.5", "9.12", "Lucene912", "wazuh-indexer#1350"},
	{"4.14.8", "4.14.8", "2.19.6", "9.12", "Lucene912", "wazuh-indexer PR #1825"},
}

// Trap is a known problem of one OpenSearch version.
type Trap struct {
	OpenSearch string
	Problem    string
	Source     string
}

// Traps are the OpenSearch versions to avoid or to know about.
var Traps = []Trap{
	{"2.19.0", "OpenSearch 2.19.0 crashes at node start with TLS certificate hot reload enabled (plugins.security.ssl.certificates_hot_reload.enabled): upgrade to 2.19.1 or later, or keep hot reload off", "opensearch-k8s-operator PR #1460, security#5115"},
}

// MigrationDoc is what to read before a 5.x target.
const MigrationDoc = "Wazuh 5.0's upgrade guide (docs/ref/upgrade.md on the 5.0.0 branch: a fresh installation), wazuh-indexer-plugins docs/guide/migration/legacy-indices.md (what becomes of 4.x data) and remote-agent-upgrade.md (agents at 4.14.x first)"

// ReleaseOf returns the table's line of a Wazuh version (upstream or package version, "4.14.4" or
// "4.14.4-1"); false when the table does not know it.
func ReleaseOf(v string) (Release, bool) {
	up := packages.Upstream(v)
	for _, r := range Releases {
		if compare(up, r.From) >= 0 && compare(up, r.To) <= 0 {
			return r, true
		}
	}
	return Release{}, false
}

// Path is what the indexer crosses on an upgrade from one Wazuh release to another: the OpenSearch
// versions on both sides (the table's and the nodes' own), whether the old version can read the
// new data, the traps on the way, and for a 5.x target the reason it is no in-place upgrade.
type Path struct {
	From string `json:"from"`
	To   string `json:"to"`
	// FromOpenSearch and ToOpenSearch are the table's ("" unknown to it).
	FromOpenSearch string `json:"from_opensearch,omitempty"`
	ToOpenSearch   string `json:"to_opensearch,omitempty"`
	// Running is the OpenSearch the nodes run now, from _nodes (GET / says 7.10.2).
	Running []indexer.NodeVersion `json:"running,omitempty"`
	// Readable: the old OpenSearch can start on the data the new one leaves (same version).
	Readable bool `json:"old_reads_new_data"`
	// Rollback says how a rollback gets the indexer's data back.
	Rollback string   `json:"rollback"`
	Traps    []string `json:"traps,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// NoGo is set when the path is no upgrade siemctl can do (a 5.x target), with Read what to read.
	NoGo string `json:"no_go,omitempty"`
	Read string `json:"read,omitempty"`
}

// Cross judges the path of the indexer from the installed Wazuh release from to the target to,
// with the versions the nodes run (nil when not known).
func Cross(from, to string, running []indexer.NodeVersion) Path {
	p := Path{From: packages.Upstream(from), To: packages.Upstream(to), Running: running}
	if major(p.To) >= 5 {
		p.NoGo = fmt.Sprintf("Wazuh %s is a migration, not an upgrade: the 5.x indexer and dashboard packages refuse to install over 4.x (no in-place upgrade; 5.x needs a fresh installation), "+
			"4.x indexed data does not carry over (it cannot be restored, reindexed or upgraded into 5.x), and agents upgrade remotely to 5.x only from 4.14.0 or later (else error 1822): upgrade the agents to 4.14.x first", p.To)
		p.Read = MigrationDoc
		p.Rollback = "not applicable: nothing is upgraded in place"
		return p
	}
	fr, fok := ReleaseOf(p.From)
	tr, tok := ReleaseOf(p.To)
	p.FromOpenSearch, p.ToOpenSearch = fr.OpenSearch, tr.OpenSearch
	if !fok && p.From != "" {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the release table does not know Wazuh %s: its indexer's OpenSearch is taken from the nodes only", p.From))
	}
	if !tok {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the release table does not know Wazuh %s (it ends at %s): which OpenSearch it carries, whether a rollback can keep the data and its traps are not known; read its release notes", p.To, Releases[len(Releases)-1].To))
	}
	if fok {
		for _, n := range running {
			if n.Version != fr.OpenSearch {
				p.Warnings = append(p.Warnings, fmt.Sprintf("node %s runs OpenSearch %s, but Wazuh %s carries %s (a package not from Wazuh, or a node not restarted after its upgrade)", n.Name, n.Version, p.From, fr.OpenSearch))
			}
		}
	}
	old := fr.OpenSearch
	if old == "" && len(running) > 0 {
		old = running[0].Version
	}
	switch {
	case old != "" && old == tr.OpenSearch:
		p.Readable = true
		p.Rollback = fmt.Sprintf("the indexer stays on OpenSearch %s: the older package starts on the data as it is (the secured copy or snapshot is still taken)", old)
	case old != "" && tr.OpenSearch != "" && fr.Codec != "" && fr.Codec != tr.Codec:
		p.Rollback = fmt.Sprintf("OpenSearch %s refuses to start on data written by %s, and cannot even read its segments (codec %s of Lucene %s, after %s): a rollback brings back the data secured before the upgrade (the copy or the snapshot); alerts written after it come back only as the shipper re-sends them",
			old, tr.OpenSearch, tr.Codec, tr.Lucene, fr.Codec)
	default:
		p.Rollback = fmt.Sprintf("OpenSearch %s refuses to start on data written by a newer version: a rollback brings back the data secured before the upgrade (the copy or the snapshot); alerts written after it come back only as the shipper re-sends them", cmpOr(old, "of the installed release"))
	}
	for _, t := range Traps {
		var on []string
		for _, v := range []string{old, tr.OpenSearch} {
			if v == t.OpenSearch && !slices.Contains(on, v) {
				on = append(on, v)
			}
		}
		for _, n := range running {
			if n.Version == t.OpenSearch && !slices.Contains(on, n.Version) {
				on = append(on, n.Version)
			}
		}
		if len(on) > 0 {
			p.Traps = append(p.Traps, t.Problem+" ("+t.Source+")")
		}
	}
	if fok && tok && fr.Codec != tr.Codec {
		p.Traps = append(p.Traps, fmt.Sprintf("the Lucene codec changes (%s → %s): after the upgrade no older indexer can read the data; Wazuh's maintainers say reverting such an upgrade needs a fresh installation (wazuh-indexer#787): keep the secured copy or snapshot until the upgrade is accepted", fr.Codec, tr.Codec))
	}
	return p
}

// Lines are the path's facts, one line each, for the plans and the health check.
func (p Path) Lines() []string {
	if p.NoGo != "" {
		return []string{"NO-GO: " + p.NoGo, "read before anything else: " + p.Read}
	}
	var out []string
	side := func(w, os string) string {
		if os == "" {
			return "Wazuh " + w + " (OpenSearch unknown to the release table)"
		}
		return "Wazuh " + w + " = OpenSearch " + os
	}
	out = append(out, "indexer: "+side(p.From, p.FromOpenSearch)+" → "+side(p.To, p.ToOpenSearch))
	if len(p.Running) > 0 {
		out = append(out, "running now (_nodes): "+Nodes(p.Running))
	}
	readable := "no"
	if p.Readable {
		readable = "yes"
	}
	out = append(out, "old version reads the new data: "+readable+"; rollback: "+p.Rollback)
	for _, t := range p.Traps {
		out = append(out, "trap: "+t)
	}
	for _, w := range p.Warnings {
		out = append(out, "warning: "+w)
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// compare compares dotted numeric versions ("4.14.4" < "4.14.10"); a missing part is 0.
func compare(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		x, y := part(pa, i), part(pb, i)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func part(p []string, i int) int {
	if i >= len(p) {
		return 0
	}
	n, _ := strconv.Atoi(p[i])
	return n
}

func major(v string) int { return part(strings.Split(v, "."), 0) }

// Known are the release table's facts about the installed indexer release up and the versions its
// nodes run (evidence lines): the OpenSearch the release carries, a node running another, a node on
// a trap version, or a release the table does not know.
func Known(up string, nodes []indexer.NodeVersion) []string {
	var out []string
	r, ok := ReleaseOf(up)
	switch {
	case ok:
		out = append(out, fmt.Sprintf("release table: Wazuh %s's indexer is OpenSearch %s", up, r.OpenSearch))
		for _, n := range nodes {
			if n.Version != r.OpenSearch {
				out = append(out, fmt.Sprintf("node %s runs OpenSearch %s, not the %s of Wazuh %s (a package not from Wazuh, or a node not restarted after its upgrade)", n.Name, n.Version, r.OpenSearch, up))
			}
		}
	case major(up) == 4:
		out = append(out, fmt.Sprintf("release table: Wazuh %s is not in it (it knows 4.8.0 to %s)", up, Releases[len(Releases)-1].To))
	}
	for _, t := range Traps {
		for _, n := range nodes {
			if n.Version == t.OpenSearch {
				out = append(out, "node "+n.Name+": "+t.Problem)
			}
		}
	}
	return out
}
