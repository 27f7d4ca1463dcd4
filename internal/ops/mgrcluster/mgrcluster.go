// Package mgrcluster judges a Wazuh manager cluster (wazuh-clusterd: one master, workers on TCP 1516)
// from what its API says: every expected node connected, one version everywhere (the master refuses a
// worker on another version with 3031), keepalives fresh (the master drops a worker after 120 s
// without one), rulesets in sync, active agents per node.
package mgrcluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/verdict"
)

// MaxKeepAliveAge is how old a worker's last keepalive may be: the worker sends one every 60 s and the
// master drops it past 120 s (cluster.json max_allowed_time_without_keepalive).
const MaxKeepAliveAge = 120 * time.Second

// Facts are the cluster's answers.
type Facts struct {
	Nodes   []manager.ClusterNode
	Ruleset []manager.RulesetSync
	// Expected node names (manager.nodes); empty: the nodes the master lists.
	Expected []string
	Now      time.Time
}

// ActiveAgents are the agents active on each node of the healthcheck, and their sum. The master
// counts them in its database (global.db, every node's agents as their agent-info sync wrote them) by
// node_name, leaving the manager out (framework master.py get_health: status=active, node_name=node,
// q="id!=000"), so each agent is counted on the one node it reports to and the counts add up to the
// cluster's active agents reporting to a connected node; a worker's count is not its own database's.
func ActiveAgents(nodes []manager.ClusterNode) (total int, byNode map[string]int) {
	byNode = make(map[string]int, len(nodes))
	for _, n := range nodes {
		byNode[n.Name] += n.ActiveAgents
		total += n.ActiveAgents
	}
	return total, byNode
}

// Judge judges the cluster: the one verdict shape of ops/cluster, with a line per node.
func Judge(f Facts) (cluster.Verdict, []cluster.NodeLine) {
	var master *manager.ClusterNode
	synced := map[string]bool{}
	known := map[string]bool{}
	for _, r := range f.Ruleset {
		synced[r.Name], known[r.Name] = r.Synced, true
	}
	present := map[string]bool{}
	for i, n := range f.Nodes {
		present[n.Name] = true
		if n.Type == "master" {
			master = &f.Nodes[i]
		}
	}
	v := cluster.Verdict{}
	var lines []cluster.NodeLine
	var problems, fixes []string
	raise := func(l cluster.Level) { v.Level = max(v.Level, l) }
	for _, n := range f.Nodes {
		ln := cluster.NodeLine{Name: n.Name, Level: cluster.OK}
		ln.Text = fmt.Sprintf("%s: %s %s, %s, %d active agent(s)", n.Name, n.Type, n.Version, n.IP, n.ActiveAgents)
		if n.Type != "master" {
			age := f.Now.Sub(n.LastKeepAlive)
			ln.Text += fmt.Sprintf(", last keepalive %s ago", age.Round(time.Second))
			if n.LastKeepAlive.IsZero() || age > MaxKeepAliveAge {
				ln.Level = cluster.NoGo
				problems = append(problems, fmt.Sprintf("%s: last keepalive %s ago (> %s)", n.Name, age.Round(time.Second), MaxKeepAliveAge))
				fixes = append(fixes, "on "+n.Name+": siemctl services restart manager")
			}
		}
		if master != nil && n.Version != master.Version {
			ln.Level = cluster.NoGo
			problems = append(problems, fmt.Sprintf("%s on %s, master %s on %s", n.Name, n.Version, master.Name, master.Version))
		}
		if known[n.Name] && !synced[n.Name] {
			ln.Level = max(ln.Level, cluster.Warn)
			ln.Text += ", ruleset NOT in sync"
			problems = append(problems, n.Name+": ruleset not in sync with the master")
			fixes = append(fixes, "wait for the integrity sync (every 9 s); if it persists, see "+n.Name+"'s logs/cluster.log")
		} else if known[n.Name] {
			ln.Text += ", ruleset in sync"
		}
		raise(ln.Level)
		lines = append(lines, ln)
	}
	missing, absent := cluster.Missing(f.Expected, present, "not connected to the master")
	lines = append(lines, absent...)
	if len(missing) > 0 {
		raise(cluster.NoGo)
		problems = append([]string{fmt.Sprintf("%s not connected to the master (%d/%d nodes connected)", strings.Join(missing, ", "),
			len(f.Expected)-len(missing), len(f.Expected))}, problems...)
		mv := ""
		if master != nil {
			mv = master.Version
		}
		for _, m := range missing {
			fixes = append(fixes, fmt.Sprintf("on %s: siemctl health --cluster says why (wazuh-clusterd stopped: siemctl services restart manager; refused with 3031: its version is not the master's %s: bring the older of the two to the newer version, in a roll the master first and each worker right after it)", m, mv))
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].Name < lines[j].Name })
	if v.Level == cluster.OK {
		ver := ""
		if master != nil {
			ver = master.Version
		}
		active, _ := ActiveAgents(f.Nodes)
		v.Summary = fmt.Sprintf("%d node(s) connected, all on %s, keepalives fresh, rulesets in sync, %d active agent(s)", len(f.Nodes), ver, active)
		return v, lines
	}
	v.Summary = strings.Join(problems, "; ")
	v.Fix = verdict.JoinFixes(fixes)
	return v, lines
}
