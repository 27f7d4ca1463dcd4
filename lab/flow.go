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
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/gofrs/flock"

	"github.com/siemctl/siemctl/internal/probeevent"
)

// A flow is a steady stream of tagged events into the lab's manager (the probe's sshd line over
// syslog, one sequence number per event), and its check: every event the manager wrote to its
// alerts file must be searchable in the indexer exactly once. It measures "no alert lost" across
// an upgrade and a rollback while traffic runs. The sender records what it sent (DIR/flows/<tag>.json),
// so the check also counts the events sent over UDP that no manager received (a manager restarting:
// UDP syslog is not retransmitted, by the real remoted either) and that therefore never reach an
// index: lost in transit.

// FlowNonce is the nonce of event seq of a flow tagged tag (the probe's invalid user is
// probeevent.UserPrefix + nonce).
func FlowNonce(tag string, seq int) string { return fmt.Sprintf("%s-%07d", tag, seq) }

var flowTag = regexp.MustCompile(`^[a-z0-9]{1,24}$`)

// SendFlow sends events FlowNonce(tag, first), FlowNonce(tag, first+1), … at rate per second over
// UDP syslog to the manager until ctx ends, and returns the next sequence number. A send error
// (the manager down: UDP says nothing, ICMP may) is not an error: the event is simply not in the
// alerts file, which is what the check compares against.
func (l *Lab) SendFlow(ctx context.Context, tag string, rate float64, first int) (int, error) {
	return sendFlow(ctx, []string{fmt.Sprintf("127.0.0.1:%d", l.st.Ports.Syslog)}, tag, rate, first, flowSentPath(l.st.Dir, tag))
}

// sendFlow sends the flow's events to the syslog addresses in turn (event seq to addrs[seq%n]) and
// records in the file sent (every second and at the end) which it sent.
func sendFlow(ctx context.Context, addrs []string, tag string, rate float64, first int, sent string) (int, error) {
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
	rec := time.NewTicker(time.Second)
	defer rec.Stop()
	seq, recorded := first, first
	for {
		select {
		case <-ctx.Done():
			if err := recordSent(sent, first, seq); err != nil {
				return seq, fmt.Errorf("flow: %w", err)
			}
			return seq, nil
		case <-rec.C:
			if seq != recorded {
				if err := recordSent(sent, first, seq); err != nil {
					return seq, fmt.Errorf("flow: %w", err)
				}
				recorded = seq
			}
		case now := <-t.C:
			msg := probeevent.Message(FlowNonce(tag, seq), byte(1+seq%250), 1024+seq%60000)
			_, _ = conns[seq%len(conns)].Write([]byte(probeevent.Frame(now, "flow-"+tag, msg)))
			seq++
		}
	}
}

// flowSentPath is the record of what a flow's senders sent: DIR/flows/<tag>.json.
func flowSentPath(dir, tag string) string { return filepath.Join(dir, "flows", tag+".json") }

// flowSent is the sent record: one [first, next) range of sequence numbers per sender run.
type flowSent struct {
	Sent [][2]int `json:"sent"`
}

// recordSent puts the range [first, next) of one sender run into the record at path (replacing
// that run's earlier range), under a file lock: senders of one tag may run at once.
func recordSent(path string, first, next int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lk := flock.New(path + ".lock")
	if err := lk.Lock(); err != nil {
		return err
	}
	defer lk.Unlock()
	rec, err := readSent(path)
	if err != nil {
		return err
	}
	kept := rec.Sent[:0]
	for _, r := range rec.Sent {
		if r[0] != first {
			kept = append(kept, r)
		}
	}
	rec.Sent = append(kept, [2]int{first, next})
	sort.Slice(rec.Sent, func(i, j int) bool { return rec.Sent[i][0] < rec.Sent[j][0] })
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return writeFile(path, append(data, '\n'), 0o644)
}

// readSent reads the sent record (none: an empty one).
func readSent(path string) (flowSent, error) {
	var rec flowSent
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("read %s: %w", path, err)
	}
	return rec, nil
}

// FlowReport compares the manager's alerts file with the indexer for one flow.
type FlowReport struct {
	Tag        string   `json:"tag"`
	Sent       int      `json:"sent"`           // events the senders recorded sending (0: no record)
	Written    int      `json:"in_alerts_file"` // distinct events the manager wrote
	Indexed    int      `json:"indexed_docs"`   // documents in the indexer carrying the tag
	Lost       int      `json:"lost"`           // written, not searchable
	Duplicates int      `json:"duplicates"`     // documents beyond the first per event
	Stray      int      `json:"stray"`          // searchable, not in the alerts file (should be 0)
	LostSample []string `json:"lost_sample,omitempty"`
	// LostInTransit are events sent over UDP syslog that no manager received (none wrote them) and
	// that no index holds: lost before the manager, e.g. while it restarted.
	LostInTransit       int      `json:"lost_in_transit"`
	LostInTransitSample []string `json:"lost_in_transit_sample,omitempty"`
}

func (r FlowReport) String() string {
	sent := "sent unknown (no sender record)"
	if r.Sent > 0 {
		sent = fmt.Sprintf("%d sent", r.Sent)
	}
	return fmt.Sprintf("flow %s: %s, %d events in the alerts file, %d documents, lost %d, lost in transit %d (sent over UDP, no manager received them), duplicates %d, stray %d",
		r.Tag, sent, r.Written, r.Indexed, r.Lost, r.LostInTransit, r.Duplicates, r.Stray)
}

// CheckFlow reads the alerts file and searches the indexer for the flow's events.
func (l *Lab) CheckFlow(ctx context.Context, tag string) (FlowReport, error) {
	return checkFlow(ctx, tag, []string{l.alertsFile()}, flowSentPath(l.st.Dir, tag), l.prof.AlertsPrefix(), func(context.Context) (*indexerClient, error) { return l.indexer() })
}

// checkFlow reads the flow's events in the alerts files (one per manager) and its sent record, and
// searches the indexer for them.
func checkFlow(ctx context.Context, tag string, alertsFiles []string, sentPath, prefix string, indexer func(context.Context) (*indexerClient, error)) (FlowReport, error) {
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
	sent, err := readSent(sentPath)
	if err != nil {
		return FlowReport{Tag: tag}, fmt.Errorf("flow: %w", err)
	}
	return flowReport(tag, sent, written, indexed), nil
}

func flowReport(tag string, sent flowSent, written map[int]bool, indexed map[int]int) FlowReport {
	rep := FlowReport{Tag: tag, Written: len(written)}
	seen := map[int]bool{}
	for _, r := range sent.Sent {
		for seq := r[0]; seq < r[1]; seq++ {
			if seen[seq] {
				continue
			}
			seen[seq] = true
			rep.Sent++
			if !written[seq] && indexed[seq] == 0 {
				rep.LostInTransit++
				if len(rep.LostInTransitSample) < 10 {
					rep.LostInTransitSample = append(rep.LostInTransitSample, FlowNonce(tag, seq))
				}
			}
		}
	}
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
