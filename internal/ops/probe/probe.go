// Package probe is the end-to-end data-flow probe: it sends one sshd line
// with a unique nonce to the manager, shaped so the stock ruleset alerts on
// it (sshd "Failed password for invalid user …", rule 5710 level 5) — as
// syslog where manager.syslog is configured, else into analysisd's queue
// socket the way the manager's own logcollector does — then
// watches the manager's alerts file (hop "manager") and polls the indexer
// (hop "indexer") for the nonce, and reports per-hop latency from the send
// and the component that broke: manager, shipper or indexer. Event builds
// the line and its search query once, for Run and for the upgrade's
// gate.probe (which polls across processes and keeps the event in its run).
package probe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/probeevent"
)

// Hop and component names.
const (
	HopManager = "manager" // the event is in the manager's alerts file
	HopIndexer = "indexer" // the alert is searchable in the indexer

	BrokenManager = "manager"
	BrokenShipper = "shipper"
	BrokenIndexer = "indexer"
	// BrokenManagerOrShipper: the alerts file could not be watched here, so
	// the two cannot be told apart.
	BrokenManagerOrShipper = "manager or shipper"
)

// Hop states.
const (
	StateOK      = "ok"
	StateFailed  = "failed"
	StateSkipped = "skipped" // not observable from here (e.g. alerts file unreadable)
)

// Searcher is the part of the indexer client the probe uses.
type Searcher interface {
	Search(ctx context.Context, sr indexer.SearchRequest) (indexer.SearchResult, error)
	// Refresh makes what the alerts index holds searchable now (POST <index>/_refresh).
	Refresh(ctx context.Context, index string) (indexer.ShardsSummary, error)
}

// Options configure Run. Zero values get defaults.
type Options struct {
	Syslog       string // udp://host:port or tcp://host:port; "" sends to Queue
	Queue        string // analysisd's queue socket ({install_dir}/queue/sockets/queue), used when Syslog is ""
	AlertsFile   string // manager's alerts.json; "" or unreadable: hop skipped
	IndexPattern string // e.g. siem-alerts-4.x-*
	Searcher     Searcher

	// Sent, when set, is an event sent earlier (Send) for Run to follow
	// instead of sending one: latencies count from its send, the alerts file
	// is read from where it ended then, and Timeout counts from Run's start.
	Sent *Sent

	Timeout  time.Duration // overall wait for the event (default 60s; the ctx deadline also bounds it)
	Interval time.Duration // poll interval (default 500ms)

	Now      func() time.Time                                 // default time.Now
	Wait     func(ctx context.Context, d time.Duration) error // default: a timer; tests advance a fake clock
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	Rand     io.Reader // nonce, source address and port; default crypto/rand
	Hostname string    // syslog HOSTNAME; default os.Hostname
}

// Hop is one observed stage with its latency from the send.
type Hop struct {
	Name    string        `json:"name"`
	State   string        `json:"state"`
	Latency time.Duration `json:"latency_ns"`
	Detail  string        `json:"detail,omitempty"`
}

// Report is the probe's outcome.
type Report struct {
	OK       bool      `json:"ok"`
	Nonce    string    `json:"nonce"`
	Line     string    `json:"line"` // the syslog message sent
	SentAt   time.Time `json:"sent_at"`
	Hops     []Hop     `json:"hops"`
	BrokenAt string    `json:"broken_at,omitempty"`
	Detail   string    `json:"detail,omitempty"` // why it broke
	RuleID   string    `json:"rule_id,omitempty"`
	Level    int       `json:"rule_level,omitempty"`
	Index    string    `json:"index,omitempty"` // where the alert was found
}

// Latency is the slowest hop's latency from the send (how long the event
// took to become searchable when OK).
func (r Report) Latency() time.Duration {
	var d time.Duration
	for _, h := range r.Hops {
		d = max(d, h.Latency)
	}
	return d
}

// Event is the probe's tagged event: the nonce, and the source address
// (192.0.2.Host) and port of its sshd line. It is the one builder of what
// the probe sends and searches for; a caller that polls across processes
// (the upgrade's gate.probe) keeps it as JSON and sends it again.
type Event struct {
	Nonce string `json:"nonce"`
	Host  byte   `json:"host"`
	Port  int    `json:"port"`
}

