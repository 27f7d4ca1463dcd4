package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// fixedNow is the clock of every fake capture (a day the fixtures' alerts
// index 2025.01.14 is "today").
var fixedNow = time.Date(2025, 1, 14, 10, 20, 0, 0, time.UTC)

const (
	managerSecret = "Mgr-S3cret.Pass-7Qz"
	pipelineID    = "filebeat-7.10.2-siem-alerts-pipeline"
	noSystemd     = "/nonexistent/siemctl-test/systemd/private"
)

// fakeStack is an indexer, a manager API and a dashboard on httptest, and a
// config pointing at them (systemd unreachable, no package manager).
type fakeStack struct {
	Indexer   *indexertest.Server
	Manager   *managertest.Server
	Dashboard *httptest.Server
	Dir       string
	Config    string // path of siemctl.yaml
	StateDir  string
	// managerPW overrides the manager API password (default managerSecret).
	managerPW string
}

type fakeOpts struct {
	agents  int
	indices []byte // _cat/indices body (default: the shared fixture)
}

func indexerRoutes(indices []byte) map[string]indexertest.Route {
	routes := indexertest.Healthy()
	routes["GET /_cluster/settings"] = indexertest.Route{File: "settings-primaries.json"}
	routes["GET /_cluster/health"] = indexertest.Route{File: "health-yellow-single.json"}
	routes["GET /_cat/indices/*"] = indexertest.Route{File: "cat-indices.json", Body: indices}
	routes["GET /_cat/shards"] = indexertest.Route{File: "cat-shards.json"}
	routes["GET /_template"] = indexertest.Route{File: "templates-legacy.json"}
	routes["GET /_template/siem"] = indexertest.Route{File: "template-siem.json"}
	routes["GET /_ingest/pipeline/"+pipelineID] = indexertest.Route{File: "pipeline.json"}
	routes["POST /siem-alerts-4.x-*/_count"] = indexertest.Route{File: "count.json"}
	routes["POST /siem-alerts-4.x-*/_search"] = indexertest.Route{File: "newest.json"}
	routes["POST /_index_template/_simulate_index/siem-alerts-4.x-2025.01.14"] = indexertest.Route{File: "simulate-index.json"}
	return routes
}

