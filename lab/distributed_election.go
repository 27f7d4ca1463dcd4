package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// electionFaultKind moves the indexer cluster's election to a chosen node, the way an operator
// (or a failure of the elected node) does: through the real voting configuration exclusions API.
var electionFaultKind = FaultKind{"election-moved:<host>", "move the indexer cluster's elected cluster manager to that node (indexer-1 … indexer-3): every other cluster-manager-eligible node is excluded from the voting configuration (POST _cluster/voting_config_exclusions), the elected one steps down, the node is elected, then the exclusions are cleared; every node stays in the cluster. Heal clears any exclusion left", false}

// electionMoved moves the election to host (on) or clears the voting configuration exclusions
// (off). It does not wait for green: mid-roll the cluster may be legitimately yellow.
func (d *Distributed) electionMoved(ctx context.Context, host string, on bool) error {
	h, err := d.indexerNode(host)
	if err != nil {
		return err
	}
	c, err := h.indexer() // its own node
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.tmo)
	defer cancel()
	clearExclusions := func() error {
		_, err := c.ok(ctx, http.MethodDelete, "/_cluster/voting_config_exclusions?wait_for_removal=false", nil)
		return err
	}
	if !on {
		return clearExclusions()
	}
	var others []string
	for _, n := range d.HostsOf(RoleIndexer) {
		if n.st.Host != host {
			others = append(others, n.st.Host)
		}
	}
	// The request waits until the excluded nodes are out of the voting configuration; the elected
	// node stepping down may cut it: the election itself is what is checked next.
	_, postErr := c.ok(ctx, http.MethodPost, "/_cluster/voting_config_exclusions?node_names="+url.QueryEscape(strings.Join(others, ","))+"&timeout=60s", nil)
	last := ""
	err = poll(ctx, d.poll, func() (bool, error) {
		var rows []struct {
			Node string `json:"node"`
		}
		data, err := c.ok(ctx, http.MethodGet, "/_cat/cluster_manager?format=json&h=node", nil)
		if err == nil {
			err = json.Unmarshal(data, &rows)
		}
		switch {
		case err != nil:
			last = err.Error()
		case len(rows) == 0:
			last = "no elected cluster manager"
		default:
			last = "elected: " + rows[0].Node
		}
		return err == nil && len(rows) == 1 && rows[0].Node == host, nil
	})
	if err != nil {
		_ = clearExclusions()
		return fmt.Errorf("%s not elected (POST voting_config_exclusions: %v; last: %s): %w", host, postErr, last, err)
	}
	if err := clearExclusions(); err != nil {
		return err
	}
	want := len(d.HostsOf(RoleIndexer))
	return poll(ctx, d.poll, func() (bool, error) {
		hl, err := c.health(ctx, "")
		return err == nil && hl.NumberOfNodes == want, nil
	})
}
