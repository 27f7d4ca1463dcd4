package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

// clock is a fake clock advanced by Wait.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	return nil
}

// fakeConn records writes and lets a test react to each frame (the
// manager writing its alert).
type fakeConn struct {
	net.Conn
	onWrite func(frame string)
}

func (c *fakeConn) Write(b []byte) (int, error) {
	c.onWrite(string(b))
	return len(b), nil
}
func (c *fakeConn) Close() error                     { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

// searcher answers from a script: calls before foundAt return no hit (the
// index's own refresh makes the alert searchable at foundAt); from indexedAt
// on, the alert is indexed and a Refresh makes it searchable at once.
type searcher struct {
	calls      int
	foundAt    int // 0: never
	indexedAt  int // 0: never
	err        error
	refreshErr error
	refreshed  bool
	refreshes  []string // the indices each Refresh named
	queries    []string
	index      string
}

func (s *searcher) Search(_ context.Context, sr indexer.SearchRequest) (indexer.SearchResult, error) {
	s.calls++
	s.queries = append(s.queries, sr.Query)
	s.index = sr.Index
	if s.err != nil {
		return indexer.SearchResult{}, s.err
	}
	if s.foundAt > 0 && s.calls >= s.foundAt || s.refreshed {
		return indexer.SearchResult{Total: 1, Hits: []indexer.Hit{{Index: "siem-alerts-4.x-2025.03.10", ID: "x",
			Source: json.RawMessage(`{"rule":{"id":"5710","level":5}}`)}}}, nil
	}
	return indexer.SearchResult{Hits: []indexer.Hit{}}, nil
}

func (s *searcher) Refresh(_ context.Context, index string) (indexer.ShardsSummary, error) {
	s.refreshes = append(s.refreshes, index)
	if s.refreshErr != nil {
		return indexer.ShardsSummary{}, s.refreshErr
	}
	if s.indexedAt > 0 && s.calls+1 >= s.indexedAt { // the refresh comes before the next search
		s.refreshed = true
	}
	return indexer.ShardsSummary{Total: 2, Successful: 1}, nil
}

var userRe = regexp.MustCompile(`invalid user (siemctl-probe-[0-9a-f]{12}) from 192\.0\.2\.(\d+) port (\d+) ssh2$`)

type scenario struct {
	name       string
	fileMode   string // "ok" (manager writes the alert), "silent", "missing"
	search     *searcher
	sendErr    error
	wantOK     bool
	wantBroken string
	wantHops   []string // name=state@latency
	refreshes  int      // Refresh calls, each of the alert's daily index
}

func TestRun(t *testing.T) {
	tests := []scenario{
		{name: "flows", fileMode: "ok", search: &searcher{foundAt: 3}, wantOK: true,
			wantHops: []string{"manager=ok@0s", "indexer=ok@1s"}, refreshes: 3},
		// Wazuh's template refreshes every 5 s: the probe does not wait for it once the alert is indexed.
		{name: "indexed, searchable after the probe's refresh", fileMode: "ok", search: &searcher{indexedAt: 3, foundAt: 11}, wantOK: true,
			wantHops: []string{"manager=ok@0s", "indexer=ok@1s"}, refreshes: 3},
		{name: "no refresh privilege: the index's own refresh", fileMode: "ok",
			search: &searcher{indexedAt: 3, foundAt: 11, refreshErr: &netclient.Error{Kind: netclient.ErrForbidden, Status: 403, Detail: "no permissions for [indices:admin/refresh]"}},
			wantOK: true, wantHops: []string{"manager=ok@0s", "indexer=ok@5s"}, refreshes: 1},
		{name: "shipper stalled", fileMode: "ok", search: &searcher{}, wantBroken: BrokenShipper,
			wantHops: []string{"manager=ok@0s", "indexer=failed@10s"}, refreshes: 21},
		{name: "manager silent", fileMode: "silent", search: &searcher{}, wantBroken: BrokenManager,
			wantHops: []string{"manager=failed@10s", "indexer=failed@10s"}},
		{name: "indexer down", fileMode: "ok", search: &searcher{err: &netclient.Error{Kind: netclient.ErrUnreachable, Detail: "connection refused"}},
			wantBroken: BrokenIndexer, wantHops: []string{"manager=ok@0s", "indexer=failed@10s"}, refreshes: 21},
		{name: "no alerts file here, flows", fileMode: "missing", search: &searcher{foundAt: 1}, wantOK: true,
			wantHops: []string{"manager=skipped@0s", "indexer=ok@0s"}, refreshes: 1},
		{name: "no alerts file here, lost", fileMode: "missing", search: &searcher{}, wantBroken: BrokenManagerOrShipper,
			wantHops: []string{"manager=skipped@0s", "indexer=failed@10s"}, refreshes: 21},
		{name: "send fails", fileMode: "ok", search: &searcher{}, sendErr: errors.New("connection refused"), wantBroken: BrokenManager,
			wantHops: []string{"manager=failed@0s", "indexer=failed@0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			alerts := filepath.Join(dir, "alerts.json")
			if tt.fileMode != "missing" {
				// An older alert that mentions another probe must not count.
				if err := os.WriteFile(alerts, []byte(`{"rule":{"id":"5710"},"full_log":"siemctl-probe-000000000000"}`+"\n"), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			clk := &clock{t: time.Date(2025, 3, 10, 9, 31, 7, 0, time.UTC)}
			var frames []string
			dial := func(_ context.Context, network, addr string) (net.Conn, error) {
				if tt.sendErr != nil {
					return nil, tt.sendErr
				}
				if network != "udp" || addr != "127.0.0.1:514" {
					t.Errorf("dial %s %s", network, addr)
				}
				return &fakeConn{onWrite: func(frame string) {
					frames = append(frames, frame)
					m := userRe.FindStringSubmatch(frame)
					if m == nil || tt.fileMode != "ok" {
						return
					}
					f, _ := os.OpenFile(alerts, os.O_APPEND|os.O_WRONLY, 0)
					defer f.Close()
					// Written in two pieces: a half line must not be read as a line.
					line := fmt.Sprintf(`{"timestamp":"2025-03-10T09:31:07.412+0000","rule":{"level":5,"id":"5710"},"data":{"srcuser":%q}}`, m[1])
					f.WriteString(line[:20])
					f.WriteString(line[20:] + "\n")
				}}, nil
			}
			rep, err := Run(context.Background(), Options{
				Syslog: "udp://127.0.0.1:514", AlertsFile: alerts, IndexPattern: "siem-alerts-4.x-*", Searcher: tt.search,
				Timeout: 10 * time.Second, Interval: 500 * time.Millisecond, Now: clk.Now, Wait: clk.Wait, Dial: dial,
				Rand: bytes.NewReader([]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 9, 0x10, 0x00}), Hostname: "siem01",
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK != tt.wantOK || rep.BrokenAt != tt.wantBroken {
				t.Errorf("ok=%v broken=%q (%s), want %v %q", rep.OK, rep.BrokenAt, rep.Detail, tt.wantOK, tt.wantBroken)
			}
			var hops []string
			for _, h := range rep.Hops {
				hops = append(hops, fmt.Sprintf("%s=%s@%s", h.Name, h.State, h.Latency))
			}
			if strings.Join(hops, " ") != strings.Join(tt.wantHops, " ") {
				t.Errorf("hops %v, want %v", hops, tt.wantHops)
			}
			if rep.Nonce != "deadbeef0102" {
				t.Errorf("nonce %q", rep.Nonce)
			}
			if tt.sendErr == nil {
				want := "<38>Mar 10 09:31:07 siem01 sshd: Failed password for invalid user siemctl-probe-deadbeef0102 from 192.0.2.10 port 5120 ssh2"
				if len(frames) != 1 || frames[0] != want {
					t.Errorf("frames %q, want %q", frames, want)
				}
				if q := tt.search.queries[0]; q != `data.srcuser:"siemctl-probe-deadbeef0102" OR full_log:"siemctl-probe-deadbeef0102"` || tt.search.index != "siem-alerts-4.x-*" {
					t.Errorf("query %q on %q", q, tt.search.index)
				}
			}
			if len(tt.search.refreshes) != tt.refreshes {
				t.Errorf("%d refreshes, want %d", len(tt.search.refreshes), tt.refreshes)
			}
			for _, ix := range tt.search.refreshes {
				if ix != "siem-alerts-4.x-2025.03.10" {
					t.Errorf("refreshed %q, want the alert's daily index siem-alerts-4.x-2025.03.10", ix)
				}
			}
			if tt.wantOK && (rep.RuleID != "5710" || rep.Level != 5) {
				t.Errorf("rule %q level %d", rep.RuleID, rep.Level)
			}
			if !tt.wantOK && rep.Detail == "" {
				t.Error("a broken flow without a detail")
			}
		})
	}
}

func TestDailyIndices(t *testing.T) {
	day := time.Date(2025, 3, 10, 23, 59, 58, 0, time.UTC)
	for _, tt := range []struct {
		pattern  string
		from, to time.Time
		want     string
	}{
		{"wazuh-alerts-4.x-*", day, day.Add(time.Second), "wazuh-alerts-4.x-2025.03.10"},
		{"wazuh-alerts-4.x-*", day, day.Add(2 * time.Second), "wazuh-alerts-4.x-2025.03.10,wazuh-alerts-4.x-2025.03.11"},
		// the pipeline names the index after the UTC day, whatever the host's zone
		{"wazuh-alerts-4.x-*", day.In(time.FixedZone("CET", 3600)), day.In(time.FixedZone("CET", 3600)), "wazuh-alerts-4.x-2025.03.10"},
		{"alerts", day, day, "alerts"},
		{"a-*,b-*", day, day, "a-*,b-*"},
	} {
		if got := dailyIndices(tt.pattern, tt.from, tt.to); got != tt.want {
			t.Errorf("dailyIndices(%q, %s, %s) = %q, want %q", tt.pattern, tt.from, tt.to, got, tt.want)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := &clock{t: time.Unix(0, 0)}
	s := &searcher{}
	_, err := Run(ctx, Options{Syslog: "udp://127.0.0.1:514", IndexPattern: "x-*", Searcher: s, Now: clk.Now,
		Wait: func(ctx context.Context, d time.Duration) error { cancel(); return clk.Wait(ctx, d) },
		Dial: func(context.Context, string, string) (net.Conn, error) {
			return &fakeConn{onWrite: func(string) {}}, nil
		}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v, want context.Canceled", err)
	}
}

func TestParseSyslog(t *testing.T) {
	tests := []struct {
		in, network, addr, err string
	}{
		{"udp://127.0.0.1:514", "udp", "127.0.0.1:514", ""},
		{"tcp://[::1]:1514", "tcp", "[::1]:1514", ""},
		{"http://127.0.0.1:514", "", "", "scheme must be"},
		{"udp://127.0.0.1", "", "", "want udp://host:port"},
		{"udp://127.0.0.1:514/x", "", "", "unexpected path"},
		{"::", "", "", "manager.syslog"},
	}
	for _, tt := range tests {
		n, a, err := ParseSyslog(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || n != tt.network || a != tt.addr {
			t.Errorf("%s: %s %s %v", tt.in, n, a, err)
		}
	}
}

// TestSendFraming sends real datagrams and TCP lines on loopback.
func TestSendFraming(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var d net.Dialer
	if err := send(context.Background(), d.DialContext, "udp", pc.LocalAddr().String(), "<38>frame"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "<38>frame" {
		t.Errorf("udp got %q %v", buf[:n], err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b := make([]byte, 512)
		var all []byte
		for {
			n, err := c.Read(b)
			all = append(all, b[:n]...)
			if err != nil {
				break
			}
		}
		got <- string(all)
	}()
	if err := send(context.Background(), d.DialContext, "tcp", ln.Addr().String(), "<38>frame"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "<38>frame\n" {
		t.Errorf("tcp got %q", s)
	}
}

func TestWatcherRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "alerts.json")
	os.WriteFile(p, []byte("old line with MARK\n"), 0o600)
	w := newWatcher(p)
	if l, err := w.find("MARK"); l != nil || err != nil {
		t.Fatalf("an old line was found: %q %v", l, err)
	}
	os.WriteFile(p, []byte("new\nMARK here\n"), 0o600) // truncated and rewritten, shorter
	if l, err := w.find("MARK"); string(l) != "MARK here" || err != nil {
		t.Errorf("after truncation: %q %v", l, err)
	}
}

// TestRunQueueSocket: with no syslog configured (a stock ossec.conf) the
// probe sends its event to analysisd's queue socket as logcollector does:
// one datagram "1:<location>:<syslog line>" on a real unixgram socket; the
// "manager" (here the test) alerts on it and the flow is followed as usual.
func TestRunQueueSocket(t *testing.T) {
	dir := t.TempDir()
	install := filepath.Join(dir, "ossec")
	sock := QueueSocket(install)
	pc := managertest.ListenQueue(t, install)
	alerts := filepath.Join(dir, "alerts.json")
	if err := os.WriteFile(alerts, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	frames := make(chan string, 4)
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := pc.Read(buf)
			if err != nil {
				return
			}
			frame := string(buf[:n])
			frames <- frame
			m := userRe.FindStringSubmatch(frame)
			if m == nil {
				continue
			}
			f, _ := os.OpenFile(alerts, os.O_APPEND|os.O_WRONLY, 0)
			fmt.Fprintf(f, `{"rule":{"level":5,"id":"5710"},"data":{"srcuser":%q},"location":"siemctl-probe"}`+"\n", m[1])
			f.Close()
		}
	}()
	s := &searcher{foundAt: 4}
	rep, err := Run(context.Background(), Options{
		Queue: sock, AlertsFile: alerts, IndexPattern: "wazuh-alerts-4.x-*", Searcher: s,
		Timeout: 30 * time.Second, Interval: 50 * time.Millisecond, Hostname: "wazuh01",
		Rand: bytes.NewReader([]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 9, 0x10, 0x00}),
	})
	if err != nil {
		t.Fatal(err)
	}
	frame := <-frames
	want := regexp.MustCompile(`^1:siemctl-probe:[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d wazuh01 sshd\[\d+\]: Failed password for invalid user siemctl-probe-deadbeef0102 from 192\.0\.2\.10 port 5120 ssh2$`)
	if !want.MatchString(frame) {
		t.Errorf("queued frame %q", frame)
	}
	if !rep.OK || rep.RuleID != "5710" || rep.Hops[0].State != StateOK {
		t.Errorf("report %+v", rep)
	}
}

// TestQueueSocketErrors: a missing socket and a socket nobody reads are
// broken at the manager, with the fix in the detail; no destination at all
// is a configuration error.
func TestQueueSocketErrors(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale")
	pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: stale, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	// A datagram socket leaves its file when closed: nobody reads (analysisd died).
	pc.Close()
	notSock := filepath.Join(dir, "plain")
	if err := os.WriteFile(notSock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ queue, want string }{
		{filepath.Join(dir, "missing", "queue"), "the manager is not running (siemctl services status manager) or manager.install_dir is wrong"},
		{stale, "wazuh-analysisd is not running (siemctl services restart manager)"},
		{notSock, "manager.install_dir"},
	} {
		rep, err := Run(context.Background(), Options{Queue: tt.queue, IndexPattern: "wazuh-alerts-4.x-*", Searcher: &searcher{}, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || rep.BrokenAt != BrokenManager || !strings.Contains(rep.Detail, tt.want) || !strings.Contains(rep.Detail, tt.queue) {
			t.Errorf("%s: broken at %q: %s; want %q", tt.queue, rep.BrokenAt, rep.Detail, tt.want)
		}
	}
	if _, err := Run(context.Background(), Options{IndexPattern: "x-*", Searcher: &searcher{}}); err == nil || !strings.Contains(err.Error(), "manager.syslog") {
		t.Errorf("no destination: %v", err)
	}
	if got := (Target{Queue: "/var/ossec/queue/sockets/queue"}).String(); got != "unixgram:///var/ossec/queue/sockets/queue" {
		t.Errorf("target %q", got)
	}
	if got := (Target{Syslog: "udp://127.0.0.1:514", Queue: "/q"}).String(); got != "udp://127.0.0.1:514" {
		t.Errorf("syslog wins: %q", got)
	}
}

func TestNewTarget(t *testing.T) {
	if q := NewTarget("", "/var/ossec").Queue; q != "/var/ossec/queue/sockets/queue" {
		t.Errorf("queue %q", q)
	}
	if tg := NewTarget("udp://127.0.0.1:514", "/var/ossec"); tg.Queue != "" || tg.Syslog != "udp://127.0.0.1:514" {
		t.Errorf("syslog target %+v", tg)
	}
	if err := NewTarget("", "").Validate(); err == nil {
		t.Error("no destination accepted")
	}
}

// The event is the one builder of what the probe sends and searches for
// (probe.Run and the upgrade's gate.probe).
func TestEvent(t *testing.T) {
	ev, err := NewEvent(bytes.NewReader([]byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 253, 0xff, 0xff}))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{Nonce: "deadbeef0001", Host: 254, Port: 2047}
	if ev != want {
		t.Fatalf("event %+v, want %+v", ev, want)
	}
	if ev.Line() != "Failed password for invalid user siemctl-probe-deadbeef0001 from 192.0.2.254 port 2047 ssh2" ||
		ev.Query() != `data.srcuser:"siemctl-probe-deadbeef0001" OR full_log:"siemctl-probe-deadbeef0001"` || ev.PID() != 3047 {
		t.Errorf("line %q query %q pid %d", ev.Line(), ev.Query(), ev.PID())
	}
	if _, err := NewEvent(bytes.NewReader([]byte{1, 2})); err == nil {
		t.Error("a short random source gave an event")
	}
	rep := Report{Hops: []Hop{{Name: HopManager, Latency: 2 * time.Second}, {Name: HopIndexer, Latency: 3 * time.Second}}}
	if rep.Latency() != 3*time.Second || (Report{}).Latency() != 0 {
		t.Errorf("latency %v", rep.Latency())
	}
}

// TestSendThenFollow: an event sent ahead (the upgrade sends it once the new
// manager runs) is followed later by Run without a second send: latencies
// count from its send, the alerts file is read from where it ended then
// (an older probe's alert before it does not count), and Timeout counts from
// the follow's start.
func TestSendThenFollow(t *testing.T) {
	dir := t.TempDir()
	alerts := filepath.Join(dir, "alerts.json")
	if err := os.WriteFile(alerts, []byte(`{"data":{"srcuser":"siemctl-probe-deadbeef0102"},"note":"not this send's"}`+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2025, 3, 10, 9, 31, 7, 0, time.UTC)}
	frames := 0
	dial := func(context.Context, string, string) (net.Conn, error) {
		return &fakeConn{onWrite: func(frame string) {
			frames++
			if m := userRe.FindStringSubmatch(frame); m != nil {
				f, _ := os.OpenFile(alerts, os.O_APPEND|os.O_WRONLY, 0)
				fmt.Fprintf(f, `{"rule":{"level":5,"id":"5710"},"data":{"srcuser":%q}}`+"\n", m[1])
				f.Close()
			}
		}}, nil
	}
	s := &searcher{indexedAt: 2, foundAt: 50}
	o := Options{Syslog: "udp://127.0.0.1:514", AlertsFile: alerts, IndexPattern: "siem-alerts-4.x-*", Searcher: s,
		Timeout: 10 * time.Second, Interval: 500 * time.Millisecond, Now: clk.Now, Wait: clk.Wait, Dial: dial,
		Rand: bytes.NewReader([]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 9, 0x10, 0x00}), Hostname: "siem01"}
	sent, err := Send(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Nonce != "deadbeef0102" || !sent.At.Equal(clk.Now()) || sent.AlertsOffset <= 0 || frames != 1 {
		t.Fatalf("sent %+v after %d frames", sent, frames)
	}
	// The run's journal keeps it as JSON; the follow comes 20 s later (the shipper phase).
	raw, _ := json.Marshal(sent)
	var back Sent
	if err := json.Unmarshal(raw, &back); err != nil || back != sent {
		t.Fatalf("JSON round trip %s: %+v %v", raw, back, err)
	}
	clk.Wait(context.Background(), 20*time.Second)
	o.Sent = &back
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || frames != 1 || rep.Nonce != sent.Nonce || !rep.SentAt.Equal(sent.At) {
		t.Fatalf("followed %+v after %d frames, want OK with the one frame sent ahead", rep, frames)
	}
	if h := rep.Hops; h[0].State != StateOK || h[0].Latency != 20*time.Second || h[1].Latency != 20500*time.Millisecond {
		t.Errorf("hops %+v, want the manager at 20s and the indexer at 20.5s from the send", h)
	}

	// Not watchable at the send: the manager hop is skipped, the flow still judged.
	s2 := &searcher{foundAt: 3}
	o.Searcher, o.Sent = s2, &Sent{Event: sent.Event, At: clk.Now(), AlertsOffset: -1}
	if rep, err = Run(context.Background(), o); err != nil || !rep.OK || rep.Hops[0].State != StateSkipped || frames != 1 {
		t.Errorf("unwatched send: %+v %v (%d frames)", rep, err, frames)
	}
	// Never searchable: the timeout counts from the follow, and the shipper is named.
	s3 := &searcher{}
	o.Searcher, o.Sent = s3, &back
	if rep, err = Run(context.Background(), o); err != nil || rep.OK || rep.BrokenAt != BrokenShipper || s3.calls != 21 {
		t.Errorf("lost: %+v %v after %d searches, want broken at the shipper after 21", rep, err, s3.calls)
	}
}
