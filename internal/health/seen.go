package health

import (
	"path/filepath"
	"slices"
	"time"
)

// The nodes a cluster has shown this host. With no configured list (indexer.nodes), health expects every
// node it has seen, so a node that left is named instead of forgotten; the record is kept in
// state_dir/cache and a configured list always wins (the way to retire a node for good).

const seenNodesFile = "indexer-nodes.json"

type seenNodes struct {
	Version int                  `json:"version"`
	Nodes   map[string]time.Time `json:"nodes"` // name → last seen
}

// expectedIndexerNodes returns the nodes to expect (the configured ones, else every node seen here,
// present now or before) and records the present ones. remembered is true when the list came from the
// record rather than the configuration. A record that cannot be written is said in the note.
func (e *Env) expectedIndexerNodes(configured, present []string) (expected []string, remembered bool, note string) {
	if len(configured) > 0 {
		return configured, false, ""
	}
	path, st := e.seenIndexerNodes()
	now := e.now().UTC()
	for _, n := range present {
		st.Nodes[n] = now
	}
	if err := writeCache(path, st); err != nil {
		note = "the nodes seen are not recorded (" + err.Error() + "): a node that leaves is not named on the next run"
	}
	for n := range st.Nodes {
		expected = append(expected, n)
	}
	slices.Sort(expected)
	return expected, true, note
}

// seenIndexerNodes reads the record (empty when there is none or it is not readable).
func (e *Env) seenIndexerNodes() (string, seenNodes) {
	path := filepath.Join(e.Stack.Config.StateDir, "cache", seenNodesFile)
	var st seenNodes
	if !readCache(path, &st) || st.Version != 1 || st.Nodes == nil {
		st = seenNodes{Version: 1, Nodes: map[string]time.Time{}}
	}
	return path, st
}
