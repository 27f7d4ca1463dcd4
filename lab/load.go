package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// LoadOptions say how much alert data Load puts into the lab's indexer.
type LoadOptions struct {
	Days      int       // daily alert indices, the newest one yesterday (today's index stays live data)
	Bytes     int64     // source bytes in all (the JSON of the documents), spread evenly over the days
	Seed      uint64    // the same seed gives the same documents
	Workers   int       // concurrent bulk requests (default 2)
	BulkBytes int       // size of one bulk request body (default 8 MiB)
	Now       time.Time // default time.Now(); the days end the day before
	Progress  io.Writer // one line every ProgressEvery (nil: none)
	// ProgressEvery is the progress line interval (default 2 s).
	ProgressEvery time.Duration
}

// LoadReport is what Load did.
type LoadReport struct {
	Prefix        string        `json:"prefix"`
	Indices       int           `json:"indices"`
	First         string        `json:"first_index"`
	Last          string        `json:"last_index"`
	Docs          int64         `json:"docs"`
	SourceBytes   int64         `json:"source_bytes"`
	StoreBytes    int64         `json:"store_bytes"` // on disk after the load (primaries, all loaded indices)
	ShardsPerIdx  int           `json:"shards_per_index"`
	ShardLimitWas int           `json:"shard_limit_was,omitempty"` // set when Load raised cluster.max_shards_per_node
	ShardLimit    int           `json:"shard_limit,omitempty"`
	Took          time.Duration `json:"took_ns"`
}

// loadShardHeadroom: Load raises cluster.max_shards_per_node so that the shards in use stay below
// this share of the limit, as an administrator of a host with long retention does.
const loadShardHeadroom = 0.6