// NewEvent draws an event from r (crypto/rand when nil): a 12-hex-digit
// nonce, a host in 1..254 and a port in 1024..65535.
func NewEvent(r io.Reader) (Event, error) {
	if r == nil {
		r = rand.Reader
	}
	var rnd [9]byte
	if _, err := io.ReadFull(r, rnd[:]); err != nil {
		return Event{}, fmt.Errorf("probe: nonce: %w", err)
	}
	return Event{Nonce: hex.EncodeToString(rnd[:6]), Host: 1 + rnd[6]%254,
		Port: 1024 + int(binary.BigEndian.Uint16(rnd[7:9]))%(65536-1024)}, nil
}

// Marker is the unique text the event carries (the invalid user's name).
func (e Event) Marker() string { return probeevent.UserPrefix + e.Nonce }

// Line is the sshd message sent (without the syslog header).
func (e Event) Line() string { return probeevent.Message(e.Nonce, e.Host, e.Port) }

// PID is the sshd pid in the queue frame's header.
func (e Event) PID() int { return 1000 + e.Port%30000 }

// Query finds the event's alert in the alerts indices (query_string): by
// the decoded user, or by the raw line.
func (e Event) Query() string {
	return fmt.Sprintf(`data.srcuser:"%s" OR full_log:"%s"`, e.Marker(), e.Marker())
}

// Send sends the event to t, stamped ts.
func (e Event) Send(ctx context.Context, t Target, ts time.Time) error {
	return t.Send(ctx, ts, e.PID(), e.Line())
}

// QueueSocket is analysisd's input socket under the manager's install dir,
// where logcollector and the other local components send their events.
func QueueSocket(installDir string) string {
	return filepath.Join(installDir, "queue", "sockets", "queue")
}

// QueueLocation is the location the probe's queued event carries (the
// alert's "location" field); logcollector puts the file path there.
const QueueLocation = "siemctl-probe"

// QueueFrame builds the datagram logcollector sends to analysisd's queue:
// "1:<location>:<log line>" ('1' is LOCALFILE_MQ), the log line with its
// syslog header (time, host, sshd[pid]) as read from a log file.
func QueueFrame(ts time.Time, hostname string, pid int, msg string) string {
	if hostname == "" || strings.ContainsAny(hostname, " \t:") {
		hostname = "localhost"
	}
	return fmt.Sprintf("1:%s:%s %s sshd[%d]: %s", QueueLocation, ts.Format(time.Stamp), hostname, pid, msg)
}

// Target is where the probe's event goes: manager.syslog when configured,
// else analysisd's queue socket.
type Target struct {
	Syslog   string
	Queue    string
	Hostname string
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error) // default net.Dialer
}

// OptionsFor is the data-flow probe's options for cfg, searching with
// ix. The target is validated by the caller (a usage error) or probe.Run.
func OptionsFor(cfg *config.Config, ix Searcher) Options {
	t := NewTarget(cfg.Manager.Syslog, cfg.Manager.InstallDir)
	alerts := ""
	if cfg.Manager.InstallDir != "" {
		alerts = filepath.Join(cfg.Manager.InstallDir, "logs", "alerts", "alerts.json")
	}
	return Options{Syslog: t.Syslog, Queue: t.Queue, AlertsFile: alerts, IndexPattern: cfg.Indexer.AlertsIndexPrefix + "*", Searcher: ix}
}

// NewTarget is the probe's destination for a manager: syslog (manager.syslog)
// where configured, else analysisd's queue socket under installDir (a
// stock ossec.conf has no syslog listener).
func NewTarget(syslog, installDir string) Target {
	t := Target{Syslog: syslog}
	if syslog == "" && installDir != "" {
		t.Queue = QueueSocket(installDir)
	}
	return t
}

// String names the destination for messages.
func (t Target) String() string {
	if t.Syslog != "" {
		return t.Syslog
	}
	return "unixgram://" + t.Queue
}

// Validate checks the destination without sending.
func (t Target) Validate() error {
	if t.Syslog != "" {
		_, _, err := ParseSyslog(t.Syslog)
		return err
	}
	if t.Queue == "" || !filepath.IsAbs(t.Queue) {
		return errors.New("probe: no destination: set manager.syslog (udp://host:port) or manager.install_dir (the queue socket is {install_dir}/queue/sockets/queue)")
	}
	return nil
}

// Send delivers msg (the sshd message, without header) as of ts.
func (t Target) Send(ctx context.Context, ts time.Time, pid int, msg string) error {
	if err := t.Validate(); err != nil {
		return err
	}
	dial := t.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	if t.Syslog != "" {
		network, addr, _ := ParseSyslog(t.Syslog)
		return send(ctx, dial, network, addr, probeevent.Frame(ts, t.Hostname, msg))
	}
	return sendQueue(ctx, dial, t.Queue, QueueFrame(ts, t.Hostname, pid, msg))
}

