package lab

import (
	"os"
	"path/filepath"
)

// A distributed lab's indexer nodes share one snapshot directory, DIR/snapshots, listed in every
// node's path.repo: the repository every node can reach that a cluster's data safety (a snapshot
// taken before the first node of a rolling upgrade stops) needs, as a shared file system would be
// on real hosts. siemctl registers the repository (siemctl indexer repository prepare, or the
// upgrade's snapshot step) at <path.repo>/siemctl.

// sharedSnapshotDir is the distributed lab's shared snapshot directory, from a host's directory
// (DIR/hosts/<host>).
func sharedSnapshotDir(hostDir string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(hostDir)), "snapshots")
}

// ensureSharedSnapshotDir creates the shared snapshot directory, owned by the user OpenSearch
// runs as (every node writes to it).
func ensureSharedSnapshotDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return os.Chown(dir, IndexerUID, IndexerUID)
}
