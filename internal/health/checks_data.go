package health

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// ---- indexer.data: data continuity ---------------------------------------------

// dataLookBack is how many of siemctl's newest snapshots the check reads
// for the last one that saw the indexer's indices.
const dataLookBack = 10

// checkIndexerData compares the cluster with siemctl's last snapshot that
// saw it: its UUID, its indices and their document counts, and the
// configured path.data. A cluster that forgot its data (a new UUID, or its
// indices gone after path.data moved) is CRIT even when all else is green.
func checkIndexerData(ctx context.Context, e *Env, ix IndexerAPI) Result {
	prev, found := lastIndexerSnapshot(e.Stack.Config.StateDir)
	configDir := e.Stack.Config.Indexer.ConfigDir
	pathData := diagnose.IndexerPathData(configDir)
	info, err := indexerInfo(ctx, e)
	if err != nil {
		// A path.data moved away from the node's data is judged from the files alone: the node
		// started on an empty directory may not answer at all (its security index is not there
		// either), and the fix is the same.
		if found {
			if r, moved := judgeMovedData(prev, pathData, indexDirs, configDir); moved {
				return r
			}
		}
		return depFailed(ctx, e, "the cluster's identity", err)
	}
	if !found {
		return ok("no siemctl snapshot of the indexer's indices to compare with yet (siemctl snapshot capture; the timer takes one hourly)")
	}
	idx, err := ix.CatIndices(ctx, "*")
	if err != nil {
		return depFailed(ctx, e, "the indices", err)
	}
	now := DataNow{ClusterUUID: info.ClusterUUID, PathData: pathData, Indices: idx}
	return JudgeData(prev, now, holdsNodeData, configDir)
}

// holdsNodeData says whether a directory holds an indexer node's data (a nodes/ directory).
func holdsNodeData(p string) bool {
	st, err := os.Stat(filepath.Join(p, "nodes"))
	return err == nil && st.IsDir()
}

// indexDirs counts the index directories of a node's data directory (nodes/*/indices/*).
func indexDirs(p string) int {
	m, _ := filepath.Glob(filepath.Join(p, "nodes", "*", "indices", "*"))
	return len(m)
}

// judgeMovedData is the verdict of a cluster that cannot be asked: CRIT when opensearch.yml's
// path.data is no longer the one of prev and the old directory holds the node's indices while the
// new one holds fewer than half of them (a node started on an empty directory; a copied directory
// holds them all). moved is false otherwise: nothing to say without the cluster's answer.
func judgeMovedData(prev *snapshot.Document, pathData string, indices func(string) int, configDir string) (r Result, moved bool) {
	old := prev.Indexer.PathData
	if old == "" || pathData == "" || filepath.Clean(old) == filepath.Clean(pathData) {
		return Result{}, false
	}
	was, now := indices(old), indices(pathData)
	if was == 0 || 2*now >= was {
		return Result{}, false
	}
	yml := filepath.Join(configDir, "opensearch.yml")
	return crit(fmt.Sprintf("path.data moved away from the node's data: %s in %s holds %d of the %d indices in %s", pathData, yml, now, was, old),
		fmt.Sprintf("set path.data back to %s in %s (it holds the node's data), then siemctl services restart indexer; do not initialise security or index into %s meanwhile", old, yml, pathData),
		fmt.Sprintf("path.data %s in snapshot %s (%s), %s now (%s); %s still holds a node's data (%d index directories), %s %d", old, prev.ID, prev.TakenAt, pathData, yml, old, was, pathData, now)), true
}

// lastIndexerSnapshot is the newest snapshot (of the last dataLookBack)
// whose indexer answered with indices.
func lastIndexerSnapshot(stateDir string) (*snapshot.Document, bool) {
	if stateDir == "" {
		return nil, false
	}
	st := &snapshot.Store{Dir: filepath.Join(stateDir, "snapshots")}
	es, err := st.List()
	if err != nil {
		return nil, false
	}
	for i, n := len(es)-1, 0; i >= 0 && n < dataLookBack; i, n = i-1, n+1 {
		if es[i].Summary.Indices == 0 {
			continue
		}
		d, err := snapshot.ReadFile(es[i].Path)
		if err == nil && d.Indexer.Reachable && len(d.Indexer.Indices) > 0 {
			return d, true
		}
	}
	return nil, false
}

// DataNow is the cluster as it answers now.
type DataNow struct {
	ClusterUUID string
	PathData    string // opensearch.yml's path.data now
	Indices     []indexer.Index
}