// sendQueue writes one datagram to analysisd's queue socket; the errors
// name the fix.
func sendQueue(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), path, frame string) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := dial(dctx, "unixgram", path)
	if err == nil {
		defer c.Close()
		if d, ok := dctx.Deadline(); ok {
			_ = c.SetWriteDeadline(d)
		}
		_, err = io.WriteString(c, frame)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("send the probe to %s: the socket does not exist: the manager is not running (siemctl services status manager) or manager.install_dir is wrong", path)
	case errors.Is(err, syscall.ECONNREFUSED) && !isSocket(path), errors.Is(err, syscall.EPROTOTYPE), errors.Is(err, syscall.ENOTSOCK):
		return fmt.Errorf("send the probe to %s: not the manager's datagram socket: check manager.install_dir", path)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("send the probe to %s: nothing reads the socket: wazuh-analysisd is not running (siemctl services restart manager)", path)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("send the probe to %s: permission denied: run siemctl as root (the socket belongs to the manager's user)", path)
	}
	return fmt.Errorf("send the probe to %s: %w", path, err)
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

func (o *Options) defaults() error {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Wait == nil {
		o.Wait = netclient.Sleep
	}
	if o.Dial == nil {
		var d net.Dialer
		o.Dial = d.DialContext
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
	if o.Searcher == nil {
		return errors.New("probe: no indexer client")
	}
	if o.IndexPattern == "" {
		return errors.New("probe: no alerts index pattern")
	}
	return nil
}

// ParseSyslog validates a manager.syslog address and returns network and host:port.
func ParseSyslog(s string) (network, addr string, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", "", fmt.Errorf("manager.syslog %q: %w", s, err)
	}
	if u.Scheme != "udp" && u.Scheme != "tcp" {
		return "", "", fmt.Errorf("manager.syslog %q: scheme must be udp:// or tcp://", s)
	}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
		return "", "", fmt.Errorf("manager.syslog %q: want udp://host:port or tcp://host:port", s)
	}
	if u.Path != "" && u.Path != "/" {
		return "", "", fmt.Errorf("manager.syslog %q: unexpected path %q", s, u.Path)
	}
	return u.Scheme, u.Host, nil
}

// Sent is an event sent ahead of the step that follows it (the upgrade
// sends it once the new manager runs, so that the new shipper reads its alert
// at its start): what Run needs to follow it, JSON for the run's journal.
type Sent struct {
	Event
	At time.Time `json:"at"`
	// AlertsOffset is the alerts file's size before the send; -1: the file
	// could not be watched then.
	AlertsOffset int64 `json:"alerts_offset"`
}

// newEvent applies the defaults, checks the destination and draws a new
// event (what Send and Run do before they send).
func (o *Options) newEvent() (Target, Event, error) {
	if err := o.defaults(); err != nil {
		return Target{}, Event{}, err
	}
	target := Target{Syslog: o.Syslog, Queue: o.Queue, Hostname: o.Hostname, Dial: o.Dial}
	if err := target.Validate(); err != nil {
		return Target{}, Event{}, err
	}
	ev, err := NewEvent(o.Rand)
	return target, ev, err
}

// Send sends a new event for a later Run (Options.Sent) to follow. Its error
// is the probe's configuration or the send's (naming the fix).
func Send(ctx context.Context, o Options) (Sent, error) {
	target, ev, err := o.newEvent()
	if err != nil {
		return Sent{}, err
	}
	w := newWatcher(o.AlertsFile)
	now := o.Now()
	sent := Sent{Event: ev, At: now.UTC(), AlertsOffset: w.off}
	if w.err != nil {
		sent.AlertsOffset = -1
	}
	return sent, ev.Send(ctx, target, now) // the syslog header's time is local
}

// Run sends the probe event (or takes Options.Sent) and follows it. The error
// is reserved for problems of the probe itself (bad configuration,
// cancellation); a broken data flow is a Report with OK false.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Sent != nil {
		if err := o.defaults(); err != nil {
			return Report{}, err
		}
		return follow(ctx, o, o.Sent.Event, o.Sent.At, watcherAt(o.AlertsFile, o.Sent.AlertsOffset))
	}
	target, ev, err := o.newEvent()
	if err != nil {
		return Report{}, err
	}
	// Hop 1 starts at the file's current end, before the send.
	w := newWatcher(o.AlertsFile)
	start := o.Now()
	if err := ev.Send(ctx, target, start); err != nil {
		rep := Report{Nonce: ev.Nonce, Line: ev.Line(), SentAt: start.UTC()}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		rep.BrokenAt, rep.Detail = BrokenManager, err.Error()
		rep.Hops = []Hop{{Name: HopManager, State: StateFailed, Detail: err.Error()},
			{Name: HopIndexer, State: StateFailed, Detail: "not attempted"}}
		return rep, nil
	}
	return follow(ctx, o, ev, start, w)
}