func newFakeStack(t testing.TB, o fakeOpts) *fakeStack {
	t.Helper()
	ix := indexertest.NewServer(t, indexerRoutes(o.indices))
	mgr := managertest.New(t, managertest.Config{Username: "siem", Password: managerSecret, Version: "4.9.0",
		Now: func() time.Time { return fixedNow }, Agents: managertest.GenerateAgents(o.agents)})
	dash := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			http.Redirect(w, r, "/app/login", http.StatusFound)
		case "/api/status":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"version":{"number":"2.11.1"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(dash.Close)
	return writeFakeConfig(t, ix.URL, mgr.URL, dash.URL, &fakeStack{Indexer: ix, Manager: mgr, Dashboard: dash})
}

// writeFakeConfig writes the secrets and siemctl.yaml for the given URLs.
func writeFakeConfig(t testing.TB, ixURL, mgrURL, dashURL string, fs *fakeStack) *fakeStack {
	t.Helper()
	d := t.TempDir()
	fs.Dir, fs.StateDir = d, filepath.Join(d, "state")
	mpw := managerSecret
	if fs.managerPW != "" {
		mpw = fs.managerPW
	}
	ipw := clitest.WriteSecret(t, d, "indexer.pw", indexertest.Password)
	mpwFile := clitest.WriteSecret(t, d, "manager.pw", mpw)
	fs.Config = clitest.WriteConfig(t, d, "state_dir: "+fs.StateDir+"\n"+
		"systemd: {address: \"unix:path="+noSystemd+"\"}\n"+
		"indexer: {url: \""+ixURL+"\", username: admin, password_file: "+ipw+", ca_file: \"\"}\n"+
		"manager: {api_url: \""+mgrURL+"\", username: siem, password_file: "+mpwFile+", install_dir: "+d+"/siem}\n"+
		"dashboard: {url: \""+dashURL+"\"}\n"+
		"shipper: {binary: "+d+"/shipper}\n")
	return fs
}

// secrets are the passwords of the fake stack.
func (fs *fakeStack) secrets() []string { return []string{indexertest.Password, managerSecret} }

// goldenChecks are the health checks whose results do not depend on the
// host running the tests (no ports, certificates, binaries or systemd).
var goldenChecks = []string{"indexer.api", "indexer.health", "indexer.allocation", "indexer.shards", "manager.api", "agents", "alerts.flow", "dashboard"}

// testFactory is a Factory reading fs's config with a fixed clock; the
// stack has no package manager (the host's dpkg must not leak in).
func testFactory(t testing.TB, fs *fakeStack) (*cli.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	io, _, out, errOut := output.Test()
	f := cli.NewFactory(io, []string{})
	f.Global.ConfigPath = fs.Config
	f.Now = func() time.Time { return fixedNow }
	var st *factory.Clients
	factory.WireSet(f, func(ctx context.Context) (*factory.Clients, error) {
		if st != nil {
			return st, nil
		}
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		st = factory.NewClients(ctx, cfg, factory.ClientOptions{LookupEnv: func(string) (string, bool) { return "", false }})
		st.Packages = clientset.Missing[*packages.Manager](errors.New("no package manager in this test"))
		t.Cleanup(func() { st.Close() })
		return st, nil
	})
	return f, out, errOut
}

// goldenSource is the real Source of f with host-independent health checks.
func goldenSource(f *cli.Factory) func(src *snapshot.Live) snapshot.Source {
	return func(src *snapshot.Live) snapshot.Source {
		checks, err := health.Select(health.Catalogue(), health.Selection{Only: goldenChecks})
		if err != nil {
			panic(err)
		}
		st, err := cli.FromClients(f, health.Source.Health)(context.Background())
		if err != nil {
			panic(err)
		}
		src.Now = func() time.Time { return fixedNow }
		src.CheckHealth = factory.SnapshotHealth(st, checks, src.Now)
		return src
	}
}

// seqRand yields a distinct id suffix per capture.
type seqRand struct{ n byte }

func (r *seqRand) Read(p []byte) (int, error) {
	r.n++
	for i := range p {
		p[i] = r.n
	}
	return len(p), nil
}

func captureOpts(f *cli.Factory, label string, rnd *seqRand) *CaptureOptions {
	return &CaptureOptions{IO: f.IO, Live: liveFrom(f), Store: storeFunc(f), Now: f.Now, Output: "json", Timeout: 20 * time.Second,
		Label: label, Source: goldenSource(f), Rand: rnd,
		Change: cli.Change{IO: f.IO, Output: "json", Lock: func(ctx context.Context) (func(), error) { return f.HostLock(ctx, "siemctl snapshot capture") }}}
}

// normalize replaces what differs between runs (ports, temp dirs, host
// name) in a stored document.
func normalize(t testing.TB, b []byte, fs *fakeStack) []byte {
	t.Helper()
	host, _ := os.Hostname()
	r := []string{fs.Dir, "DIR"}
	for _, u := range []string{fs.Indexer.URL, fs.Manager.URL, fs.Dashboard.URL} {
		r = append(r, strings.TrimPrefix(u, "http://"), "127.0.0.1:PORT")
	}
	if host != "" {
		r = append(r, `"host": "`+host+`"`, `"host": "HOST"`, "host      "+host+"\n", "host      HOST\n")
	}
	return []byte(strings.NewReplacer(r...).Replace(string(b)))
}

func readDoc(t testing.TB, path string) (*snapshot.Document, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := snapshot.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

func decodeCapture(t testing.TB, out []byte) captureResult {
	t.Helper()
	var res captureResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("capture output is not JSON: %v\n%s", err, out)
	}
	return res
}

func mustConfig(t testing.TB, fs *fakeStack) *config.Config {
	t.Helper()
	f, _, _ := testFactory(t, fs)
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
