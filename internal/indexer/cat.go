package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Shard is one row of _cat/shards.
type Shard struct {
	Index            string `json:"index"`
	Shard            int    `json:"shard"`
	PriRep           string `json:"prirep"` // p | r
	State            string `json:"state"`  // STARTED | INITIALIZING | RELOCATING | UNASSIGNED
	UnassignedReason string `json:"unassigned_reason,omitempty"`
	Node             string `json:"node,omitempty"`
}

// Allocation is one row of _cat/allocation (bytes). The "UNASSIGNED"
// pseudo-node has only Shards.
type Allocation struct {
	Node        string `json:"node"`
	Host        string `json:"host,omitempty"`
	IP          string `json:"ip,omitempty"`
	Shards      int    `json:"shards"`
	DiskIndices int64  `json:"disk_indices"`
	DiskUsed    int64  `json:"disk_used"`
	DiskAvail   int64  `json:"disk_avail"`
	DiskTotal   int64  `json:"disk_total"`
	DiskPercent int    `json:"disk_percent"`
}

// Index is one row of _cat/indices (bytes).
type Index struct {
	Name         string    `json:"name"`
	Health       string    `json:"health"` // green | yellow | red | "" (closed)
	Status       string    `json:"status"` // open | close
	UUID         string    `json:"uuid"`
	Pri          int       `json:"pri"`
	Rep          int       `json:"rep"`
	DocsCount    int64     `json:"docs_count"`
	StoreBytes   int64     `json:"store_bytes"`
	CreationDate time.Time `json:"creation_date"`
}

// Node is one row of _cat/nodes.
type Node struct {
	Name            string  `json:"name"`
	IP              string  `json:"ip"`
	Version         string  `json:"version"` // may be 7.10.2 under the compatibility override
	Roles           string  `json:"roles"`   // e.g. "dimr"
	HeapPercent     int     `json:"heap_percent"`
	RAMPercent      int     `json:"ram_percent"`
	CPU             int     `json:"cpu"`
	DiskUsedPercent float64 `json:"disk_used_percent"`
}

// catList fetches a _cat endpoint (path under /_cat, with the index
// pattern, if any, already in it) as JSON and converts each row with conv,
// every value as a string (null → ""). A wildcard pattern that matches
// nothing gives an empty list; a concrete missing index gives
// ErrIndexNotFound. A value conv cannot parse is a bad response.
func catList[T any](ctx context.Context, c *Client, path, pattern string, q url.Values, conv func(p *rowParser, row map[string]string) T) ([]T, error) {
	q.Set("format", "json")
	r, err := c.call(ctx, http.MethodGet, request{path: path, query: q}, path)
	if err != nil {
		if hasWildcard(pattern) && errors.Is(err, ErrIndexNotFound) {
			return []T{}, nil
		}
		return nil, err
	}
	var raw []map[string]any
	if err := c.decode(r, &raw); err != nil {
		return nil, err
	}
	var p rowParser
	out := make([]T, 0, len(raw))
	row := map[string]string{}
	for _, m := range raw {
		clear(row)
		for k, v := range m {
			switch x := v.(type) {
			case nil:
			case string:
				row[k] = x
			default:
				b, _ := json.Marshal(x)
				row[k] = string(b)
			}
		}
		out = append(out, conv(&p, row))
	}
	if p.err != nil {
		return nil, c.badResponse(r, p.err, p.err.Error())
	}
	return out, nil
}

// catPath is path with the escaped index pattern appended (none: all
// indices).
func catPath(path, pattern string) string {
	if pattern == "" {
		return path
	}
	return path + "/" + escapePath(pattern)
}

// rowParser converts cat strings, remembering the first failure.
type rowParser struct{ err error }

func (p *rowParser) int(row map[string]string, key string) int {
	return int(p.int64(row, key))
}

func (p *rowParser) int64(row map[string]string, key string) int64 {
	s := row[key]
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("column %s: %w", key, err)
	}
	return n
}

func (p *rowParser) float(row map[string]string, key string) float64 {
	s := row[key]
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("column %s: %w", key, err)
	}
	return f
}

// CatShards calls _cat/shards with h=index,shard,prirep,state,unassigned.reason,node.
func (c *Client) CatShards(ctx context.Context) ([]Shard, error) {
	q := url.Values{"h": {"index,shard,prirep,state,unassigned.reason,node"}}
	return catList(ctx, c, "/_cat/shards", "", q, func(p *rowParser, row map[string]string) Shard {
		return Shard{Index: row["index"], Shard: p.int(row, "shard"), PriRep: row["prirep"],
			State: row["state"], UnassignedReason: row["unassigned.reason"], Node: row["node"]}
	})
}