// follow watches the alerts file (w) and polls the indexer for ev, sent at
// start, until it is searchable or o.Timeout has passed since now.
func follow(ctx context.Context, o Options, ev Event, start time.Time, w *watcher) (Report, error) {
	rep := Report{Nonce: ev.Nonce, Line: ev.Line(), SentAt: start.UTC(), Hops: []Hop{}}
	marker := ev.Marker()
	deadline := o.Now().Add(o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		// Leave a moment to report before the caller's deadline.
		deadline = d.Add(-min(o.Interval, time.Until(d)/10))
	}
	mgr := Hop{Name: HopManager}
	if w.err != nil {
		mgr.State, mgr.Detail = StateSkipped, "alerts file not watched: "+w.err.Error()
	}
	idx := Hop{Name: HopIndexer}
	var lastErr error
	searched, refresh := false, true
	query := ev.Query()
	for {
		now := o.Now()
		if mgr.State == "" {
			if line, err := w.find(marker); err != nil {
				mgr.State, mgr.Detail = StateSkipped, "alerts file not readable: "+err.Error()
			} else if line != nil {
				mgr.State, mgr.Latency = StateOK, now.Sub(start)
				rep.RuleID, rep.Level = ruleOf(line)
				if rep.RuleID != "" {
					mgr.Detail = fmt.Sprintf("rule %s level %d", rep.RuleID, rep.Level)
				}
			}
		}
		if refresh && (mgr.State == StateOK || mgr.State == StateSkipped) {
			// The alert is written (or cannot be watched): make it searchable as soon as the
			// shipper has indexed it, not a refresh_interval later.
			if _, err := o.Searcher.Refresh(ctx, dailyIndices(o.IndexPattern, start, now)); err != nil {
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
				refresh = false // e.g. a user without the refresh privilege: wait for the interval
			}
		}
		res, err := o.Searcher.Search(ctx, indexer.SearchRequest{Index: o.IndexPattern, Query: query, Size: 1,
			Source: []string{"rule.id", "rule.level"}})
		switch {
		case err != nil && ctx.Err() != nil:
			return rep, ctx.Err()
		case err != nil:
			lastErr = err
		default:
			lastErr, searched = nil, true
			if len(res.Hits) > 0 {
				idx.State, idx.Latency = StateOK, o.Now().Sub(start)
				rep.Index = res.Hits[0].Index
				if id, lvl := ruleOf(res.Hits[0].Source); id != "" && rep.RuleID == "" {
					rep.RuleID, rep.Level = id, lvl
				}
				idx.Detail = "in " + rep.Index
			}
		}
		if idx.State == StateOK {
			if mgr.State == "" {
				// Indexed but not seen in the file: rotated or truncated meanwhile.
				if line, _ := w.find(marker); line != nil {
					mgr.State, mgr.Latency = StateOK, idx.Latency
				} else {
					mgr.State, mgr.Detail = StateSkipped, "not seen in the alerts file (rotated?)"
				}
			}
			break
		}
		if !o.Now().Before(deadline) {
			break
		}
		if err := o.Wait(ctx, o.Interval); err != nil {
			return rep, err
		}
	}
	waited := o.Now().Sub(start)
	if idx.State != StateOK {
		idx.State, idx.Latency = StateFailed, waited
		if mgr.State == "" {
			mgr.State, mgr.Latency = StateFailed, waited
			mgr.Detail = "no alert with " + marker + " in " + o.AlertsFile
		}
		switch {
		case mgr.State == StateFailed:
			rep.BrokenAt = BrokenManager
			if o.Syslog != "" {
				rep.Detail = fmt.Sprintf("the manager wrote no alert for the probe within %s (is it listening on %s and does it accept syslog from here?)", round(waited), o.Syslog)
			} else {
				rep.Detail = fmt.Sprintf("the manager wrote no alert for the probe within %s (the event was queued to %s: is wazuh-analysisd running, and does its ruleset still alert on sshd invalid users, rule 5710?)", round(waited), o.Queue)
			}
			idx.Detail = "not attempted: no alert to ship"
		case lastErr != nil:
			rep.BrokenAt = BrokenIndexer
			rep.Detail = "the indexer did not answer the search: " + lastErr.Error()
			idx.Detail = rep.Detail
			if !searched {
				idx.Detail = "never answered: " + lastErr.Error()
			}
		case mgr.State == StateSkipped:
			rep.BrokenAt = BrokenManagerOrShipper
			rep.Detail = fmt.Sprintf("not searchable after %s, and the alerts file could not be watched to tell the manager from the shipper", round(waited))
			idx.Detail = "not found in " + o.IndexPattern
		default:
			rep.BrokenAt = BrokenShipper
			rep.Detail = fmt.Sprintf("the alert is in the manager's alerts file but not searchable in %s after %s: the shipper did not index it", o.IndexPattern, round(waited))
			idx.Detail = "not found in " + o.IndexPattern
		}
	}
	rep.Hops = append(rep.Hops, mgr, idx)
	rep.OK = idx.State == StateOK
	return rep, nil
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// dailyIndices names the alerts indices an alert of the time from..to goes to:
// the shipper's pipeline names them after the alert's UTC day (Wazuh's
// date_index_name, yyyy.MM.dd, on the pattern's prefix), so that a refresh
// touches the one index being written, not every index of the pattern. A
// pattern that is not a prefix with * is refreshed as it is.
func dailyIndices(pattern string, from, to time.Time) string {
	prefix, ok := strings.CutSuffix(pattern, "*")
	if !ok || strings.ContainsAny(prefix, "*,") {
		return pattern
	}
	a, b := prefix+from.UTC().Format("2006.01.02"), prefix+to.UTC().Format("2006.01.02")
	if a == b {
		return a
	}
	return a + "," + b
}

// send writes one frame: a datagram over UDP, a newline-terminated line
// (RFC 6587 non-transparent framing) over TCP.
func send(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), network, addr, frame string) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := dial(dctx, network, addr)
	if err != nil {
		return fmt.Errorf("send the probe to %s://%s: %w", network, addr, err)
	}
	defer c.Close()
	if d, ok := dctx.Deadline(); ok {
		_ = c.SetWriteDeadline(d)
	}
	if network == "tcp" {
		frame += "\n"
	}
	if _, err := io.WriteString(c, frame); err != nil {
		return fmt.Errorf("send the probe to %s://%s: %w", network, addr, err)
	}
	return nil
}

