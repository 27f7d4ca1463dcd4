package alerts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
)

type doc struct {
	id string
	ms int64
}

// store is a tiny in-memory index honouring range, sort [ts, _id],
// search_after and size, like OpenSearch does.
type store struct {
	docs     []doc
	searches int
}

func cmpDoc(a, b doc) int {
	if a.ms != b.ms {
		if a.ms < b.ms {
			return -1
		}
		return 1
	}
	return strings.Compare(a.id, b.id)
}

func (s *store) search(_ context.Context, sr indexer.SearchRequest) (indexer.SearchResult, error) {
	s.searches++
	if len(sr.Sort) != 2 || sr.Sort[0].Field != "timestamp" || sr.Sort[1].Field != "_id" {
		return indexer.SearchResult{}, fmt.Errorf("unstable sort %v", sr.Sort)
	}
	desc := sr.Sort[0].Order == "desc"
	var list []doc
	for _, d := range s.docs {
		if !sr.Since.IsZero() && d.ms < sr.Since.UnixMilli() {
			continue
		}
		list = append(list, d)
	}
	slices.SortFunc(list, func(a, b doc) int {
		if desc {
			return cmpDoc(b, a)
		}
		return cmpDoc(a, b)
	})
	if len(sr.SearchAfter) == 2 {
		after := doc{ms: int64(sr.SearchAfter[0].(float64)), id: sr.SearchAfter[1].(string)}
		var rest []doc
		for _, d := range list {
			if c := cmpDoc(d, after); (!desc && c > 0) || (desc && c < 0) {
				rest = append(rest, d)
			}
		}
		list = rest
	}
	if len(list) > sr.Size {
		list = list[:sr.Size]
	}
	res := indexer.SearchResult{Hits: []indexer.Hit{}}
	for _, d := range list {
		res.Hits = append(res.Hits, indexer.Hit{Index: "siem-alerts-4.x-2025.03.10", ID: d.id, Sort: []any{float64(d.ms), d.id}})
	}
	return res, nil
}

func ids(hits []indexer.Hit) string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return strings.Join(out, ",")
}

func TestFollower(t *testing.T) {
	base := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC).UnixMilli()
	s := &store{docs: []doc{{"a", base - 3000}, {"b", base - 2000}, {"c", base - 1000}}}
	f := &Follower{Search: s.search, Index: "siem-alerts-4.x-*", Overlap: 10 * time.Second, Page: 2}
	ctx := context.Background()

	got, err := f.Start(ctx, 2, time.UnixMilli(base))
	if err != nil || ids(got) != "b,c" {
		t.Fatalf("start: %s %v, want b,c (oldest first)", ids(got), err)
	}
	steps := []struct {
		add  []doc
		want string
	}{
		{nil, ""},
		// Five new alerts, two sharing a timestamp: paged by 2 with search_after.
		{[]doc{{"d", base}, {"f", base + 1000}, {"e", base + 1000}, {"g", base + 2000}, {"h", base + 3000}}, "d,e,f,g,h"},
		// Indexed late with a timestamp equal to one already printed and a
		// smaller _id: a plain search_after would skip it.
		{[]doc{{"a2", base + 1000}}, "a2"},
		// Indexed late, a few seconds older than the newest seen (within the overlap).
		{[]doc{{"z", base + 500}}, "z"},
		// Older than what tail started from (the -n window): history.
		{[]doc{{"y", base - 5000}}, ""},
		{nil, ""},
	}
	for i, st := range steps {
		s.docs = append(s.docs, st.add...)
		got, err := f.Poll(ctx)
		if err != nil || ids(got) != st.want {
			t.Errorf("poll %d: %q %v, want %q", i, ids(got), err, st.want)
		}
	}
	// Outside the overlap window the seen set is pruned.
	for k, ms := range f.seen {
		if ms < f.newest-f.Overlap.Milliseconds() {
			t.Errorf("%s kept after leaving the window", k)
		}
	}
}

func TestFollowerStartEmpty(t *testing.T) {
	s := &store{}
	f := &Follower{Search: s.search, Index: "x-*", Overlap: time.Minute}
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	if got, err := f.Start(context.Background(), 0, now); err != nil || len(got) != 0 || s.searches != 0 {
		t.Fatalf("%v %v %d", got, err, s.searches)
	}
	// Alerts older than the overlap before the start are history, not new.
	s.docs = []doc{{"old", now.Add(-2 * time.Minute).UnixMilli()}, {"new", now.Add(time.Second).UnixMilli()}}
	got, err := f.Poll(context.Background())
	if err != nil || ids(got) != "new" {
		t.Errorf("%q %v", ids(got), err)
	}
}
