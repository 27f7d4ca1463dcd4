package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The search probe measures "searches answer throughout the roll": every interval one search of
// the alerts indices, sent to the indexer nodes in turn (any node may answer: a try that a node
// refuses or fails moves on to the next node, as a client configured with every node's URL does),
// counting the tries, those some node answered, those answered with every shard (_shards.failed 0
// and successful == total), and the longest time without an answer with every shard.

// ProbeIndex is the index pattern the search probe searches when its Index is not set.
const ProbeIndex = "wazuh-alerts-*"

// SearchProbe sends the probe's searches; build it with Distributed.SearchProbe or fill it in.
type SearchProbe struct {
	URLs     []string      // the indexer nodes' base URLs (https://host:port), tried in turn
	User     string        // basic authentication
	Password string        //
	Client   *http.Client  // TLS client trusting the lab's CA
	Every    time.Duration // interval between tries; 0: 1 s
	Timeout  time.Duration // how long one try may take across every node (each node its share); 0: 10 s
	Index    string        // the index pattern searched (the lab's alert indices); "": ProbeIndex
}

// SearchProbeResult is what a probe run measured.
type SearchProbeResult struct {
	Tries       int            `json:"tries"`
	Answered    int            `json:"answered"`         // some node answered HTTP 200
	AllShards   int            `json:"all_shards"`       // answered with _shards.failed 0 and successful == total
	Share       float64        `json:"share_all_shards"` // AllShards / Tries (1 when no try)
	LongestGap  time.Duration  `json:"-"`
	LongestGapS float64        `json:"longest_gap_s"` // the longest time without an answer with every shard
	ByNode      map[string]int `json:"answered_by_node"`
	LastFailure string         `json:"last_failure,omitempty"` // the last try not answered with every shard, and why
	Took        time.Duration  `json:"-"`
	TookS       float64        `json:"took_s"`
}

func (r SearchProbeResult) String() string {
	// The seconds fields: a result decoded from JSON has no durations.
	s := fmt.Sprintf("search probe: %d tries in %.0fs, %d answered, %d with every shard (%.2f%%), longest gap %.1fs",
		r.Tries, r.TookS, r.Answered, r.AllShards, 100*r.Share, r.LongestGapS)
	if r.LastFailure != "" {
		s += "; last failure: " + r.LastFailure
	}
	return s
}

// SearchProbe returns a probe of the distributed lab's indexer nodes with the lab's credentials.
func (d *Distributed) SearchProbe(every time.Duration) (*SearchProbe, error) {
	nodes := d.HostsOf(RoleIndexer)
	if len(nodes) == 0 {
		return nil, errors.New("search probe: the lab has no indexer node")
	}
	p := &SearchProbe{Every: every, Index: d.prof.AlertsPrefix() + "*"}
	for _, n := range nodes {
		c, err := n.indexer()
		if err != nil {
			return nil, err
		}
		p.URLs = append(p.URLs, c.base)
		p.User, p.Password, p.Client = c.user, c.password, c.hc
	}
	return p, nil
}

// SearchProbe returns a probe of the single lab's indexer.
func (l *Lab) SearchProbe(every time.Duration) (*SearchProbe, error) {
	c, err := l.indexer()
	if err != nil {
		return nil, err
	}
	return &SearchProbe{URLs: []string{c.base}, User: c.user, Password: c.password, Client: c.hc, Every: every,
		Index: l.prof.AlertsPrefix() + "*"}, nil
}

// Run probes until ctx ends and returns what it measured. Only bad settings are errors: a search
// that fails is a try not answered.
func (p *SearchProbe) Run(ctx context.Context) (SearchProbeResult, error) {
	res := SearchProbeResult{ByNode: map[string]int{}}
	if len(p.URLs) == 0 || p.Client == nil {
		return res, errors.New("search probe: no indexer URL or no client")
	}
	every, timeout := p.Every, p.Timeout
	if every <= 0 {
		every = time.Second
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	start := time.Now()
	lastFull := start // the last answer with every shard (or the start)
	broken := false   // a try since lastFull was not answered with every shard
	gap := func(now time.Time) {
		if broken && now.Sub(lastFull) > res.LongestGap {
			res.LongestGap = now.Sub(lastFull)
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	next := 0
	finish := func(now time.Time) SearchProbeResult {
		gap(now)
		res.Took = now.Sub(start)
		res.Share = 1
		if res.Tries > 0 {
			res.Share = float64(res.AllShards) / float64(res.Tries)
		}
		res.LongestGapS = res.LongestGap.Seconds()
		res.TookS = res.Took.Seconds()
		return res
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		url, full, why := p.try(tctx, next, timeout/time.Duration(len(p.URLs)))
		cancel()
		if ctx.Err() != nil { // the try was cut by the end of the run: not counted
			return finish(time.Now()), nil
		}
		now := time.Now()
		res.Tries++
		next = (next + 1) % len(p.URLs)
		if url != "" {
			res.Answered++
			res.ByNode[url]++
		}
		if full {
			res.AllShards++
			gap(now)
			lastFull, broken = now, false
		} else {
			broken = true
			res.LastFailure = now.UTC().Format("15:04:05") + " " + why
		}
		select {
		case <-ctx.Done():
			return finish(time.Now()), nil
		case <-t.C:
		}
	}
}

// try sends the search to the nodes starting at URLs[first] until one answers HTTP 200; it returns
// the node that answered ("" if none), whether every shard answered, and why not. Each node has
// at most each (a node that hangs, stopping, passes the try on).
func (p *SearchProbe) try(ctx context.Context, first int, each time.Duration) (url string, full bool, why string) {
	var errs []string
	for i := range p.URLs {
		u := p.URLs[(first+i)%len(p.URLs)]
		nctx, cancel := context.WithTimeout(ctx, each)
		shards, err := p.search(nctx, u)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", u, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if shards.Total == 0 {
			// No shard matched: nothing was searched, so the try says nothing of the roll.
			return u, false, fmt.Sprintf("%s: no shard of %s to search", u, p.index())
		}
		if shards.Failed == 0 && shards.Successful == shards.Total {
			return u, true, ""
		}
		return u, false, fmt.Sprintf("%s: %d of %d shards answered, %d failed", u, shards.Successful, shards.Total, shards.Failed)
	}
	return "", false, fmt.Sprintf("no node answered (%s)", tail(fmt.Sprint(errs), 400))
}

type probeShards struct {
	Total      int `json:"total"`
	Successful int `json:"successful"`
	Failed     int `json:"failed"`
}

func (p *SearchProbe) index() string {
	if p.Index != "" {
		return p.Index
	}
	return ProbeIndex
}

// search sends one search (size 0: the shards' answers are all the probe needs) to the node.
func (p *SearchProbe) search(ctx context.Context, base string) (probeShards, error) {
	var body struct {
		Shards *probeShards `json:"_shards"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/"+p.index()+"/_search?size=0&track_total_hits=false", nil)
	if err != nil {
		return probeShards{}, err
	}
	req.SetBasicAuth(p.User, p.Password)
	resp, err := p.Client.Do(req)
	if err != nil {
		return probeShards{}, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"error"`
		}
		_ = dec.Decode(&e)
		return probeShards{}, fmt.Errorf("HTTP %d %s %s", resp.StatusCode, e.Error.Type, e.Error.Reason)
	}
	if err := dec.Decode(&body); err != nil {
		return probeShards{}, fmt.Errorf("decode the search's answer: %w", err)
	}
	if body.Shards == nil {
		return probeShards{}, errors.New("the search's answer has no _shards")
	}
	return *body.Shards, nil
}
