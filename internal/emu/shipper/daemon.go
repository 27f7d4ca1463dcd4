package shipper

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
	"github.com/siemctl/siemctl/internal/emu/faults"
)

// RegistryState is the persisted read position of the alerts file (Filebeat's registry entry).
type RegistryState struct {
	Source    string `json:"source"`
	Offset    int64  `json:"offset"`
	Inode     uint64 `json:"inode"`
	Device    uint64 `json:"device"`
	Timestamp string `json:"timestamp"`
}

// RegistryPath is path.data/registry/filebeat/siem-alerts.json.
func RegistryPath(dataDir string) string {
	return filepath.Join(dataDir, "registry", "filebeat", "siem-alerts.json")
}

func loadRegistry(path string) (*RegistryState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read registry: %w", err)
	}
	var s RegistryState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read registry: %w", err)
	}
	return &s, nil
}

func saveRegistry(path string, s *RegistryState) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("write registry: %w", err)
	}
	b, _ := json.Marshal(s)
	if err := renameio.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write registry: %w", err)
	}
	return nil
}

func fileID(st fs.FileInfo) (uint64, uint64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino, uint64(s.Dev)
	}
	return 0, 0
}

// line is one complete line of the alerts file.
type line struct {
	text   []byte
	offset int64 // start offset
	end    int64 // offset after the newline
}

// Tailer reads complete lines of a file from a persisted offset, following truncation and rotation.
type Tailer struct {
	path     string
	f        *os.File
	ino, dev uint64
	offset   int64
	log      func(format string, a ...any)
}

// NewTailer opens the file position from the registry state (nil = start of file).
func NewTailer(path string, st *RegistryState, log func(string, ...any)) *Tailer {
	t := &Tailer{path: path, log: log}
	if st != nil && st.Source == path {
		t.ino, t.dev, t.offset = st.Inode, st.Device, st.Offset
	}
	return t
}

// State is the position to persist.
func (t *Tailer) State(now time.Time) *RegistryState {
	return &RegistryState{Source: t.path, Offset: t.offset, Inode: t.ino, Device: t.dev, Timestamp: now.UTC().Format(time.RFC3339Nano)}
}

// Close releases the open file.
func (t *Tailer) Close() {
	if t.f != nil {
		_ = t.f.Close()
		t.f = nil
	}
}