// ruleOf extracts rule.id and rule.level from an alert document.
func ruleOf(doc []byte) (string, int) {
	var a struct {
		Rule struct {
			ID    json.RawMessage `json:"id"`
			Level int             `json:"level"`
		} `json:"rule"`
	}
	if json.Unmarshal(doc, &a) != nil {
		return "", 0
	}
	var id string
	if json.Unmarshal(a.Rule.ID, &id) != nil {
		id = strings.Trim(string(a.Rule.ID), `"`)
	}
	return id, a.Rule.Level
}

// watcher follows an alerts file from its end at creation.
type watcher struct {
	path    string
	off     int64
	err     error  // not watchable
	partial []byte // an incomplete last line
}

// watcherAt follows path from off, where it ended at an earlier send (-1:
// it could not be watched then).
func watcherAt(path string, off int64) *watcher {
	if off < 0 {
		return &watcher{path: path, err: errors.New("not readable when the probe was sent")}
	}
	w := newWatcher(path)
	if w.err == nil {
		w.off = off // a file that shrank since (rotated) is read from its start
	}
	return w
}

func newWatcher(path string) *watcher {
	w := &watcher{path: path}
	if path == "" {
		w.err = errors.New("no alerts file configured")
		return w
	}
	f, err := os.Open(path)
	if err != nil {
		w.err = err
		return w
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		w.err = err
		return w
	}
	w.off = fi.Size()
	return w
}

// find reads what was appended since the last call and returns the first
// complete line containing marker. A file that shrank (rotated or
// truncated) is read from its start.
func (w *watcher) find(marker string) ([]byte, error) {
	f, err := os.Open(w.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < w.off {
		w.off, w.partial = 0, nil
	}
	if fi.Size() == w.off {
		return nil, nil
	}
	buf := make([]byte, fi.Size()-w.off)
	n, err := f.ReadAt(buf, w.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	w.off += int64(n)
	data := append(w.partial, buf[:n]...)
	last := bytes.LastIndexByte(data, '\n')
	if last < 0 {
		w.partial = data
		return nil, nil
	}
	w.partial = append([]byte(nil), data[last+1:]...)
	for _, line := range bytes.Split(data[:last], []byte{'\n'}) {
		if bytes.Contains(line, []byte(marker)) {
			return line, nil
		}
	}
	return nil, nil
}