// JudgeData is the data-continuity verdict of now against prev (siemctl's
// last snapshot that saw the indices). holdsData says whether a directory
// holds an indexer node's data (a nodes/ directory).
func JudgeData(prev *snapshot.Document, now DataNow, holdsData func(string) bool, configDir string) Result {
	when := fmt.Sprintf("snapshot %s (%s)", prev.ID, prev.TakenAt)
	cur := map[string]int64{}
	for _, x := range now.Indices {
		cur[x.Name] = x.DocsCount
	}
	var gone, shrunk []string
	var had, lost int64
	withDocs := 0
	for _, x := range prev.Indexer.Indices {
		if x.DocsCount == 0 {
			continue
		}
		withDocs++
		had += x.DocsCount
		n, ok := cur[x.Name]
		switch {
		case !ok:
			gone = append(gone, fmt.Sprintf("%s (%d docs)", x.Name, x.DocsCount))
			lost += x.DocsCount
		case n < x.DocsCount:
			shrunk = append(shrunk, fmt.Sprintf("%s %d → %d docs", x.Name, x.DocsCount, n))
			lost += x.DocsCount - n
		}
	}
	var evidence []string
	uuidChanged := prev.Indexer.ClusterUUID != "" && now.ClusterUUID != "" && prev.Indexer.ClusterUUID != now.ClusterUUID
	if uuidChanged {
		evidence = append(evidence, fmt.Sprintf("cluster UUID %s in %s, %s now: a new cluster", prev.Indexer.ClusterUUID, when, now.ClusterUUID))
	}
	moved := prev.Indexer.PathData != "" && now.PathData != "" && filepath.Clean(prev.Indexer.PathData) != filepath.Clean(now.PathData)
	oldHolds := moved && holdsData(prev.Indexer.PathData)
	if moved {
		e := fmt.Sprintf("path.data %s in %s, %s now (%s)", prev.Indexer.PathData, when, now.PathData, filepath.Join(configDir, "opensearch.yml"))
		if oldHolds {
			e += fmt.Sprintf("; %s still holds a node's data (nodes/)", prev.Indexer.PathData)
		}
		evidence = append(evidence, e)
	}
	if len(gone) > 0 {
		evidence = append(evidence, fmt.Sprintf("%d of %d indices with documents in %s are gone: %s", len(gone), withDocs, when, strings.Join(firstN(gone, 8), ", ")))
	}
	if len(shrunk) > 0 {
		evidence = append(evidence, fmt.Sprintf("%d indices hold fewer documents than in %s: %s", len(shrunk), when, strings.Join(firstN(shrunk, 8), ", ")))
	}
	// A new cluster UUID with every document still in view is a cluster re-created with its data
	// (siemctl's own rollback in snapshot mode starts the old version on an empty data directory
	// and restores the snapshot): said, not judged. A new UUID with documents out of view forgot them.
	forgot := (uuidChanged && lost > 0) || (moved && (len(gone) > 0 || len(shrunk) > 0)) || (len(gone) > 1 && 2*len(gone) >= withDocs)
	switch {
	case forgot:
		summary := fmt.Sprintf("the cluster forgot its data: %d of %d documents in %s are out of view", lost, had, when)
		if uuidChanged {
			summary = fmt.Sprintf("the cluster is not the one of %s (cluster UUID %s, was %s): %d of %d documents out of view", when, now.ClusterUUID, prev.Indexer.ClusterUUID, lost, had)
		}
		fix := "find where the data went before anything writes more into this cluster: path.data in " + filepath.Join(configDir, "opensearch.yml") +
			", the mount that held it, then set path.data back and siemctl services restart indexer; else restore the indices from the indexer's snapshot repository"
		if oldHolds {
			fix = fmt.Sprintf("set path.data back to %s in %s (it holds the node's data), then siemctl services restart indexer; the documents indexed meanwhile stay in %s (reindex them from there if they matter)",
				prev.Indexer.PathData, filepath.Join(configDir, "opensearch.yml"), now.PathData)
		}
		return crit(summary, fix, evidence...)
	case len(gone) > 0 || len(shrunk) > 0:
		return warn(fmt.Sprintf("%d documents of %s are gone (%d indices gone, %d smaller)", lost, when, len(gone), len(shrunk)),
			"if no retention or cleanup deleted them (siemctl alerts cleanup, an ISM policy), find where they went: siemctl snapshot diff "+prev.ID+" with a new capture names them", evidence...)
	}
	sum := fmt.Sprintf("the cluster holds every index and document of %s", when)
	switch {
	case uuidChanged:
		sum = fmt.Sprintf("the cluster was re-created (cluster UUID %s, was %s) and holds every index and document of %s (restored, e.g. by a rollback from a snapshot)",
			now.ClusterUUID, prev.Indexer.ClusterUUID, when)
	case prev.Indexer.ClusterUUID != "":
		sum += ", same cluster UUID"
	}
	return ok(sum, evidence...)
}