// CatAllocation calls _cat/allocation?bytes=b.
func (c *Client) CatAllocation(ctx context.Context) ([]Allocation, error) {
	q := url.Values{"bytes": {"b"}, "h": {"shards,disk.indices,disk.used,disk.avail,disk.total,disk.percent,host,ip,node"}}
	return catList(ctx, c, "/_cat/allocation", "", q, func(p *rowParser, row map[string]string) Allocation {
		return Allocation{Node: row["node"], Host: row["host"], IP: row["ip"], Shards: p.int(row, "shards"),
			DiskIndices: p.int64(row, "disk.indices"), DiskUsed: p.int64(row, "disk.used"), DiskAvail: p.int64(row, "disk.avail"),
			DiskTotal: p.int64(row, "disk.total"), DiskPercent: p.int(row, "disk.percent")}
	})
}

func hasWildcard(pattern string) bool { return strings.ContainsAny(pattern, "*?") }

// CatIndices calls _cat/indices/<pattern>?bytes=b&expand_wildcards=all,
// sorted by name. An empty pattern means all indices. A wildcard pattern that
// matches nothing gives an empty list; a concrete missing index gives
// ErrIndexNotFound.
func (c *Client) CatIndices(ctx context.Context, pattern string) ([]Index, error) {
	q := url.Values{"bytes": {"b"}, "expand_wildcards": {"all"},
		"h": {"health,status,index,uuid,pri,rep,docs.count,store.size,creation.date"}}
	out, err := catList(ctx, c, catPath("/_cat/indices", pattern), pattern, q, func(p *rowParser, row map[string]string) Index {
		idx := Index{Name: row["index"], Health: row["health"], Status: row["status"], UUID: row["uuid"],
			Pri: p.int(row, "pri"), Rep: p.int(row, "rep"), DocsCount: p.int64(row, "docs.count"),
			StoreBytes: p.int64(row, "store.size")}
		if ms := p.int64(row, "creation.date"); ms > 0 {
			idx.CreationDate = time.UnixMilli(ms).UTC()
		}
		return idx
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// CatNodes calls _cat/nodes.
func (c *Client) CatNodes(ctx context.Context) ([]Node, error) {
	q := url.Values{"h": {"name,ip,version,node.role,heap.percent,ram.percent,cpu,disk.used_percent"}}
	return catList(ctx, c, "/_cat/nodes", "", q, func(p *rowParser, row map[string]string) Node {
		return Node{Name: row["name"], IP: row["ip"], Version: row["version"], Roles: row["node.role"],
			HeapPercent: p.int(row, "heap.percent"), RAMPercent: p.int(row, "ram.percent"), CPU: p.int(row, "cpu"),
			DiskUsedPercent: p.float(row, "disk.used_percent")}
	})
}

// IndexBlock is an index with write-blocking settings set to true.
type IndexBlock struct {
	Index  string   `json:"index"`
	Blocks []string `json:"blocks"` // e.g. read_only_allow_delete, read_only, write
}

// IndexBlocks lists the indices matching pattern (empty: all) that have any
// index.blocks.* setting true, sorted by name.
func (c *Client) IndexBlocks(ctx context.Context, pattern string) ([]IndexBlock, error) {
	if pattern == "" {
		pattern = "_all"
	}
	path := "/" + escapePath(pattern) + "/_settings/index.blocks.*"
	q := url.Values{"flat_settings": {"true"}, "expand_wildcards": {"all"}}
	r, err := c.call(ctx, http.MethodGet, request{path: path, query: q}, path)
	if err != nil {
		if hasWildcard(pattern) && errors.Is(err, ErrIndexNotFound) {
			return []IndexBlock{}, nil
		}
		return nil, err
	}
	var raw map[string]struct {
		Settings map[string]json.RawMessage `json:"settings"`
	}
	if err := c.decode(r, &raw); err != nil {
		return nil, err
	}
	out := []IndexBlock{}
	for name, ix := range raw {
		var blocks []string
		for k, v := range flatValues(ix.Settings) {
			if b, ok := strings.CutPrefix(k, "index.blocks."); ok && v == "true" {
				blocks = append(blocks, b)
			}
		}
		if len(blocks) > 0 {
			sort.Strings(blocks)
			out = append(out, IndexBlock{Index: name, Blocks: blocks})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}
