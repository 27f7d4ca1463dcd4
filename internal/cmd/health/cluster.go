package health

import (
	"fmt"
	"io"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/health"
)

// clusterChecks are the checks `health --cluster` runs, with the name each cluster is printed under.
var clusterChecks = []struct{ id, name string }{{"indexer.cluster", "indexer cluster"}, {"manager.cluster", "manager cluster"}}

// clusterOnly turns --cluster into the selection of the cluster checks.
func clusterOnly(opts *Options) error {
	if !opts.Cluster {
		return nil
	}
	if len(opts.Only) > 0 || len(opts.Skip) > 0 || opts.Deep {
		return cli.FlagErrorf("--cluster runs the cluster checks only: drop --check, --skip and --deep")
	}
	for _, c := range clusterChecks {
		opts.Only = append(opts.Only, c.id)
	}
	return nil
}

// renderCluster prints each cluster's verdict, then one line per node, then its fix:
//
//	indexer cluster: OK  3 node(s), all on 2.19.3, cluster manager indexer-1
//	  indexer-1: 2.19.3, roles cluster_manager,data,ingest,remote_cluster_client (elected cluster manager), heap 41%, disk 12%
//
// A cluster this host's deployment does not have is said so (single node, cluster disabled).
func renderCluster(w io.Writer, rep health.Report) error {
	byID := map[string]health.Result{}
	for _, r := range rep.Results {
		byID[r.ID] = r
	}
	for _, c := range clusterChecks {
		r, ok := byID[c.id]
		if !ok {
			fmt.Fprintf(w, "%s: none (single node or cluster disabled; set %s to expect one)\n", c.name,
				map[string]string{"indexer.cluster": "indexer.nodes", "manager.cluster": "manager.nodes"}[c.id])
			continue
		}
		fmt.Fprintf(w, "%s: %-4s %s\n", c.name, r.Status, r.Summary)
		for _, ev := range r.Evidence {
			fmt.Fprintf(w, "  %s\n", ev)
		}
		if r.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", r.Fix)
		}
	}
	return nil
}
