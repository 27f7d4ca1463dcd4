package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/siemctl/siemctl/internal/probeevent"
)

// A flow is a steady stream of tagged events into the lab's manager (the probe's sshd line over
// syslog, one sequence number per event), and its check: every event the manager wrote to its
// alerts file must be searchable in the indexer exactly once. It measures "no alert lost" across
// an upgrade and a rollback while traffic runs.

// FlowNonce is the nonce of event seq of a flow tagged tag (the probe's invalid user is
// probeevent.UserPrefix + nonce).
func FlowNonce(tag string, seq int) string { return fmt.Sprintf("%s-%07d", tag, seq) }

var flowTag = regexp.MustCompile(`^[a-z0-9]{1,24}$`)

// SendFlow sends events FlowNonce(tag, first), FlowNonce(tag, first+1), … at rate per second over
// UDP syslog to the manager until ctx ends, and returns the next sequence number. A send error
// (the manager down: UDP says nothing, ICMP may) is not an error: the event is simply not in the
// alerts file, which is what the check compares against.
func (l *Lab) SendFlow(ctx context.Context, tag string, rate float64, first int) (int, error) {
	return sendFlow(ctx, []string{fmt.Sprintf("127.0.0.1:%d", l.st.Ports.Syslog)}, tag, rate, first)
}

// sendFlow sends the flow's events to the syslog addresses in turn (event seq to addrs[seq%n]).
func sendFlow(ctx context.Context, addrs []string, tag string, rate float64, first int) (int, error) {
	if !flowTag.MatchString(tag) {
		return first, fmt.Errorf("flow: tag %q: want 1-24 lowercase letters and digits", tag)
	}
	if rate <= 0 || rate > 1000 {
		return first, fmt.Errorf("flow: rate %v: want above 0, at most 1000 per second", rate)
	}
	var conns []net.Conn
	for _, addr := range addrs {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			return first, fmt.Errorf("flow: %w", err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	seq := first
	for {
		select {
		case <-ctx.Done():
			return seq, nil
		case now := <-t.C:
			msg := probeevent.Message(FlowNonce(tag, seq), byte(1+seq%250), 1024+seq%60000)
			_, _ = conns[seq%len(conns)].Write([]byte(probeevent.Frame(now, "flow-"+tag, msg)))
			seq++
		}
	}
}

// FlowReport compares the manager's alerts file with the indexer for one flow.
type FlowReport struct {
	Tag        string   `json:"tag"`
	Written    int      `json:"in_alerts_file"` // distinct events the manager wrote
	Indexed    int      `json:"indexed_docs"`   // documents in the indexer carrying the tag
	Lost       int      `json:"lost"`           // written, not searchable
	Duplicates int      `json:"duplicates"`     // documents beyond the first per event
	Stray      int      `json:"stray"`          // searchable, not in the alerts file (should be 0)
	LostSample []string `json:"lost_sample,omitempty"`
}

func (r FlowReport) String() string {
	return fmt.Sprintf("flow %s: %d events in the alerts file, %d documents, lost %d, duplicates %d, stray %d",
		r.Tag, r.Written, r.Indexed, r.Lost, r.Duplicates, r.Stray)
}

// CheckFlow reads the alerts file and searches the indexer for the flow's events.
func (l *Lab) CheckFlow(ctx context.Context, tag string) (FlowReport, error) {
	return checkFlow(ctx, tag, []string{l.alertsFile()}, l.prof.AlertsPrefix(), func(context.Context) (*indexerClient, error) { return l.indexer() })
}

// checkFlow reads the flow's events in the alerts files (one per manager) and searches the indexer
// for them.
func checkFlow(ctx context.Context, tag string, alertsFiles []string, prefix string, indexer func(context.Context) (*indexerClient, error)) (FlowReport, error) {
	if !flowTag.MatchString(tag) {
		return FlowReport{Tag: tag}, fmt.Errorf("flow: tag %q: want 1-24 lowercase letters and digits", tag)
	}
	re := regexp.MustCompile(regexp.QuoteMeta(probeevent.UserPrefix+tag+"-") + `([0-9]+)`)
	written := map[int]bool{}
	for _, f := range alertsFiles {
		w, err := flowInFile(f, re)
		if err != nil {
			return FlowReport{Tag: tag}, err
		}
		for seq := range w {
			written[seq] = true
		}
	}
	c, err := indexer(ctx)
	if err != nil {
		return FlowReport{Tag: tag}, err
	}
	indexed, err := c.flowIndexed(ctx, prefix, probeevent.UserPrefix+tag+"-", re)
	if err != nil {
		return FlowReport{Tag: tag}, err
	}
	return flowReport(tag, written, indexed), nil
}

func flowReport(tag string, written map[int]bool, indexed map[int]int) FlowReport {
	rep := FlowReport{Tag: tag, Written: len(written)}
	for seq := range written {
		n := indexed[seq]
		if n == 0 {
			rep.Lost++
			rep.LostSample = append(rep.LostSample, FlowNonce(tag, seq))
		} else {
			rep.Duplicates += n - 1
		}
	}
	for seq, n := range indexed {
		rep.Indexed += n
		if !written[seq] {
			rep.Stray++
		}
	}
	sort.Strings(rep.LostSample)
	if len(rep.LostSample) > 10 {
		rep.LostSample = rep.LostSample[:10]
	}
	return rep
}

// WaitFlow checks the flow until nothing is lost and two checks interval apart agree (the
// shipper drained), or timeout; it returns the last report.
func (l *Lab) WaitFlow(ctx context.Context, tag string, timeout, interval time.Duration) (FlowReport, error) {
	return waitFlow(ctx, tag, timeout, interval, l.CheckFlow)
}

func waitFlow(ctx context.Context, tag string, timeout, interval time.Duration, check func(context.Context, string) (FlowReport, error)) (FlowReport, error) {
	deadline := time.Now().Add(timeout)
	var prev FlowReport
	for i := 0; ; i++ {
		rep, err := check(ctx, tag)
		if err != nil {
			return rep, err
		}
		if i > 0 && rep.Lost == 0 && rep.counts() == prev.counts() {
			return rep, nil
		}
		if time.Now().After(deadline) {
			return rep, nil
		}
		prev = rep
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(interval):
		}
	}
}

func (r FlowReport) counts() [5]int {
	return [5]int{r.Written, r.Indexed, r.Lost, r.Duplicates, r.Stray}
}

// flowInFile returns the sequence numbers of the flow's events in the alerts file.
func flowInFile(path string, re *regexp.Regexp) (map[int]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flow: %w", err)
	}
	defer f.Close()
	out := map[int]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if m := re.FindSubmatch(sc.Bytes()); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			out[n] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("flow: read %s: %w", path, err)
	}
	return out, nil
}

