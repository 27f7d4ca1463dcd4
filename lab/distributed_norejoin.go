package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The indexer-no-rejoin fault: an indexer node that, once upgraded, starts but cannot join its
// cluster (issue 25's "an indexer node that does not rejoin within its deadline").

// noRejoinFaultKinds are the distributed lab's rejoin faults.
var noRejoinFaultKinds = []FaultKind{
	{"indexer-no-rejoin:<host>", "a drop-in on that indexer node's unit (indexer-1 … indexer-3): once its package carries the newest OpenSearch of the lab's release set, the node starts with another cluster.name, so it answers but every handshake with the other nodes fails (its log: the remote cluster name does not match the local one) and it never rejoins; the older release starts as before (a rollback heals it). Heal removes the drop-in and restarts the node when it runs the newest release, then waits for green with every node", false},
}

// NoRejoinDropIn is the indexer-no-rejoin fault's drop-in (relative to a host's root).
func (p Profile) NoRejoinDropIn() string {
	return filepath.Join("etc/systemd/system", p.IndexerUnit()+".d", "siemlab-no-rejoin.conf")
}

// NoRejoinClusterName is the cluster name the faulty node starts with.
const NoRejoinClusterName = "siemlab-no-rejoin"

// noRejoinDropIn is the drop-in's text: the unit's ExecStart again, with -Ecluster.name when the
// installed OpenSearch is newest (its jar in lib/). systemd expands $$ to $ for the shell.
func noRejoinDropIn(newest string) string {
	return fmt.Sprintf(`# siemlab fault indexer-no-rejoin
[Service]
ExecStart=
ExecStart=/bin/sh -c 'a=; if [ -e "$${OPENSEARCH_HOME}/lib/opensearch-%[1]s.jar" ]; then a=-Ecluster.name=%[2]s; fi; exec /usr/bin/setpriv --reuid=%[3]d --regid=%[3]d --clear-groups -- "$${OPENSEARCH_HOME}/bin/opensearch" $$a'
`, newest, NoRejoinClusterName, IndexerUID)
}

// newestOpenSearch is the OpenSearch of the newest indexer release built with version (its set).
func newestOpenSearch(version string) string {
	set := SetOf(version)
	if len(set) == 0 {
		return ""
	}
	osv, _ := OpenSearchVersion(set[len(set)-1])
	return osv
}

func (d *Distributed) indexerNoRejoin(ctx context.Context, host string, on bool) error {
	h, err := d.indexerNode(host)
	if err != nil {
		return err
	}
	p := filepath.Join(h.st.Root, h.prof.NoRejoinDropIn())
	if on {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(noRejoinDropIn(newestOpenSearch(h.st.Version))), 0o644); err != nil {
			return err
		}
		return h.withUnits(ctx, func(c unitConn) error { return c.ReloadContext(ctx) })
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := h.withUnits(ctx, func(c unitConn) error { return c.ReloadContext(ctx) }); err != nil {
		return err
	}
	jar := filepath.Join(h.st.Root, h.prof.IndexerHome(), "lib", "opensearch-"+newestOpenSearch(h.st.Version)+".jar")
	if _, err := os.Stat(jar); err == nil { // it may run the broken name: start it again without it
		unit := h.prof.IndexerUnit()
		if err := h.stopUnit(ctx, unit); err != nil {
			return err
		}
		if err := h.startUnit(ctx, unit); err != nil {
			return err
		}
	}
	return d.waitGreen(ctx)
}
