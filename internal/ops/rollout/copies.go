package rollout

import (
	"fmt"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
)

// Copies is what stopping one indexer node does to the shards it holds, read from _cat/shards
// before its turn stops it.
type Copies struct {
	Node string
	// Sole are the shards ("index[n]") whose only active copy is on Node while another copy of
	// them exists but is not active yet (a replica unassigned or recovering): stopping Node now
	// would leave them with no copy at all. The turn waits until they have another active copy.
	Sole []string
	// NoReplica are the shards on Node of indices with no replica at all (number_of_replicas 0,
	// the site's choice: wazuh-monitoring-* by default): they are unavailable while Node
	// restarts, whatever the roll waits for.
	NoReplica []string
}

// active tells whether a copy serves searches: started, or the source of a relocation.
func active(s indexer.Shard) bool { return s.State == "STARTED" || s.State == "RELOCATING" }

// CopiesOn judges the shards of _cat/shards held by node.
func CopiesOn(shards []indexer.Shard, node string) Copies {
	type group struct {
		mine, otherActive bool
		copies            int
	}
	groups := map[string]*group{}
	var keys []string
	for _, s := range shards {
		k := fmt.Sprintf("%s[%d]", s.Index, s.Shard)
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
			keys = append(keys, k)
		}
		g.copies++
		on, _, _ := strings.Cut(s.Node, " -> ") // a relocation's source: "node-a -> ip id node-b"
		switch {
		case on == node && active(s):
			g.mine = true
		case on != "" && on != node && active(s):
			g.otherActive = true
		}
	}
	sort.Strings(keys)
	c := Copies{Node: node}
	for _, k := range keys {
		g := groups[k]
		if !g.mine || g.otherActive {
			continue
		}
		if g.copies == 1 {
			c.NoReplica = append(c.NoReplica, k)
		} else {
			c.Sole = append(c.Sole, k)
		}
	}
	return c
}

// Pending says why Node cannot stop yet ("" when it can).
func (c Copies) Pending() string {
	if len(c.Sole) == 0 {
		return ""
	}
	return fmt.Sprintf("%d shard(s) have their only active copy on %s while their other copy is not active yet (%s): "+
		"stopping %s now would leave them with no copy", len(c.Sole), c.Node, sample(c.Sole), c.Node)
}

// Note names the shards of indices with no replica that stopping Node makes unavailable ("" when
// none).
func (c Copies) Note() string {
	if len(c.NoReplica) == 0 {
		return ""
	}
	return fmt.Sprintf("%d shard(s) on %s belong to indices with no replica (%s): searches of them fail while %s restarts",
		len(c.NoReplica), c.Node, sample(c.NoReplica), c.Node)
}

func sample(s []string) string {
	if len(s) > 5 {
		return strings.Join(s[:5], ", ") + fmt.Sprintf(" and %d more", len(s)-5)
	}
	return strings.Join(s, ", ")
}
