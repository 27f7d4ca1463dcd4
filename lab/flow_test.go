package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/probeevent"
)

// The check counts per event: one lost (in the file, not indexed), one indexed twice, one stray
// (indexed, not in the file), over two pages of the composite aggregation.
func TestFlowCounts(t *testing.T) {
	dir := t.TempDir()
	alerts := filepath.Join(dir, "alerts.json")
	var file strings.Builder
	for _, seq := range []int{1, 2, 3, 4} {
		fmt.Fprintf(&file, `{"rule":{"id":"5710"},"data":{"srcuser":"%s%s"},"full_log":"Failed password for invalid user %s%s"}`+"\n",
			probeevent.UserPrefix, FlowNonce("t1", seq), probeevent.UserPrefix, FlowNonce("t1", seq))
	}
	file.WriteString(`{"rule":{"id":"5710"},"data":{"srcuser":"siemctl-probe-other-0000001"}}` + "\n")
	if err := os.WriteFile(alerts, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pages := []string{
		`{"aggregations":{"u":{"after_key":{"u":"x"},"buckets":[{"key":{"u":"siemctl-probe-t1-0000001"},"doc_count":1},{"key":{"u":"siemctl-probe-t1-0000002"},"doc_count":2}]}}}`,
		`{"aggregations":{"u":{"after_key":{"u":"y"},"buckets":[{"key":{"u":"siemctl-probe-t1-0000004"},"doc_count":1},{"key":{"u":"siemctl-probe-t1-0000009"},"doc_count":1}]}}}`,
		`{"aggregations":{"u":{"buckets":[]}}}`,
	}
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_refresh") {
			io.WriteString(w, `{"_shards":{"total":1,"successful":1,"failed":0}}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		io.WriteString(w, pages[len(bodies)-1])
	}))
	defer srv.Close()
	c := &indexerClient{base: srv.URL, user: "admin", password: "x", hc: srv.Client()}
	re := regexp.MustCompile(regexp.QuoteMeta(probeevent.UserPrefix+"t1-") + `([0-9]+)`)
	written, err := flowInFile(alerts, re)
	if err != nil {
		t.Fatal(err)
	}
	indexed, err := c.flowIndexed(t.Context(), "siem-alerts-4.x-", probeevent.UserPrefix+"t1-", re)
	if err != nil {
		t.Fatal(err)
	}
	rep := flowReport("t1", flowSent{}, written, indexed)
	if rep.Written != 4 || rep.Indexed != 5 || rep.Lost != 1 || rep.Duplicates != 1 || rep.Stray != 1 || rep.LostSample[0] != "t1-0000003" {
		t.Fatalf("report %+v", rep)
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(bodies[1]), &second); err != nil || !strings.Contains(bodies[1], `"after":{"u":"x"}`) || !strings.Contains(bodies[0], `"prefix":{"data.srcuser":"siemctl-probe-t1-"}`) {
		t.Fatalf("paging: %v\n%s\n%s", err, bodies[0], bodies[1])
	}
}

// Events sent over UDP while no manager listens never reach the alerts file nor an index: the
// sender's record lets the check count them as lost in transit. A fake manager receives the first
// 20 events and stops (a restart); the check's other counts are unchanged by the record, and an
// event indexed though in no alerts file (a rotated file) is not lost.
func TestFlowLostInTransit(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(regexp.QuoteMeta(probeevent.UserPrefix+"t2-") + `([0-9]+)`)
	received := map[int]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for len(received) < 20 {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if m := re.FindSubmatch(buf[:n]); m != nil {
				seq, _ := strconv.Atoi(string(m[1]))
				received[seq] = true
			}
		}
		pc.Close() // the manager restarts: nothing listens any more
	}()
	sent := filepath.Join(t.TempDir(), "flows", "t2.json")
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	next, err := sendFlow(ctx, []string{pc.LocalAddr().String()}, "t2", 100, 1, sent)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if next-1 < 60 || len(received) != 20 {
		t.Fatalf("sent %d, received %d", next-1, len(received))
	}
	rec, err := readSent(sent)
	if err != nil || len(rec.Sent) != 1 || rec.Sent[0] != [2]int{1, next} {
		t.Fatalf("sent record %+v %v", rec, err)
	}
	indexed := map[int]int{}
	for seq := range received {
		indexed[seq] = 1
	}
	indexed[next-1] = 1 // indexed, in no alerts file: not lost (a stray for the file comparison)
	rep := flowReport("t2", rec, received, indexed)
	if rep.Sent != next-1 || rep.Written != 20 || rep.Lost != 0 || rep.Stray != 1 || rep.LostInTransit != next-1-21 ||
		len(rep.LostInTransitSample) != 10 {
		t.Fatalf("report %+v", rep)
	}
	if s := rep.String(); !strings.Contains(s, fmt.Sprintf("%d sent", next-1)) || !strings.Contains(s, fmt.Sprintf("lost in transit %d", next-22)) {
		t.Errorf("text %q", s)
	}
	// A second sender run of the same tag adds its range; the first run's stays.
	if err := recordSent(sent, next, next+5); err != nil {
		t.Fatal(err)
	}
	if rec, _ := readSent(sent); len(rec.Sent) != 2 || flowReport("t2", rec, received, indexed).Sent != next+4 {
		t.Errorf("two runs: %+v", rec)
	}
	if rep := flowReport("t2", flowSent{}, received, indexed); rep.Sent != 0 || rep.LostInTransit != 0 || !strings.Contains(rep.String(), "sent unknown") {
		t.Errorf("no record: %+v", rep)
	}
}