// flowIndexed counts the documents per sequence number whose data.srcuser starts with prefix, in
// every index of indexPrefix (a composite terms aggregation, paged: no result window limit).
func (c *indexerClient) flowIndexed(ctx context.Context, indexPrefix, prefix string, re *regexp.Regexp) (map[int]int, error) {
	if _, err := c.ok(ctx, http.MethodPost, "/"+indexPrefix+"*/_refresh", nil); err != nil {
		return nil, fmt.Errorf("flow: refresh: %w", err)
	}
	out := map[int]int{}
	var after any
	for {
		comp := map[string]any{"size": 5000, "sources": []any{map[string]any{"u": map[string]any{"terms": map[string]any{"field": "data.srcuser"}}}}}
		if after != nil {
			comp["after"] = after
		}
		body := map[string]any{"size": 0, "query": map[string]any{"prefix": map[string]any{"data.srcuser": prefix}},
			"aggs": map[string]any{"u": map[string]any{"composite": comp}}}
		data, err := c.ok(ctx, http.MethodPost, "/"+indexPrefix+"*/_search", body)
		if err != nil {
			return nil, fmt.Errorf("flow: search: %w", err)
		}
		var r struct {
			Aggs struct {
				U struct {
					AfterKey any `json:"after_key"`
					Buckets  []struct {
						Key struct {
							U string `json:"u"`
						} `json:"key"`
						Count int `json:"doc_count"`
					} `json:"buckets"`
				} `json:"u"`
			} `json:"aggregations"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("flow: search answer: %w", err)
		}
		for _, b := range r.Aggs.U.Buckets {
			m := re.FindStringSubmatch(b.Key.U)
			if m == nil {
				return nil, errors.New("flow: data.srcuser " + strconv.Quote(b.Key.U) + " does not carry a sequence number")
			}
			n, _ := strconv.Atoi(m[1])
			out[n] += b.Count
		}
		if len(r.Aggs.U.Buckets) == 0 || r.Aggs.U.AfterKey == nil {
			return out, nil
		}
		after = r.Aggs.U.AfterKey
	}
}
