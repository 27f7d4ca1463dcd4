package manager

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// ClusterControl is framework/scripts/cluster_control.py (v4.9.0): -l lists the connected nodes
// (NAME TYPE VERSION ADDRESS, each column as wide as its longest cell plus two spaces), asking the
// running daemon through its local socket; -fn keeps the named nodes. Without a running cluster it logs
// "ERROR: Cluster is not running." and exits 1.
func ClusterControl(_ context.Context, e ToolEnv, args []string) int {
	e.defaults()
	var list bool
	var filter []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-l", "--list-nodes":
			list = true
		case "-fn", "--filter-node":
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				filter = append(filter, args[i])
			}
		default:
			fmt.Fprintf(e.Stderr, "usage: cluster_control [-h] [-d] [-fn [FILTER_NODE ...]] [-fs [FILTER_STATUS ...]] [-a | -l | -i [HEALTH] | -u]\n"+
				"cluster_control: error: unrecognized arguments: %s\n", args[i])
			return 2
		}
	}
	b, err := os.ReadFile(e.Home.OssecConf())
	var cc ClusterConfig
	if err == nil {
		cc, err = ParseClusterConfig(b)
	}
	_, pidPath := pidfile(e.Home, "wazuh-clusterd")
	if err != nil || cc.Disabled || pidPath == "" {
		fmt.Fprintln(e.Stderr, "ERROR: Cluster is not running.")
		return 1
	}
	if !list {
		return 0
	}
	nodes, err := askLocalCluster(e.Home, filter)
	if err != nil {
		fmt.Fprintf(e.Stderr, "ERROR: %v\n", err)
		return 1
	}
	rows := [][]string{{"NAME", "TYPE", "VERSION", "ADDRESS"}}
	for _, n := range nodes {
		rows = append(rows, []string{n.Info.Name, n.Info.Type, n.Info.Version, n.Info.IP})
	}
	widths := make([]int, 4)
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c)+2)
		}
	}
	var sb strings.Builder
	for i, r := range rows {
		if i > 0 {
			sb.WriteByte('\n')
		}
		for j, c := range r {
			sb.WriteString(c + strings.Repeat(" ", widths[j]-len(c)))
		}
	}
	fmt.Fprintln(e.Stdout, sb.String())
	return 0
}
