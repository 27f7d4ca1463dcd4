package cluster

import (
	"fmt"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/verdict"
)

// NodeFacts are what the indexer cluster says of its nodes: the real version of each from _nodes (GET /
// may answer 7.10.2 under the compatibility override), heap and disk from _cat/nodes, the elected
// cluster manager.
type NodeFacts struct {
	Versions []indexer.NodeVersion
	Stats    []indexer.Node
	Manager  string
	// Expected are the node names configured (indexer.nodes); empty: the nodes that answer.
	Expected []string
}

// NodeLimits are the per-node thresholds (percent).
type NodeLimits struct {
	HeapWarn, DiskWarn, DiskNoGo int
}

// NodeLine is one node's verdict line ("indexer-1 2.19.3 cluster_manager* heap 41% disk 12%").
type NodeLine struct {
	Name  string
	Level Level
	Text  string
}

// Missing are the expected nodes not present, and a NoGo line for each
// ("node-2: <why>"): the one check of an expected node list, for the
// indexer's cluster and the manager's (internal/ops/mgrcluster).
func Missing(expected []string, present map[string]bool, why string) ([]string, []NodeLine) {
	var missing []string
	var lines []NodeLine
	for _, want := range expected {
		if !present[want] {
			missing = append(missing, want)
			lines = append(lines, NodeLine{Name: want, Level: NoGo, Text: want + ": " + why})
		}
	}
	return missing, lines
}

// Nodes judges a multi-node indexer cluster: every expected node present (a missing one named), one
// version everywhere, an elected cluster manager, heap and disk per node.
func Nodes(f NodeFacts, l NodeLimits) (Verdict, []NodeLine) {
	stats := map[string]indexer.Node{}
	for _, s := range f.Stats {
		stats[s.Name] = s
	}
	var lines []NodeLine
	var problems, fixes []string
	level := OK
	raise := func(lv Level) {
		if lv > level {
			level = lv
		}
	}
	versions := map[string][]string{}
	present := map[string]bool{}
	for _, v := range f.Versions {
		present[v.Name] = true
		versions[v.Version] = append(versions[v.Version], v.Name)
		ln := NodeLine{Name: v.Name, Level: OK}
		role := strings.Join(v.Roles, ",")
		if v.Name == f.Manager {
			role += " (elected cluster manager)"
		}
		ln.Text = fmt.Sprintf("%s: %s, roles %s", v.Name, v.Version, role)
		if s, ok := stats[v.Name]; ok {
			ln.Text += fmt.Sprintf(", heap %d%%, disk %.0f%%", s.HeapPercent, s.DiskUsedPercent)
			switch {
			case l.DiskNoGo > 0 && s.DiskUsedPercent > float64(l.DiskNoGo):
				ln.Level = NoGo
				problems = append(problems, fmt.Sprintf("%s disk %.0f%% used", v.Name, s.DiskUsedPercent))
				fixes = append(fixes, "free disk on "+v.Name)
			case l.DiskWarn > 0 && s.DiskUsedPercent > float64(l.DiskWarn):
				ln.Level = Warn
				problems = append(problems, fmt.Sprintf("%s disk %.0f%% used", v.Name, s.DiskUsedPercent))
			}
			if l.HeapWarn > 0 && s.HeapPercent > l.HeapWarn {
				ln.Level = max(ln.Level, Warn)
				problems = append(problems, fmt.Sprintf("%s heap %d%% used", v.Name, s.HeapPercent))
				fixes = append(fixes, "check "+v.Name+"'s heap (jvm.options -Xmx) and its load")
			}
		}
		raise(ln.Level)
		lines = append(lines, ln)
	}
	missing, absent := Missing(f.Expected, present, "not in the cluster")
	lines = append(lines, absent...)
	if len(missing) > 0 {
		raise(NoGo)
		problems = append([]string{fmt.Sprintf("node(s) missing: %s (%d/%d in the cluster)", strings.Join(missing, ", "), len(f.Expected)-len(missing), len(f.Expected))}, problems...)
		for _, m := range missing {
			fixes = append(fixes, fmt.Sprintf("on %s: siemctl services start indexer (then siemctl services status indexer)", m))
		}
	}
	if len(versions) > 1 {
		raise(Warn)
		var vs []string
		for v, names := range versions {
			sort.Strings(names)
			vs = append(vs, fmt.Sprintf("%s on %s", v, strings.Join(names, ", ")))
		}
		sort.Strings(vs)
		problems = append(problems, "versions differ: "+strings.Join(vs, "; "))
		fixes = append(fixes, "finish the rolling upgrade: every node to the same version, the elected cluster manager last")
	}
	if f.Manager == "" {
		raise(NoGo)
		problems = append(problems, "no elected cluster manager")
		fixes = append(fixes, "start the cluster-manager-eligible nodes (a majority must be up to elect one)")
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].Name < lines[j].Name })
	n := len(f.Versions)
	if level == OK {
		var vs []string
		for v := range versions {
			vs = append(vs, v)
		}
		return Verdict{Level: OK, Summary: fmt.Sprintf("%d node(s), all on %s, cluster manager %s", n, strings.Join(vs, ","), f.Manager)}, lines
	}
	return Verdict{Level: level, Summary: strings.Join(problems, "; "), Items: missing, Fix: verdict.JoinFixes(fixes)}, lines
}
