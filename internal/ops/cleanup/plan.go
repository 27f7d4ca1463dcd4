// Package cleanup plans and applies the deletion of old daily alerts indices
// (prefix + YYYY.MM.DD). A plan names every index it would delete, with its
// date, size, document count and UUID, and carries a checksum and an HMAC
// signature under a key only this host's siemctl can read; applying a plan
// deletes exactly those names, one literal name per request, after
// re-verifying that each still exists and still matches the plan. Today's
// index, future-dated indices and names that do not parse are never
// selected and never deleted.
package cleanup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
)

// PlanVersion is the version of the plan file format.
const PlanVersion = 1

// dateLayout is the suffix of a daily index name.
const dateLayout = "2006.01.02"

// day is the length of the span one daily index covers.
const day = 24 * time.Hour

// Criteria select what to delete; exactly one of OlderThan and DiskAbove is set.
type Criteria struct {
	// OlderThan selects indices whose whole day ended at least this long ago.
	OlderThan time.Duration
	// OlderThanText is how the user wrote OlderThan (e.g. "90d"), for the plan.
	OlderThanText string
	// DiskAbove selects the oldest indices until the projected disk usage
	// (from _cat/allocation) falls below this percentage.
	DiskAbove int
}

// Validate checks the criteria.
func (c Criteria) Validate() error {
	switch {
	case c.OlderThan > 0 && c.DiskAbove > 0:
		return errors.New("give either an age or a disk threshold, not both")
	case c.OlderThan < 0:
		return errors.New("the age must be positive")
	case c.DiskAbove < 0 || c.DiskAbove > 99:
		return fmt.Errorf("disk threshold %d%% out of range: use 1-99", c.DiskAbove)
	case c.OlderThan == 0 && c.DiskAbove == 0:
		return errors.New("give an age (e.g. 90d) or a disk threshold (e.g. 85)")
	}
	return nil
}

// Input is what Build plans from.
type Input struct {
	Prefix string // e.g. siem-alerts-4.x-
	// ExtraPrefixes are further literal daily-index prefixes handled with
	// the same rules (indexer.cleanup_prefixes, e.g. wazuh-archives-4.x-).
	ExtraPrefixes []string
	IndexerURL    string               // recorded in the plan
	Indices       []indexer.Index      // _cat/indices for Prefix* and every ExtraPrefixes*
	Allocation    []indexer.Allocation // _cat/allocation (DiskAbove only)
	Criteria      Criteria
	Now           time.Time
}

// PlannedIndex is one index the plan deletes.
type PlannedIndex struct {
	Name       string `json:"name"`
	Date       string `json:"date"` // YYYY-MM-DD
	UUID       string `json:"uuid"`
	DocsCount  int64  `json:"docs_count"`
	StoreBytes int64  `json:"store_bytes"`
}

// Skipped is an index matching the prefix that the plan will not touch, and why.
type Skipped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Disk is the disk usage before and after the plan (from _cat/allocation).
type Disk struct {
	UsedBytes        int64   `json:"used_bytes"`
	TotalBytes       int64   `json:"total_bytes"`
	Percent          float64 `json:"percent"`
	ProjectedBytes   int64   `json:"projected_used_bytes"`
	ProjectedPercent float64 `json:"projected_percent"`
}