// Next returns up to max complete lines after the current position (without consuming them: call
// Advance after they are acknowledged).
func (t *Tailer) Next(max int) ([]line, error) {
	if t.f == nil {
		if err := t.open(); err != nil {
			return nil, err
		}
	}
	lines, err := t.readFrom(t.f, max)
	if err != nil || len(lines) > 0 {
		return lines, err
	}
	// Nothing new in the open file: check for rotation or truncation.
	st, err := os.Stat(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ino, dev := fileID(st)
	if ino != t.ino || dev != t.dev {
		t.log("File was renamed or removed: %s. Start harvesting the new file from offset 0.", t.path)
		t.Close()
		t.offset = 0
		if err := t.open(); err != nil {
			return nil, err
		}
		return t.readFrom(t.f, max)
	}
	if st.Size() < t.offset {
		t.log("File was truncated. Begin reading file from offset 0. Path=%s", t.path)
		t.offset = 0
		return t.readFrom(t.f, max)
	}
	return nil, nil
}

func (t *Tailer) open() error {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	ino, dev := fileID(st)
	if ino != t.ino || dev != t.dev || st.Size() < t.offset {
		t.offset = 0
	}
	t.f, t.ino, t.dev = f, ino, dev
	return nil
}

func (t *Tailer) readFrom(f *os.File, max int) ([]line, error) {
	if f == nil {
		return nil, nil
	}
	buf := make([]byte, 256*1024)
	n, err := f.ReadAt(buf, t.offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var out []line
	data := buf[:n]
	pos := t.offset
	for len(out) < max {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		txt := bytes.TrimRight(data[:i], "\r")
		if len(bytes.TrimSpace(txt)) > 0 {
			out = append(out, line{text: append([]byte(nil), txt...), offset: pos, end: pos + int64(i) + 1})
		} else if len(out) == 0 {
			t.offset = pos + int64(i) + 1 // skip blank lines
		}
		pos += int64(i) + 1
		data = data[i+1:]
	}
	return out, nil
}

// Advance moves the position after the acknowledged lines.
func (t *Tailer) Advance(end int64) { t.offset = end }

// bulkItem is one item of a _bulk response.
type bulkItem struct {
	Status int             `json:"status"`
	Error  json.RawMessage `json:"error"`
}

type bulkResponse struct {
	Errors bool                  `json:"errors"`
	Items  []map[string]bulkItem `json:"items"`
	Error  json.RawMessage       `json:"error"`
	Extra  map[string]any        `json:"-"`
}

// event builds the Beat event for a line.
func (s *shipState) event(l line, now time.Time) map[string]any {
	return map[string]any{
		"@timestamp": now.UTC().Format("2006-01-02T15:04:05.000Z"),
		"message":    string(l.text),
		"fields":     map[string]any{"index_prefix": s.input.IndexPrefix},
		"input":      map[string]any{"type": "log"},
		"log":        map[string]any{"offset": l.offset, "file": map[string]any{"path": s.tailer.path}},
		"event":      map[string]any{"module": "siem", "dataset": "siem.alerts"},
		"fileset":    map[string]any{"name": "alerts"},
		"service":    map[string]any{"type": "siem"},
		"ecs":        map[string]any{"version": "1.6.0"},
		"host":       map[string]any{"name": s.hostname},
		"agent": map[string]any{"type": "filebeat", "version": BeatVersion, "hostname": s.hostname, "name": s.hostname,
			"id": s.beatID, "ephemeral_id": s.ephemeralID},
	}
}

type shipState struct {
	input       *AlertsInput
	tailer      *Tailer
	clients     []*esClient
	cur         int
	hostname    string
	beatID      string
	ephemeralID string
	log         *logger
	env         Env
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func runDaemon(ctx context.Context, o *Options, c *Config, log *logger, e Env) int {
	if e.Poll == 0 {
		e.Poll = time.Second
	}
	if e.BackoffInit == 0 {
		e.BackoffInit = time.Second
	}
	if e.BackoffMax == 0 {
		e.BackoffMax = 60 * time.Second
	}
	if e.Hostname == "" {
		e.Hostname, _ = os.Hostname()
	}
	out, err := c.ESOutput()
	if err != nil {
		fmt.Fprintf(e.Stderr, "Exiting: %v\n", err)
		return 1
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(o.ConfigFile)))
	in, err := c.Alerts(filepath.Join(root, "var", "siem", "logs", "alerts", "alerts.json"))
	if err != nil {
		fmt.Fprintf(e.Stderr, "Exiting: %v\n", err)
		return 1
	}
	log.Infof("", "instance/beat.go:645", "Home path: [%s] Config path: [%s] Data path: [%s] Logs path: [%s]", o.Paths.Home, o.Paths.Config, o.Paths.Data, o.Paths.Logs)
	log.Infof("", "instance/beat.go:297", "Setup Beat: filebeat; Version: %s", BeatVersion)
	s := &shipState{input: in, hostname: e.Hostname, beatID: randomID(), ephemeralID: randomID(), log: log, env: e}
	for _, h := range out.Hosts {
		cl, err := newESClient(out, h)
		if err != nil {
			fmt.Fprintf(e.Stderr, "Exiting: error initializing publisher: %v\n", err)
			return 1
		}
		s.clients = append(s.clients, cl)
	}
	if !in.Enabled {
		log.Infof("", "beater/filebeat.go:178", "No enabled filesets: nothing to ship")
		<-ctx.Done()
		return 0
	}
	regPath := RegistryPath(o.Paths.Data)
	st, err := loadRegistry(regPath)
	if err != nil {
		fmt.Fprintf(e.Stderr, "Exiting: Could not start registrar: %v\n", err)
		return 1
	}
	s.tailer = NewTailer(in.Paths[0], st, func(f string, a ...any) { log.Infof("input.harvester", "log/harvester.go:302", f, a...) })
	defer s.tailer.Close()
	log.Infof("input.harvester", "log/harvester.go:302", "Harvester started for file: %s", in.Paths[0])
	fc := faults.Checker{Dir: faultsDir(o, e.Getenv)}
	stalledLogged := false
	for ctx.Err() == nil {
		if fc.Active(faults.ShipperStalled) {
			if !stalledLogged {
				log.Infof("publisher", "pipeline/output.go:143", "Connection to %s paused", s.clients[s.cur])
				stalledLogged = true
			}
			sleepCtx(ctx, e.Poll)
			continue
		}
		stalledLogged = false
		lines, err := s.tailer.Next(out.BulkMaxSize)
		if err != nil {
			log.Errorf("input.harvester", "log/harvester.go:335", "Read line error: %v; File: %s", err, in.Paths[0])
			sleepCtx(ctx, e.Poll)
			continue
		}
		if len(lines) == 0 {
			sleepCtx(ctx, e.Poll)
			continue
		}
		if !s.publish(ctx, lines) {
			break
		}
		s.tailer.Advance(lines[len(lines)-1].end)
		if err := saveRegistry(regPath, s.tailer.State(e.Now())); err != nil {
			log.Errorf("registrar", "registrar/registrar.go:263", "Writing of registry returned error: %v. Continuing...", err)
		}
	}
	log.Infof("", "beater/filebeat.go:515", "Stopping filebeat")
	return 0
}

// publish sends the lines until every one is acknowledged (indexed, or dropped after a non-retryable
// error). It returns false when ctx ended first.
func (s *shipState) publish(ctx context.Context, lines []line) bool {
	pending := lines
	attempt := 0
	for len(pending) > 0 {
		if ctx.Err() != nil {
			return false
		}
		retry, err := s.bulk(ctx, pending)
		if err != nil {
			cl := s.clients[s.cur]
			s.log.Errorf("publisher_pipeline_output", "pipeline/output.go:154", "Failed to connect to backoff(%s): %v", cl, err)
			s.cur = (s.cur + 1) % len(s.clients)
			d := s.env.BackoffInit << min(attempt, 16)
			if d > s.env.BackoffMax || d <= 0 {
				d = s.env.BackoffMax
			}
			attempt++
			if !sleepCtx(ctx, d) {
				return false
			}
			continue
		}
		if len(retry) > 0 {
			attempt++
			d := s.env.BackoffInit << min(attempt, 16)
			if d > s.env.BackoffMax || d <= 0 {
				d = s.env.BackoffMax
			}
			if !sleepCtx(ctx, d) {
				return false
			}
		} else {
			attempt = 0
		}
		pending = retry
	}
	return true
}

// bulk indexes the lines; it returns the lines to retry (429) or a request-level error.
func (s *shipState) bulk(ctx context.Context, lines []line) ([]line, error) {
	now := s.env.Now()
	index := "filebeat-" + BeatVersion + "-" + now.UTC().Format("2006.01.02")
	var body bytes.Buffer
	events := make([][]byte, len(lines))
	for i, l := range lines {
		meta, _ := json.Marshal(map[string]any{"index": map[string]any{"_index": index, "pipeline": PipelineID}})
		ev, _ := json.Marshal(s.event(l, now))
		events[i] = ev
		body.Write(meta)
		body.WriteByte('\n')
		body.Write(ev)
		body.WriteByte('\n')
	}
	code, resp, err := s.clients[s.cur].do(ctx, http.MethodPost, "/_bulk", body.Bytes(), "application/x-ndjson")
	if err != nil {
		return nil, err
	}
	if code == 429 || code >= 500 {
		return nil, fmt.Errorf("%d %s: %s", code, http.StatusText(code), trimBody(resp))
	}
	if code >= 300 {
		// The whole request was rejected (e.g. 401/403): nothing can be indexed; Filebeat retries.
		return nil, fmt.Errorf("%d %s: %s", code, http.StatusText(code), trimBody(resp))
	}
	var br bulkResponse
	if err := json.Unmarshal(resp, &br); err != nil {
		return nil, fmt.Errorf("failed to parse bulk response: %w", err)
	}
	if !br.Errors {
		return nil, nil
	}
	var retry []line
	for i, it := range br.Items {
		if i >= len(lines) {
			break
		}
		for _, r := range it {
			switch {
			case r.Status < 300:
			case r.Status == 429:
				retry = append(retry, lines[i])
			default:
				s.log.Warnf("elasticsearch", "elasticsearch/client.go:408",
					"Cannot index event publisher.Event{Content:beat.Event{Timestamp:%s, Meta:{\"pipeline\":%q}, Fields:%s, Private:file.State{Source:%q, Offset:%d}}, Flags:0x1} (status=%d): %s",
					now.UTC().Format(time.RFC3339Nano), PipelineID, events[i], s.tailer.path, lines[i].end, r.Status, string(r.Error))
			}
		}
	}
	return retry, nil
}

func trimBody(b []byte) string {
	if len(b) > 512 {
		b = b[:512]
	}
	return string(bytes.TrimSpace(b))
}