// Load fills the lab's indexer with realistic alert documents (the shape the manager writes to
// alerts.json and the shipper indexes) over opts.Days daily indices, with bulk requests.
func (l *Lab) Load(ctx context.Context, opts LoadOptions) (LoadReport, error) {
	if opts.Days < 1 || opts.Days > 20000 {
		return LoadReport{}, fmt.Errorf("load: --days %d: want 1 to 20000", opts.Days)
	}
	if opts.Bytes < 1 {
		return LoadReport{}, fmt.Errorf("load: --size must be above 0")
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.BulkBytes <= 0 {
		opts.BulkBytes = 8 << 20
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 2 * time.Second
	}
	c, err := l.indexer()
	if err != nil {
		return LoadReport{}, err
	}
	c.hc.Timeout = 5 * time.Minute // one bulk request on a busy node
	start := time.Now()
	rep := LoadReport{Prefix: l.prof.AlertsPrefix(), Indices: opts.Days}
	days := loadDays(opts.Now, opts.Days)
	rep.First, rep.Last = rep.Prefix+days[0].Format("2006.01.02"), rep.Prefix+days[len(days)-1].Format("2006.01.02")

	// The first index tells how many shards the template gives each one; make room for them all.
	if err := c.createIndex(ctx, rep.First, "", nil); err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	if rep.ShardsPerIdx, err = c.primaryShards(ctx, rep.First); err != nil {
		return rep, err
	}
	if rep.ShardLimitWas, rep.ShardLimit, err = c.makeShardRoom(ctx, opts.Days*rep.ShardsPerIdx); err != nil {
		return rep, err
	}

	gen := newAlertGen(opts.Seed, l.hostname())
	next := loadBodies(gen, rep.Prefix, days, opts.Bytes/int64(opts.Days), opts.BulkBytes, &rep)
	// The first body goes in alone: its index then has the mapping every day's index gets (the
	// template's plus the fields the alerts add dynamically), so the indices created ahead below
	// need no mapping update of their own (one cluster state change per index instead of three).
	var docs, sent atomic.Int64
	if first, _ := next(); first != nil {
		n, err := c.bulkRetry(ctx, first)
		if err != nil {
			return rep, fmt.Errorf("load: %w", err)
		}
		docs.Add(int64(n))
		sent.Add(int64(len(first)))
	}
	mapping, err := c.mapping(ctx, rep.First)
	if err != nil {
		return rep, err
	}
	bodies := make(chan []byte, opts.Workers)
	created := make(chan struct{}, len(days)) // one per index created ahead, in day order
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { // create the indices ahead of the bulk requests
		for _, day := range days[1:] {
			if err := c.createLoadIndex(gctx, rep.Prefix+day.Format("2006.01.02"), mapping); err != nil {
				return err
			}
			created <- struct{}{}
		}
		return nil
	})
	g.Go(func() error {
		defer close(bodies)
		have := 1 // days[:have] exist
		for b, last := next(); b != nil; b, last = next() {
			// A body goes out once its days' indices exist: a bulk that would auto-create hundreds
			// of them (small days) times out on the cluster state queue.
			for have <= last {
				select {
				case <-created:
					have++
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			select {
			case bodies <- b:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for range opts.Workers {
		g.Go(func() error {
			for b := range bodies {
				n, err := c.bulkRetry(gctx, b)
				if err != nil {
					return err
				}
				docs.Add(int64(n))
				sent.Add(int64(len(b)))
			}
			return nil
		})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if opts.Progress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(opts.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					el := time.Since(start).Seconds()
					fmt.Fprintf(opts.Progress, "siemlab load: %d docs, %s sent, %.1f MiB/s\n",
						docs.Load(), mib(sent.Load()), float64(sent.Load())/(1<<20)/el)
				}
			}
		}()
	}
	err = g.Wait()
	close(stop)
	wg.Wait()
	if err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	// The indices were created with asynchronous translog fsync (a bulk load); from now on every
	// write is durable again, as on a real host.
	if _, err := c.ok(ctx, http.MethodPut, "/"+rep.Prefix+"*/_settings", map[string]any{"index.translog.durability": "request"}); err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	if docs.Load() != rep.Docs {
		return rep, fmt.Errorf("load: %d documents made but %d indexed", rep.Docs, docs.Load())
	}
	if _, err := c.ok(ctx, http.MethodPost, "/"+rep.Prefix+"*/_refresh", nil); err != nil {
		return rep, fmt.Errorf("load: refresh: %w", err)
	}
	if rep.StoreBytes, err = c.storeBytes(ctx, rep.Prefix, days); err != nil {
		return rep, err
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// loadBodies returns a generator of bulk bodies of about bulkBytes each: perDay bytes of alerts for
// every day, oldest first, the first day alone in the first body; with each body the index in days
// of the last day it holds. It counts documents and bytes into rep and returns nil at the end.
func loadBodies(gen *alertGen, prefix string, days []time.Time, perDay int64, bulkBytes int, rep *LoadReport) func() ([]byte, int) {
	d, i, n := 0, 0, int64(0)
	var buf bytes.Buffer
	out := func() ([]byte, int) {
		b := bytes.Clone(buf.Bytes())
		buf.Reset()
		if i == 0 { // the day just ended
			return b, d - 1
		}
		return b, d
	}
	return func() ([]byte, int) {
		for d < len(days) {
			meta := `{"index":{"_index":"` + prefix + days[d].Format("2006.01.02") + `"}}` + "\n"
			for n < perDay {
				doc := gen.alert(days[d], i)
				i++
				n += int64(len(doc))
				rep.SourceBytes += int64(len(doc))
				rep.Docs++
				buf.WriteString(meta)
				buf.Write(doc)
				buf.WriteByte('\n')
				if buf.Len() >= bulkBytes {
					return out()
				}
			}
			d, i, n = d+1, 0, 0
			if d == 1 && buf.Len() > 0 {
				return out()
			}
		}
		if buf.Len() == 0 {
			return nil, 0
		}
		return out()
	}
}

// mapping returns index's mappings object.
func (c *indexerClient) mapping(ctx context.Context, index string) (json.RawMessage, error) {
	data, err := c.ok(ctx, http.MethodGet, "/"+index+"/_mapping", nil)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	var m map[string]struct {
		Mappings json.RawMessage `json:"mappings"`
	}
	if err := json.Unmarshal(data, &m); err != nil || len(m[index].Mappings) == 0 {
		return nil, fmt.Errorf("load: mapping of %s: %v", index, err)
	}
	return m[index].Mappings, nil
}

// createLoadIndex creates a daily index with the learnt mapping and asynchronous translog fsync,
// without waiting for its shard to start (the bulk request that follows waits for the primary).
// An index that exists (a load onto loaded days) is used as it is; a creation the node refuses for
// memory or load is sent again (retryRefused).
func (c *indexerClient) createLoadIndex(ctx context.Context, index string, mapping json.RawMessage) error {
	body := map[string]any{"mappings": mapping, "settings": map[string]any{"index.translog.durability": "async"}}
	return c.retryRefused(ctx, "create "+index, func() (bool, error) {
		code, data, err := c.do(ctx, http.MethodPut, "/"+index+"?wait_for_active_shards=0", body)
		if err != nil {
			return false, fmt.Errorf("create %s: %w", index, err)
		}
		if again, err := refused(code, data); again || err != nil {
			return again, err
		}
		if code/100 != 2 && !strings.Contains(string(data), "resource_already_exists_exception") {
			return false, fmt.Errorf("create %s: HTTP %d: %s", index, code, tail(string(data), 300))
		}
		return false, nil
	})
}

// loadTries bounds retryRefused: the pauses (0.5 s doubling to 8 s) add up to about a minute.
const loadTries = 10

// retryRefused calls send until it has nothing to send again or fails: a request the node refused
// for memory or load is sent again after a pause of c.pause (0.5 s when zero) doubling to 8 s,
// loadTries times at most.
func (c *indexerClient) retryRefused(ctx context.Context, what string, send func() (again bool, err error)) error {
	pause := c.pause
	if pause <= 0 {
		pause = 500 * time.Millisecond
	}
	for try := 1; ; try++ {
		again, err := send()
		if err != nil || !again {
			return err
		}
		if try == loadTries {
			return fmt.Errorf("%s: still refused for memory or load after %d tries: give the indexer more heap (siemlab up --indexer-heap)", what, try)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 8*time.Second)
	}
}

// refused tells an answer the node gives when it cannot take a request now (a 429 from a circuit
// breaker or a full queue, a 503 from a cluster state update that timed out: send again) from one
// it will never take: a circuit breaker whose durability is PERMANENT (the request alone is bigger
// than the breaker's limit) fails at once.
func refused(code int, data []byte) (bool, error) {
	if code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable {
		return false, nil
	}
	var e struct {
		Error struct {
			Type       string `json:"type"`
			Reason     string `json:"reason"`
			Durability string `json:"durability"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Durability == "PERMANENT" {
		return false, fmt.Errorf("HTTP %d %s (permanent): %s: give the indexer more heap (siemlab up --indexer-heap) or send smaller requests", code, e.Error.Type, tail(e.Error.Reason, 200))
	}
	return true, nil
}

// hostname is the manager name the lab's alerts carry.
func (l *Lab) hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "siem-lab-" + l.st.ID
}

// loadDays are the n days before now's day (UTC), oldest first.
func loadDays(now time.Time, n int) []time.Time {
	today := time.Date(now.UTC().Year(), now.UTC().Month(), now.UTC().Day(), 0, 0, 0, 0, time.UTC)
	out := make([]time.Time, n)
	for i := range n {
		out[i] = today.AddDate(0, 0, i-n)
	}
	return out
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (c *indexerClient) primaryShards(ctx context.Context, index string) (int, error) {
	data, err := c.ok(ctx, http.MethodGet, "/"+index+"/_settings/index.number_of_shards", nil)
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	var s map[string]struct {
		Settings struct {
			Index struct {
				Shards string `json:"number_of_shards"`
			} `json:"index"`
		} `json:"settings"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, fmt.Errorf("load: settings of %s: %w", index, err)
	}
	n, err := strconv.Atoi(s[index].Settings.Index.Shards)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("load: settings of %s: number_of_shards %q", index, s[index].Settings.Index.Shards)
	}
	return n, nil
}

// makeShardRoom raises cluster.max_shards_per_node when the shards in use plus more would pass
// loadShardHeadroom of it. It returns the old and new limit, or zeros when nothing changed.
func (c *indexerClient) makeShardRoom(ctx context.Context, more int) (was, now int, err error) {
	data, err := c.ok(ctx, http.MethodGet, "/_cluster/settings?include_defaults=true&flat_settings=true", nil)
	if err != nil {
		return 0, 0, fmt.Errorf("load: %w", err)
	}
	var s map[string]map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, 0, fmt.Errorf("load: cluster settings: %w", err)
	}
	limit := 1000
	for _, scope := range []string{"defaults", "persistent", "transient"} { // later wins
		if v, ok := s[scope]["cluster.max_shards_per_node"].(string); ok {
			if n, err := strconv.Atoi(v); err == nil {
				limit = n
			}
		}
	}
	h, err := c.health(ctx, "")
	if err != nil {
		return 0, 0, fmt.Errorf("load: %w", err)
	}
	nodes := max(h.NumberOfNodes, 1)
	need := h.ActiveShards + h.UnassignedShards + more
	if float64(need) <= loadShardHeadroom*float64(limit*nodes) {
		return 0, 0, nil
	}
	newLimit := int(math.Ceil(float64(need)/loadShardHeadroom/float64(nodes)/100)) * 100
	body := map[string]any{"persistent": map[string]any{"cluster.max_shards_per_node": newLimit}}
	if _, err := c.ok(ctx, http.MethodPut, "/_cluster/settings", body); err != nil {
		return 0, 0, fmt.Errorf("load: raise cluster.max_shards_per_node to %d: %w", newLimit, err)
	}
	return limit, newLimit, nil
}

// bulkRetry sends a _bulk body until every document is in: a request the node refuses as a whole
// for memory or load is sent again, and of a partly refused one only the refused documents
// (retryRefused). It returns how many documents were indexed.
func (c *indexerClient) bulkRetry(ctx context.Context, body []byte) (int, error) {
	total := 0
	err := c.retryRefused(ctx, "bulk", func() (bool, error) {
		n, again, err := c.bulk(ctx, body)
		total += n
		body = again
		return len(again) > 0, err
	})
	return total, err
}

// bulk sends one _bulk body; it returns how many documents were indexed and the body of those
// refused with 429 or 503 (to send again: a full write queue, a cluster state update that timed
// out). Any other refusal fails.
func (c *indexerClient) bulk(ctx context.Context, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/_bulk?filter_path=errors,items.*.error,items.*.status", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.SetBasicAuth(c.user, c.password)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("bulk: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("bulk: read answer: %w", err)
	}
	if again, err := refused(resp.StatusCode, data); again || err != nil {
		if err != nil {
			return 0, nil, fmt.Errorf("bulk: %w", err)
		}
		return 0, body, nil
	}
	if resp.StatusCode/100 != 2 {
		return 0, nil, fmt.Errorf("bulk: HTTP %d: %s", resp.StatusCode, tail(string(data), 300))
	}
	var r struct {
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			Status int             `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return 0, nil, fmt.Errorf("bulk: answer: %w", err)
	}
	lines := bytes.SplitAfter(body, []byte{'\n'})
	docs := len(lines) / 2
	if !r.Errors {
		return docs, nil, nil
	}
	if len(r.Items) != docs {
		return 0, nil, fmt.Errorf("bulk: %d answers for %d documents", len(r.Items), docs)
	}
	var again bytes.Buffer
	for i, it := range r.Items {
		for _, v := range it {
			switch {
			case v.Status == http.StatusTooManyRequests || v.Status == http.StatusServiceUnavailable:
				again.Write(lines[2*i])
				again.Write(lines[2*i+1])
			case len(v.Error) > 0:
				return 0, nil, fmt.Errorf("bulk: a document was refused: %s", tail(string(v.Error), 300))
			}
		}
	}
	return docs - bytes.Count(again.Bytes(), []byte{'\n'})/2, again.Bytes(), nil
}

// storeBytes sums the primary store size of the loaded indices.
func (c *indexerClient) storeBytes(ctx context.Context, prefix string, days []time.Time) (int64, error) {
	data, err := c.ok(ctx, http.MethodGet, "/_cat/indices/"+prefix+"*?format=json&bytes=b&h=index,pri.store.size", nil)
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	var rows []struct {
		Index string `json:"index"`
		Size  string `json:"pri.store.size"`
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		return 0, fmt.Errorf("load: _cat/indices: %w", err)
	}
	loaded := make(map[string]bool, len(days))
	for _, d := range days {
		loaded[prefix+d.Format("2006.01.02")] = true
	}
	var sum int64
	for _, r := range rows {
		if loaded[r.Index] {
			n, _ := strconv.ParseInt(r.Size, 10, 64)
			sum += n
		}
	}
	return sum, nil
}

// alertGen makes alert documents in the shape the manager writes (timestamp, rule with compliance
// groups and MITRE, agent, manager, id, full_log, predecoder, decoder, data, location), from a few
// kinds of event a real fleet produces every day.
type alertGen struct {
	r       *rand.Rand
	manager string
	agents  []loadAgent
}

type loadAgent struct{ id, name, ip string }

func newAlertGen(seed uint64, manager string) *alertGen {
	g := &alertGen{r: rand.New(rand.NewPCG(seed, seed^0x5eed)), manager: manager}
	for i := 1; i <= 40; i++ {
		g.agents = append(g.agents, loadAgent{fmt.Sprintf("%03d", i), fmt.Sprintf("web-%02d", i), fmt.Sprintf("10.0.%d.%d", i/250, 10+i%250)})
	}
	return g
}

var loadUsers = []string{"root", "admin", "oracle", "test", "ubuntu", "deploy", "postgres", "guest", "git", "jenkins"}

type loadRule struct {
	id, level           int
	desc, decoder       string
	parent, program     string
	groups, mitre       []string
	tactics, techniques []string
	pci, gdpr, hipaa    []string
	nist, tsc           []string
}

var loadRules = []loadRule{
	{id: 5710, level: 5, desc: "sshd: Attempt to login using a non-existent user", decoder: "sshd", program: "sshd",
		groups: []string{"syslog", "sshd", "authentication_failed", "invalid_login"}, mitre: []string{"T1110.001", "T1021.004"},
		tactics: []string{"Credential Access", "Lateral Movement"}, techniques: []string{"Password Guessing", "SSH"},
		pci: []string{"10.2.4", "10.2.5", "10.6.1"}, gdpr: []string{"IV_35.7.d", "IV_32.2"}, hipaa: []string{"164.312.b"},
		nist: []string{"AU.14", "AC.7", "AU.6"}, tsc: []string{"CC6.1", "CC6.8", "CC7.2", "CC7.3"}},
	{id: 5715, level: 3, desc: "sshd: authentication success.", decoder: "sshd", program: "sshd",
		groups: []string{"syslog", "sshd", "authentication_success"}, mitre: []string{"T1078", "T1021"},
		tactics:    []string{"Defense Evasion", "Persistence", "Privilege Escalation", "Initial Access", "Lateral Movement"},
		techniques: []string{"Valid Accounts", "Remote Services"}, pci: []string{"10.2.5"}, gdpr: []string{"IV_32.2"},
		hipaa: []string{"164.312.b"}, nist: []string{"AU.14", "AC.7"}, tsc: []string{"CC6.8", "CC7.2", "CC7.3"}},
	{id: 5402, level: 3, desc: "Successful sudo to ROOT executed.", decoder: "sudo", program: "sudo",
		groups: []string{"syslog", "sudo"}, mitre: []string{"T1548.003"}, tactics: []string{"Privilege Escalation", "Defense Evasion"},
		techniques: []string{"Sudo and Sudo Caching"}, pci: []string{"10.2.5", "10.2.2"}, gdpr: []string{"IV_32.2"},
		hipaa: []string{"164.312.b"}, nist: []string{"AU.14", "AC.7", "AC.6"}, tsc: []string{"CC6.8", "CC7.2", "CC7.3"}},
	{id: 550, level: 7, desc: "Integrity checksum changed.", decoder: "syscheck_integrity_changed",
		groups: []string{"ossec", "syscheck", "syscheck_entry_modified", "syscheck_file"}, mitre: []string{"T1565.001"},
		tactics: []string{"Impact"}, techniques: []string{"Stored Data Manipulation"}, pci: []string{"11.5"},
		gdpr: []string{"II_5.1.f"}, hipaa: []string{"164.312.c.1", "164.312.c.2"}, nist: []string{"SI.7"}, tsc: []string{"PI1.4", "PI1.5", "CC6.1", "CC6.8", "CC7.2", "CC7.3"}},
	{id: 510, level: 7, desc: "Host-based anomaly detection event (rootcheck).", decoder: "rootcheck",
		groups: []string{"ossec", "rootcheck"}, pci: []string{"10.6.1"}, gdpr: []string{"IV_35.7.d"}, nist: []string{"AU.6"}, tsc: []string{"CC7.2", "CC7.3"}},
	{id: 31101, level: 5, desc: "Web server 400 error code.", decoder: "web-accesslog",
		groups: []string{"web", "accesslog", "attack"}, mitre: []string{"T1190"}, tactics: []string{"Initial Access"},
		techniques: []string{"Exploit Public-Facing Application"}, pci: []string{"6.5", "11.4"}, gdpr: []string{"IV_35.7.d"},
		nist: []string{"SA.11", "SI.4"}, tsc: []string{"CC6.6", "CC7.1", "CC8.1", "CC6.1", "CC6.8", "CC7.2", "CC7.3"}},
}

// alert returns one document for day; i varies the time within the day.
func (g *alertGen) alert(day time.Time, i int) []byte {
	r := g.r
	ts := day.Add(time.Duration(r.Int64N(int64(24 * time.Hour))))
	rule := loadRules[r.IntN(len(loadRules))]
	a := g.agents[r.IntN(len(g.agents))]
	user := loadUsers[r.IntN(len(loadUsers))]
	src := fmt.Sprintf("%d.%d.%d.%d", 1+r.IntN(222), r.IntN(256), r.IntN(256), 1+r.IntN(254))
	port := strconv.Itoa(1024 + r.IntN(64000))
	syslogTS := ts.Format("Jan _2 15:04:05")
	var fullLog, location string
	data := map[string]any{}
	switch rule.decoder {
	case "sshd":
		if rule.id == 5715 {
			fullLog = fmt.Sprintf("%s %s sshd[%d]: Accepted publickey for %s from %s port %s ssh2: RSA SHA256:%x", syslogTS, a.name, 1000+r.IntN(60000), user, src, port, r.Uint64())
		} else {
			fullLog = fmt.Sprintf("%s %s sshd[%d]: Failed password for invalid user %s from %s port %s ssh2", syslogTS, a.name, 1000+r.IntN(60000), user, src, port)
		}
		data = map[string]any{"srcip": src, "srcport": port, "srcuser": user}
		location = "/var/log/auth.log"
	case "sudo":
		cmd := []string{"/usr/bin/systemctl restart nginx", "/usr/bin/apt-get upgrade -y", "/bin/cat /etc/shadow", "/usr/bin/journalctl -u sshd"}[r.IntN(4)]
		fullLog = fmt.Sprintf("%s %s sudo:   %s : TTY=pts/%d ; PWD=/home/%s ; USER=root ; COMMAND=%s", syslogTS, a.name, user, r.IntN(8), user, cmd)
		data = map[string]any{"srcuser": user, "dstuser": "root", "tty": "pts/" + strconv.Itoa(r.IntN(8)), "pwd": "/home/" + user, "command": cmd}
		location = "/var/log/auth.log"
	case "syscheck_integrity_changed":
		path := []string{"/etc/passwd", "/etc/hosts", "/etc/ssh/sshd_config", "/usr/bin/ls", "/etc/crontab"}[r.IntN(5)]
		fullLog = fmt.Sprintf("File '%s' modified\nMode: scheduled\nChanged attributes: size,mtime,md5,sha1,sha256\nSize changed from '%d' to '%d'\n", path, 100+r.IntN(5000), 100+r.IntN(5000))
		data = nil
		location = "syscheck"
	case "rootcheck":
		fullLog = fmt.Sprintf("Trojaned version of file '/usr/bin/%s' detected. Signature used: 'bash|^/bin/sh|file\\.h|proc\\.h|/dev/[^n]|^/bin/.*sh' (Generic).", []string{"diff", "chsh", "passwd"}[r.IntN(3)])
		data = map[string]any{"title": "Trojaned version of file detected."}
		location = "rootcheck"
	default:
		url := []string{"/wp-login.php", "/.env", "/cgi-bin/luci", "/admin/config.php", "/phpmyadmin/index.php"}[r.IntN(5)]
		fullLog = fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" 404 %d "-" "Mozilla/5.0 (compatible; scanner/%d.0)"`, src, ts.Format("02/Jan/2006:15:04:05 -0700"), url, 150+r.IntN(900), 1+r.IntN(9))
		data = map[string]any{"protocol": "GET", "srcip": src, "id": "404", "url": url}
		location = "/var/log/nginx/access.log"
	}
	ruleObj := map[string]any{
		"level": rule.level, "description": rule.desc, "id": strconv.Itoa(rule.id),
		"firedtimes": 1 + i%500, "mail": false, "groups": rule.groups,
	}
	if len(rule.mitre) > 0 {
		ruleObj["mitre"] = map[string]any{"id": rule.mitre, "tactic": rule.tactics, "technique": rule.techniques}
	}
	for k, v := range map[string][]string{"pci_dss": rule.pci, "gdpr": rule.gdpr, "hipaa": rule.hipaa, "nist_800_53": rule.nist, "tsc": rule.tsc} {
		if len(v) > 0 {
			ruleObj[k] = v
		}
	}
	doc := map[string]any{
		"@timestamp": ts.UTC().Format("2006-01-02T15:04:05.000Z"),
		"timestamp":  ts.UTC().Format("2006-01-02T15:04:05.000-0700"),
		"rule":       ruleObj,
		"agent":      map[string]any{"id": a.id, "name": a.name, "ip": a.ip},
		"manager":    map[string]any{"name": g.manager},
		"id":         fmt.Sprintf("%d.%d", ts.Unix(), r.IntN(1<<24)),
		"full_log":   fullLog,
		"decoder":    map[string]any{"name": rule.decoder},
		"location":   location,
	}
	if rule.program != "" {
		doc["predecoder"] = map[string]any{"program_name": rule.program, "timestamp": syslogTS, "hostname": a.name}
		doc["decoder"] = map[string]any{"parent": rule.decoder, "name": rule.decoder}
	}
	if data != nil {
		doc["data"] = data
	}
	b, _ := json.Marshal(doc) // only strings, numbers, slices and maps: cannot fail
	return b
}