// Plan is a reviewed list of indices to delete.
type Plan struct {
	Version    int       `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	IndexerURL string    `json:"indexer_url"`
	Prefix     string    `json:"prefix"`
	// ExtraPrefixes are the further prefixes the plan covers (archives).
	ExtraPrefixes []string       `json:"extra_prefixes,omitempty"`
	OlderThan     string         `json:"older_than,omitempty"`
	Cutoff        *time.Time     `json:"cutoff,omitempty"` // OlderThan: days ending at or before this go
	DiskAbove     int            `json:"disk_above,omitempty"`
	Disk          *Disk          `json:"disk,omitempty"`
	Indices       []PlannedIndex `json:"indices"`
	TotalDocs     int64          `json:"total_docs"`
	TotalBytes    int64          `json:"total_bytes"`
	Kept          int            `json:"kept"` // dated indices that stay
	Skipped       []Skipped      `json:"skipped"`
	Warnings      []string       `json:"warnings"`
	Checksum      string         `json:"checksum"`
	// Signature is the HMAC of the plan under the host's key in state_dir
	// (see Key): only siemctl on this host can write a plan apply accepts.
	Signature string `json:"signature"`
}

// ParseIndexDate returns the UTC day of a daily index name prefix+YYYY.MM.DD.
// Anything else (other prefix, extra characters, impossible dates,
// non-zero-padded fields) is an error.
func ParseIndexDate(prefix, name string) (time.Time, error) {
	if prefix == "" {
		return time.Time{}, errors.New("empty index prefix")
	}
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return time.Time{}, fmt.Errorf("index %q does not start with %q", name, prefix)
	}
	if len(rest) != len(dateLayout) || rest[4] != '.' || rest[7] != '.' {
		return time.Time{}, fmt.Errorf("index %q does not end in a date YYYY.MM.DD", name)
	}
	for i := 0; i < len(rest); i++ {
		if i != 4 && i != 7 && (rest[i] < '0' || rest[i] > '9') {
			return time.Time{}, fmt.Errorf("index %q does not end in a date YYYY.MM.DD", name)
		}
	}
	y := atoi(rest[0:4])
	m := atoi(rest[5:7])
	d := atoi(rest[8:10])
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if m < 1 || m > 12 || d < 1 || t.Day() != d || t.Month() != time.Month(m) {
		return time.Time{}, fmt.Errorf("index %q has an impossible date %s", name, rest)
	}
	return t, nil
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// today is the UTC day of now.
func today(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Prefixes are every literal prefix the plan covers, the alerts prefix first.
func (p Plan) Prefixes() []string { return append([]string{p.Prefix}, p.ExtraPrefixes...) }

// prefixFor returns the longest of prefixes that name starts with ("" if none).
func prefixFor(prefixes []string, name string) string {
	best := ""
	for _, pr := range prefixes {
		if pr != "" && strings.HasPrefix(name, pr) && len(pr) > len(best) {
			best = pr
		}
	}
	return best
}

// checkDeletable says why a name must never be deleted at now ("" if it may be).
func checkDeletable(prefix, name string, now time.Time) (time.Time, string) {
	if strings.ContainsAny(prefix, "*?,/ ") {
		return time.Time{}, "prefix contains a wildcard or separator"
	}
	date, err := ParseIndexDate(prefix, name)
	if err != nil {
		return time.Time{}, "name does not parse as " + prefix + "YYYY.MM.DD"
	}
	t := today(now)
	switch {
	case date.Equal(t):
		return date, "today's index"
	case date.After(t):
		return date, "future-dated index"
	}
	return date, ""
}

type dated struct {
	ix   *indexer.Index
	date time.Time
}

// Build selects the indices to delete. It does not contact anything.
func Build(in Input) (Plan, error) {
	if err := in.Criteria.Validate(); err != nil {
		return Plan{}, err
	}
	if in.Prefix == "" || strings.ContainsAny(in.Prefix, "*?,/ ") {
		return Plan{}, fmt.Errorf("alerts index prefix %q must be a literal prefix without wildcards", in.Prefix)
	}
	p := Plan{Version: PlanVersion, CreatedAt: in.Now.UTC().Truncate(time.Second), IndexerURL: in.IndexerURL, Prefix: in.Prefix,
		Indices: []PlannedIndex{}, Skipped: []Skipped{}, Warnings: []string{}}
	if len(in.ExtraPrefixes) > 0 {
		p.ExtraPrefixes = append([]string(nil), in.ExtraPrefixes...)
	}
	if err := config.ValidIndexPrefixes(p.Prefixes()); err != nil {
		return Plan{}, err
	}
	cands := make([]dated, 0, len(in.Indices))
	seen := map[string]bool{}
	for i := range in.Indices {
		ix := &in.Indices[i]
		prefix := prefixFor(p.Prefixes(), ix.Name)
		if prefix == "" || seen[ix.Name] {
			continue // not ours (or listed twice): not even worth a line
		}
		seen[ix.Name] = true
		date, why := checkDeletable(prefix, ix.Name, in.Now)
		if why != "" {
			p.Skipped = append(p.Skipped, Skipped{Name: ix.Name, Reason: why})
			continue
		}
		cands = append(cands, dated{ix: ix, date: date})
	}
	slices.SortFunc(cands, func(a, b dated) int {
		if c := a.date.Compare(b.date); c != 0 {
			return c
		}
		return strings.Compare(a.ix.Name, b.ix.Name)
	})
	var selected int
	switch {
	case in.Criteria.OlderThan > 0:
		cutoff := in.Now.UTC().Add(-in.Criteria.OlderThan)
		p.OlderThan, p.Cutoff = in.Criteria.OlderThanText, &cutoff
		if p.OlderThan == "" {
			p.OlderThan = in.Criteria.OlderThan.String()
		}
		for _, c := range cands {
			if c.date.Add(day).After(cutoff) {
				break // sorted: every later one is younger
			}
			selected++
		}
	default:
		p.DiskAbove = in.Criteria.DiskAbove
		var used, total int64
		for _, a := range in.Allocation {
			if a.DiskTotal <= 0 {
				continue // the UNASSIGNED pseudo-node
			}
			used += a.DiskUsed
			total += a.DiskTotal
		}
		if total <= 0 {
			return Plan{}, errors.New("_cat/allocation reports no disk figures: cannot plan by disk usage")
		}
		d := &Disk{UsedBytes: used, TotalBytes: total, Percent: percent(used, total)}
		limit := float64(in.Criteria.DiskAbove)
		proj := used
		for _, c := range cands {
			if percent(proj, total) < limit {
				break
			}
			proj -= c.ix.StoreBytes
			selected++
		}
		d.ProjectedBytes, d.ProjectedPercent = proj, percent(proj, total)
		p.Disk = d
		switch {
		case d.Percent < limit:
			p.Warnings = append(p.Warnings, fmt.Sprintf("disk usage %.1f%% is already below %d%%: nothing to delete", d.Percent, in.Criteria.DiskAbove))
		case d.ProjectedPercent >= limit:
			p.Warnings = append(p.Warnings, fmt.Sprintf("deleting every eligible alerts index still leaves the disk at %.1f%% (>= %d%%): free space elsewhere", d.ProjectedPercent, in.Criteria.DiskAbove))
		}
	}
	p.Indices = make([]PlannedIndex, 0, selected)
	for _, c := range cands[:selected] {
		p.Indices = append(p.Indices, PlannedIndex{Name: c.ix.Name, Date: c.date.Format(time.DateOnly), UUID: c.ix.UUID,
			DocsCount: c.ix.DocsCount, StoreBytes: c.ix.StoreBytes})
		p.TotalDocs += c.ix.DocsCount
		p.TotalBytes += c.ix.StoreBytes
	}
	p.Kept = len(cands) - selected
	sum, err := checksum(p)
	if err != nil {
		return Plan{}, err
	}
	p.Checksum = sum
	return p, nil
}

func percent(used, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(used) * 100 / float64(total)
}

// checksum is the SHA-256 of the plan's JSON with empty Checksum and
// Signature fields.
func checksum(p Plan) (string, error) {
	p.Checksum, p.Signature = "", ""
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode plan: %w", err)
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:]), nil
}
