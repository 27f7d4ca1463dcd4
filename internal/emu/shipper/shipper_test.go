package shipper

import (
	"bytes"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/emu/tlsutil"
)

// fakeIndexer records requests; bulk items whose message contains "BADDOC" fail with 400 and
// "RETRY" with 429 once.
type fakeIndexer struct {
	mu        sync.Mutex
	docs      []map[string]any
	puts      map[string][]byte
	fail5xx   int
	retried   map[string]bool
	authFails int
}

func (f *fakeIndexer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "s3cret" {
		f.authFails++
		w.WriteHeader(401)
		_, _ = io.WriteString(w, `{"error":"unauthorized"}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == "GET" && r.URL.Path == "/":
		_, _ = io.WriteString(w, `{"name":"node-1","version":{"number":"7.10.2"},"tagline":"The OpenSearch Project: https://opensearch.org/"}`)
	case r.Method == "PUT":
		f.puts[r.URL.Path] = body
		_, _ = io.WriteString(w, `{"acknowledged":true}`)
	case r.Method == "POST" && r.URL.Path == "/_bulk":
		if f.fail5xx > 0 {
			f.fail5xx--
			w.WriteHeader(503)
			_, _ = io.WriteString(w, `{"error":"unavailable"}`)
			return
		}
		lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
		var items []string
		errs := false
		for i := 0; i+1 < len(lines); i += 2 {
			var doc map[string]any
			_ = json.Unmarshal(lines[i+1], &doc)
			msg, _ := doc["message"].(string)
			switch {
			case strings.Contains(msg, "BADDOC"):
				errs = true
				items = append(items, `{"index":{"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [data.srcip]"}}}`)
			case strings.Contains(msg, "RETRY") && !f.retried[msg]:
				f.retried[msg] = true
				errs = true
				items = append(items, `{"index":{"status":429,"error":{"type":"es_rejected_execution_exception"}}}`)
			default:
				f.docs = append(f.docs, doc)
				items = append(items, `{"index":{"status":201}}`)
			}
		}
		fmt.Fprintf(w, `{"took":1,"errors":%v,"items":[%s]}`, errs, strings.Join(items, ","))
	default:
		w.WriteHeader(404)
	}
}

func (f *fakeIndexer) messages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, d := range f.docs {
		out = append(out, d["message"].(string))
	}
	return out
}

type lab struct {
	root, cfg, alerts string
	idx               *fakeIndexer
	srv               *httptest.Server
	exe               string
}

func newLab(t *testing.T, tlsOn bool) *lab {
	t.Helper()
	root := t.TempDir()
	l := &lab{root: root, idx: &fakeIndexer{puts: map[string][]byte{}, retried: map[string]bool{}}}
	if tlsOn {
		l.srv = httptest.NewTLSServer(l.idx)
	} else {
		l.srv = httptest.NewServer(l.idx)
	}
	t.Cleanup(l.srv.Close)
	mk := func(rel string, data []byte, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	proto, ca := "http", ""
	if tlsOn {
		proto = "https"
		cert := l.srv.Certificate()
		var pemBuf bytes.Buffer
		pemBuf.WriteString("-----BEGIN CERTIFICATE-----\n")
		enc := base64Std(cert.Raw)
		for len(enc) > 64 {
			pemBuf.WriteString(enc[:64] + "\n")
			enc = enc[64:]
		}
		pemBuf.WriteString(enc + "\n-----END CERTIFICATE-----\n")
		ca = fmt.Sprintf("  ssl.certificate_authorities: [%q]\n", mk("etc/shipper/certs/root-ca.pem", pemBuf.Bytes(), 0o644))
	}
	host := strings.TrimPrefix(strings.TrimPrefix(l.srv.URL, "https://"), "http://")
	tpl := mk("etc/shipper/siem-template.json", []byte(`{"index_patterns":["siem-alerts-4.x-*"],"order":0}`), 0o644)
	l.alerts = filepath.Join(root, "var/siem/logs/alerts/alerts.json")
	_ = os.MkdirAll(filepath.Dir(l.alerts), 0o755)
	l.cfg = mk("etc/shipper/shipper.yml", fmt.Appendf(nil, `output.elasticsearch:
  hosts: ["%s"]
  protocol: %s
  username: admin
  password: ${password}
%ssetup.template.json.enabled: true
setup.template.json.path: '%s'
setup.template.json.name: 'siem'
filebeat.modules:
  - module: siem
    alerts:
      enabled: true
      var.paths: ["%s"]
`, host, proto, ca, tpl, l.alerts), 0o600)
	mk("var/lib/shipper/shipper.keystore", []byte(`{"password":"s3cret"}`), 0o600)
	l.exe = filepath.Join(root, "usr/bin/shipper")
	return l
}

func (l *lab) run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	rc := Main(ctx, args, Env{Exe: l.exe, Stdout: &out, Stderr: &errb, Poll: 5 * time.Millisecond, BackoffInit: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Hostname: "siem01", Getenv: func(string) string { return "" }})
	return rc, out.String(), errb.String()
}

func TestTestConfig(t *testing.T) {
	l := newLab(t, true)
	if rc, out, errb := l.run(t, context.Background(), "test", "config"); rc != 0 || out != "Config OK\n" {
		t.Fatalf("test config: %d %q %q", rc, out, errb)
	}
	tests := []struct{ name, want string }{
		{"missing keystore var", "Exiting: error initializing publisher: missing field accessing 'output.elasticsearch.password'"},
		{"world writable", "can only be writable by the owner"},
		{"yaml error", "Exiting: error loading config file: yaml:"},
		{"no output", "No outputs are defined"},
	}
	for _, tc := range tests {
		l := newLab(t, true)
		switch tc.name {
		case "missing keystore var":
			_ = os.Remove(filepath.Join(l.root, "var/lib/shipper/shipper.keystore"))
		case "world writable":
			_ = os.Chmod(l.cfg, 0o666)
		case "yaml error":
			_ = os.WriteFile(l.cfg, []byte("output.elasticsearch: [\n"), 0o600)
		case "no output":
			_ = os.WriteFile(l.cfg, []byte("logging.level: info\n"), 0o600)
		}
		rc, out, errb := l.run(t, context.Background(), "test", "config")
		if rc != 1 || out != "" || !strings.HasPrefix(errb, "Exiting: ") || !strings.Contains(errb, strings.TrimPrefix(tc.want, "Exiting: ")) {
			t.Errorf("%s: %d %q %q", tc.name, rc, out, errb)
		}
	}
}

func TestTestOutput(t *testing.T) {
	l := newLab(t, true)
	rc, out, _ := l.run(t, context.Background(), "test", "output")
	re := regexp.MustCompile(`^elasticsearch: https://127\.0\.0\.1:\d+\.\.\.
  parse url\.\.\. OK
  connection\.\.\.
    parse host\.\.\. OK
    dns lookup\.\.\. OK
    addresses: 127\.0\.0\.1
    dial up\.\.\. OK
  TLS\.\.\.
    security: server's certificate chain verification is enabled
    handshake\.\.\. OK
    TLS version: TLSv1\.3
    dial up\.\.\. OK
  talk to server\.\.\. OK
  version: 7\.10\.2
$`)
	if rc != 0 || !re.MatchString(out) {
		t.Fatalf("test output: %d\n%s", rc, out)
	}
	// Connection refused.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	b, _ := os.ReadFile(l.cfg)
	host := strings.TrimPrefix(l.srv.URL, "https://")
	_ = os.WriteFile(l.cfg, bytes.Replace(b, []byte(host), []byte(addr), 1), 0o600)
	rc, out, _ = l.run(t, context.Background(), "test", "output")
	if rc != 1 || !strings.Contains(out, "    dial up... ERROR dial tcp "+addr+": connect: connection refused\n") {
		t.Fatalf("refused: %d\n%s", rc, out)
	}
	// Unknown CA.
	l2 := newLab(t, true)
	_ = os.WriteFile(filepath.Join(l2.root, "etc/shipper/certs/root-ca.pem"), l.caPEM(t), 0o644)
	rc, out, _ = l2.run(t, context.Background(), "test", "output")
	if rc != 1 || !strings.Contains(out, "    handshake... ERROR x509: certificate signed by unknown authority") {
		t.Fatalf("bad CA: %d\n%s", rc, out)
	}
	// Wrong password.
	l3 := newLab(t, true)
	_ = os.WriteFile(filepath.Join(l3.root, "var/lib/shipper/shipper.keystore"), []byte(`{"password":"nope"}`), 0o600)
	rc, out, _ = l3.run(t, context.Background(), "test", "output")
	if rc != 1 || !strings.Contains(out, "  talk to server... ERROR 401 Unauthorized") || strings.Contains(out, "nope") {
		t.Fatalf("401: %d\n%s", rc, out)
	}
}

func (l *lab) caPEM(t *testing.T) []byte {
	ca, err := tlsutil.NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM
}

func TestSetup(t *testing.T) {
	l := newLab(t, true)
	rc, out, errb := l.run(t, context.Background(), "setup", "--pipelines")
	if rc != 0 || out != "Loaded Ingest pipelines\n" {
		t.Fatalf("pipelines: %d %q %q", rc, out, errb)
	}
	if !bytes.Equal(l.idx.puts["/_ingest/pipeline/"+PipelineID], Pipeline()) {
		t.Fatal("pipeline body not uploaded")
	}
	rc, out, errb = l.run(t, context.Background(), "setup", "--index-management", "-E", "output.logstash.enabled=false")
	if rc != 0 || out != "ILM policy and write alias loading not enabled.\n\nIndex setup finished.\n" {
		t.Fatalf("index-management: %d %q %q", rc, out, errb)
	}
	if string(l.idx.puts["/_template/siem"]) != `{"index_patterns":["siem-alerts-4.x-*"],"order":0}` {
		t.Fatalf("template: %q", l.idx.puts["/_template/siem"])
	}
	rc, _, errb = l.run(t, context.Background(), "setup", "--index-management", "-E", "output.elasticsearch.enabled=false")
	if rc != 1 || errb != "Exiting: Index management requested but the Elasticsearch output is not configured/enabled\n" {
		t.Fatalf("es disabled: %d %q", rc, errb)
	}
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		_, _ = f.WriteString(l + "\n")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timeout waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func alert(n int, extra string) string {
	return fmt.Sprintf(`{"timestamp":"2025-03-02T09:31:07.412+0000","rule":{"level":5,"id":"5710"},"id":"1740907867.%d","full_log":"line %d %s","location":"127.0.0.1"}`, n, n, extra)
}

func TestDaemonShipsWithRegistry(t *testing.T) {
	l := newLab(t, false)
	l.idx.fail5xx = 2 // the first two bulk requests fail: retried with backoff
	appendLines(t, l.alerts, alert(1, ""), alert(2, "BADDOC"), alert(3, "RETRY"))
	ctx, cancel := context.WithCancel(context.Background())
	type res struct {
		rc       int
		out, err string
	}
	done := make(chan res, 1)
	go func() { rc, o, e := l.run(t, ctx, "-e"); done <- res{rc, o, e} }()
	waitFor(t, "first batch", func() bool { return len(l.idx.messages()) == 2 })
	// A partial line is not shipped until complete.
	f, _ := os.OpenFile(l.alerts, os.O_APPEND|os.O_WRONLY, 0o644)
	_, _ = f.WriteString(alert(4, "")[:20])
	f.Close()
	time.Sleep(30 * time.Millisecond)
	if n := len(l.idx.messages()); n != 2 {
		t.Fatalf("partial line shipped: %d", n)
	}
	appendLines(t, l.alerts, alert(4, "")[20:])
	waitFor(t, "line 4", func() bool { return len(l.idx.messages()) == 3 })
	// Stop only once the acknowledged batch is in the registry: a stop
	// between the bulk answer and the registry write re-sends that batch
	// after a restart (at least once, like Filebeat), which is not what this
	// test is about.
	fi0, _ := os.Stat(l.alerts)
	waitFor(t, "registry at end of file", func() bool {
		st, err := loadRegistry(RegistryPath(filepath.Join(l.root, "var/lib/shipper")))
		return err == nil && st != nil && st.Offset == fi0.Size()
	})
	cancel()
	r := <-done
	if r.rc != 0 {
		t.Fatalf("daemon rc %d: %s", r.rc, r.err)
	}
	if !strings.Contains(r.err, "WARN\t[elasticsearch]\telasticsearch/client.go:408\tCannot index event publisher.Event{") ||
		!strings.Contains(r.err, "(status=400): {\"type\":\"mapper_parsing_exception\"") {
		t.Fatalf("missing Cannot index warning:\n%s", r.err)
	}
	if !strings.Contains(r.err, "Failed to connect to backoff(elasticsearch(") || strings.Contains(r.err, "s3cret") {
		t.Fatalf("backoff log / secret leak:\n%s", r.err)
	}
	st, err := loadRegistry(RegistryPath(filepath.Join(l.root, "var/lib/shipper")))
	if err != nil || st == nil {
		t.Fatalf("registry: %v", err)
	}
	fi, _ := os.Stat(l.alerts)
	if st.Offset != fi.Size() {
		t.Fatalf("registry offset %d, file size %d", st.Offset, fi.Size())
	}
	doc := l.idx.docs[0]
	if doc["fields"].(map[string]any)["index_prefix"] != "siem-alerts-4.x-" || doc["log"].(map[string]any)["offset"] != float64(0) {
		t.Fatalf("event shape %v", doc)
	}

	// Restart: nothing is re-sent; new lines continue from the registry offset.
	appendLines(t, l.alerts, alert(5, ""))
	ctx, cancel = context.WithCancel(context.Background())
	go func() { rc, o, e := l.run(t, ctx, "-e"); done <- res{rc, o, e} }()
	waitFor(t, "line 5", func() bool { return len(l.idx.messages()) == 4 })
	// Truncation: the file is emptied and rewritten; reading restarts at 0.
	if err := os.Truncate(l.alerts, 0); err != nil {
		t.Fatal(err)
	}
	appendLines(t, l.alerts, alert(6, ""))
	waitFor(t, "line 6 after truncation", func() bool { return len(l.idx.messages()) == 5 })
	// Rotation: rename and create a new file.
	_ = os.Rename(l.alerts, l.alerts+".1")
	appendLines(t, l.alerts, alert(7, ""))
	waitFor(t, "line 7 after rotation", func() bool { return len(l.idx.messages()) == 6 })
	cancel()
	<-done
	msgs := l.idx.messages()
	for i, want := range []string{"line 1 ", "line 3 RETRY", "line 4 ", "line 5 ", "line 6 ", "line 7 "} {
		if !strings.Contains(msgs[i], want) {
			t.Fatalf("doc %d = %s, want %q (all: %v)", i, msgs[i], want, msgs)
		}
	}
}

func TestDaemonStalledFault(t *testing.T) {
	l := newLab(t, false)
	fdir := filepath.Join(l.root, "var/lib/siem-lab-faults")
	_ = os.MkdirAll(fdir, 0o755)
	_ = os.WriteFile(filepath.Join(fdir, "shipper-stalled"), nil, 0o644)
	appendLines(t, l.alerts, alert(1, ""))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { rc, _, _ := l.run(t, ctx, "-e"); done <- rc }()
	time.Sleep(50 * time.Millisecond)
	if n := len(l.idx.messages()); n != 0 {
		t.Fatalf("stalled shipper shipped %d", n)
	}
	_ = os.Remove(filepath.Join(fdir, "shipper-stalled"))
	waitFor(t, "shipping after the fault clears", func() bool { return len(l.idx.messages()) == 1 })
	cancel()
	if rc := <-done; rc != 0 {
		t.Fatalf("rc %d", rc)
	}
}
