package snapshot

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/snapshot"
	emumgr "github.com/siemctl/siemctl/lab/emu/manager"
)

// largeIndexer makes the fake indexer answer for n daily alerts indices of
// 3 primary shards each (plus one unassigned replica per index).
func largeIndexer(fs *fakeStack, n int) {
	var ix, sh bytes.Buffer
	ix.WriteString("[")
	sh.WriteString("[")
	for i := range n {
		name := "siem-alerts-4.x-" + fixedNow.AddDate(0, 0, -i).Format("2006.01.02")
		if i > 0 {
			ix.WriteString(",")
			sh.WriteString(",")
		}
		fmt.Fprintf(&ix, `{"health":"yellow","status":"open","index":%q,"uuid":"u%07d","pri":"3","rep":"1","docs.count":"%d","store.size":"%d","creation.date":"%d"}`,
			name, i, 10000+i, 5_000_000+i, fixedNow.AddDate(0, 0, -i).UnixMilli())
		for s := range 3 {
			fmt.Fprintf(&sh, `{"index":%q,"shard":"%d","prirep":"p","state":"STARTED","unassigned.reason":null,"node":"node-1"},`, name, s)
		}
		fmt.Fprintf(&sh, `{"index":%q,"shard":"0","prirep":"r","state":"UNASSIGNED","unassigned.reason":"INDEX_CREATED","node":null}`, name)
	}
	ix.WriteString("]")
	sh.WriteString("]")
	fs.Indexer.Set("GET /_cat/indices/*", indexertest.Route{Body: ix.Bytes()})
	fs.Indexer.Set("GET /_cat/shards", indexertest.Route{Body: sh.Bytes()})
	fs.Indexer.Set("GET /_cluster/health", indexertest.Route{Body: []byte(fmt.Sprintf(
		`{"cluster_name":"siem-cluster","status":"yellow","number_of_nodes":1,"number_of_data_nodes":1,"active_primary_shards":%d,"active_shards":%d,"unassigned_shards":%d}`, 3*n, 3*n, n))})
}

// BenchmarkCaptureLargeStack captures an emulated stack with 5,000 indices
// (20,000 shard rows) and 100,000 agents through the real Source, every
// non-deep health check included, and saves the document.
func BenchmarkCaptureLargeStack(b *testing.B) {
	fs := newFakeStack(b, fakeOpts{agents: 100000})
	largeIndexer(fs, 5000)
	rnd := &seqRand{}
	var size int
	for b.Loop() {
		f, out, errOut := testFactory(b, fs)
		opts := &CaptureOptions{IO: f.IO, Live: liveFrom(f), Store: storeFunc(f), Now: time.Now, Output: "json", Timeout: 2 * time.Minute, Rand: rnd,
			Source: func(l *snapshot.Live) snapshot.Source { return l }}
		if err := runCapture(context.Background(), opts); err != nil {
			b.Fatalf("%v\n%s", err, errOut)
		}
		res := decodeCapture(b, out.Bytes())
		d, raw := readDoc(b, res.Path)
		if d.Manager.Agents.Total != 100000 || d.Summary.Indices != 5000 || d.Indexer.ShardsByState["STARTED"] != 15000 {
			b.Fatalf("incomplete capture: agents %d indices %d shards %v errors %v", d.Manager.Agents.Total, d.Summary.Indices, d.Indexer.ShardsByState, d.Errors)
		}
		size = len(raw)
	}
	b.ReportMetric(float64(size), "doc-bytes")
}

// emulatedManager starts the lab's manager API emulator in-process with n
// agents, its default users (siem/siem) and its default rate limit (300
// requests per minute), and returns its URL.
func emulatedManager(b *testing.B, n int) string {
	b.Helper()
	h := emumgr.Home{Dir: filepath.Join(b.TempDir(), "var", "siem")}
	for rel, data := range map[string][]byte{"VERSION": []byte("v4.9.0\n"), "etc/ossec.conf": emumgr.DefaultOssecConf(1514, 1515, 5514)} {
		if err := os.MkdirAll(filepath.Dir(h.Path(rel)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(h.Path(rel), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := emumgr.Seed(h, n, false, fixedNow); err != nil {
		b.Fatal(err)
	}
	if err := emumgr.NewUserStore(h).EnsureDefaults(); err != nil {
		b.Fatal(err)
	}
	// The daemons the API needs "run" as this process.
	if err := os.MkdirAll(h.RunDir(), 0o750); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{"wazuh-modulesd", "wazuh-monitord", "wazuh-logcollector", "wazuh-remoted", "wazuh-syscheckd",
		"wazuh-analysisd", "wazuh-execd", "wazuh-db", "wazuh-authd", "wazuh-apid"} {
		pid := strconv.Itoa(os.Getpid())
		if err := os.WriteFile(filepath.Join(h.RunDir(), d+"-"+pid+".pid"), []byte(pid+"\n"), 0o640); err != nil {
			b.Fatal(err)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	conf, err := emumgr.LoadAPIConfig("")
	if err != nil {
		b.Fatal(err)
	}
	api := emumgr.NewAPIServer(emumgr.APIOptions{Home: h, Config: conf, Hostname: "siem01", SignKey: key})
	srv := httptest.NewServer(api)
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkCaptureEmulatedStack: 5,000 indices on the fake indexer and the
// lab's manager emulator with 100,000 agents (run with -benchtime 3x: each
// capture costs ~30 manager requests of the 300 allowed per minute).
func BenchmarkCaptureEmulatedStack(b *testing.B) {
	base := newFakeStack(b, fakeOpts{})
	largeIndexer(base, 5000)
	fs := writeFakeConfig(b, base.Indexer.URL, emulatedManager(b, 100000), base.Dashboard.URL, &fakeStack{managerPW: "siem"})
	fs.Indexer, fs.Dashboard = base.Indexer, base.Dashboard
	rnd := &seqRand{}
	for b.Loop() {
		f, out, errOut := testFactory(b, fs)
		opts := &CaptureOptions{IO: f.IO, Live: liveFrom(f), Store: storeFunc(f), Now: time.Now, Output: "json", Timeout: 2 * time.Minute, Rand: rnd,
			Source: func(l *snapshot.Live) snapshot.Source { return l }}
		start := time.Now()
		if err := runCapture(context.Background(), opts); err != nil {
			b.Fatalf("%v\n%s", err, errOut)
		}
		took := time.Since(start)
		res := decodeCapture(b, out.Bytes())
		d, _ := readDoc(b, res.Path)
		if d.Manager.Agents.Total != 100000 || d.Summary.Indices != 5000 || len(d.Manager.Errors) != 0 {
			b.Fatalf("incomplete capture: agents %d indices %d manager errors %v part errors %v", d.Manager.Agents.Total, d.Summary.Indices, d.Manager.Errors, d.Errors)
		}
		b.Logf("capture %s: agents by status %v", took.Round(time.Millisecond), d.Manager.Agents.ByStatus)
	}
}
