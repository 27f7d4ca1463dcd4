package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	indexercmd "github.com/siemctl/siemctl/internal/cmd/indexer"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/units"
)

// repoNode is a stock node: no path.repo until it is restarted with one in
// its opensearch.yml; the repository exists once registered.
type repoNode struct {
	mu       sync.Mutex
	yml      string
	pathRepo []string
	repoLoc  string
	repoRate string // max_snapshot_bytes_per_sec as registered
	ops      []string
}

func (n *repoNode) Stop(_ context.Context, unit string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ops = append(n.ops, "stop "+unit)
	return nil
}

func (n *repoNode) StartAndWait(_ context.Context, unit string, _ time.Duration) (units.UnitStatus, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ops = append(n.ops, "start "+unit)
	// the node reads path.repo at start
	b, _ := os.ReadFile(n.yml)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "path.repo: "); ok {
			n.pathRepo = nil
			for _, p := range strings.Split(strings.Trim(v, "[]"), ",") {
				n.pathRepo = append(n.pathRepo, strings.Trim(strings.TrimSpace(p), `"`))
			}
		}
	}
	return units.UnitStatus{Name: unit, ActiveState: units.Active}, nil
}

func (n *repoNode) Processes(context.Context, string) ([]int, error) { return nil, nil }
func (n *repoNode) ResetFailed(context.Context, string) error        { return nil }

// The node stops at once; restart and enable are not used by prepare.
func (n *repoNode) Status(_ context.Context, us ...string) ([]units.UnitStatus, error) {
	out := make([]units.UnitStatus, len(us))
	for i, u := range us {
		out[i] = units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: units.Inactive, SubState: "dead"}
	}
	return out, nil
}
func (n *repoNode) Wait(ctx context.Context, u string, _ []string, _ time.Duration) (units.UnitStatus, error) {
	sts, err := n.Status(ctx, u)
	return sts[0], err
}
func (n *repoNode) RestartAndWait(context.Context, string, time.Duration) (units.UnitStatus, error) {
	return units.UnitStatus{}, errors.New("not used")
}
func (n *repoNode) Enable(context.Context, ...string) ([]units.UnitFileChange, error) {
	return nil, errors.New("not used")
}

func (n *repoNode) routes(srv *indexertest.Server) {
	h := func(f http.HandlerFunc) indexertest.Route { return indexertest.Locked(&n.mu, f) }
	srv.Set("GET /_nodes/settings", h(func(w http.ResponseWriter, _ *http.Request) {
		if len(n.pathRepo) == 0 {
			fmt.Fprint(w, `{}`)
			return
		}
		fmt.Fprintf(w, `{"nodes":{"lc5U6I7-QZOY48WwbNxh1w":{"settings":{"path":{"repo":["%s"]}}}}}`, strings.Join(n.pathRepo, `","`))
	}))
	srv.Set("GET /_snapshot/siemctl", h(func(w http.ResponseWriter, _ *http.Request) {
		if n.repoLoc == "" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"root_cause":[{"type":"repository_missing_exception","reason":"[siemctl] missing"}],"type":"repository_missing_exception","reason":"[siemctl] missing"},"status":404}`)
			return
		}
		rate := ""
		if n.repoRate != "" {
			rate = `,"max_snapshot_bytes_per_sec":"` + n.repoRate + `"`
		}
		fmt.Fprintf(w, `{"siemctl":{"type":"fs","settings":{"location":"%s"%s}}}`, n.repoLoc, rate)
	}))
	srv.Set("PUT /_snapshot/siemctl", h(func(w http.ResponseWriter, _ *http.Request) {
		last, _ := srv.Last("PUT /_snapshot/siemctl")
		var body struct {
			Settings struct {
				Location string `json:"location"`
				Rate     string `json:"max_snapshot_bytes_per_sec"`
			} `json:"settings"`
		}
		_ = json.Unmarshal(last.Body, &body)
		loc := body.Settings.Location
		ok := false
		for _, p := range n.pathRepo {
			ok = ok || strings.HasPrefix(loc, p)
		}
		if !ok {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"root_cause":[{"type":"repository_exception","reason":"[siemctl] location [%[1]s] doesn't match any of the locations specified by path.repo because this setting is empty"}],"type":"repository_exception","reason":"[siemctl] failed to create repository"},"status":500}`, loc)
			return
		}
		n.repoLoc, n.repoRate = loc, body.Settings.Rate
		fmt.Fprint(w, `{"acknowledged":true}`)
	}))
	srv.Set("POST /_snapshot/siemctl/_verify", indexertest.Route{Body: []byte(`{"nodes":{"lc5U6I7-QZOY48WwbNxh1w":{"name":"node-1"}}}`)})
	srv.Set("GET /_snapshot/siemctl/_all", indexertest.Route{Body: []byte(`{"snapshots":[]}`)})
}

type repoFixture struct {
	opts *indexercmd.RepositoryOptions
	node *repoNode
	srv  *indexertest.Server
	cfg  *config.Config
	yml  string
	out  *strings.Builder
	io   *output.IOStreams
}

const stockYML = "cluster.name: siem\npath.data: /var/lib/siem-indexer\n"

func newRepoFixture(t *testing.T) *repoFixture {
	t.Helper()
	root := t.TempDir()
	cfg := clitest.LoadConfig(t, root, fmt.Sprintf("state_dir: %[1]s/state\nbackup_dir: %[1]s/backups\nindexer:\n  config_dir: %[1]s/etc\n  data_dir: %[1]s/var/lib/siem-indexer\n", root))
	for _, d := range []string{cfg.Indexer.ConfigDir, cfg.Indexer.DataDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	yml := filepath.Join(cfg.Indexer.ConfigDir, "opensearch.yml")
	clitest.WriteFile(t, yml, stockYML, 0o640)
	srv := indexertest.NewServer(t, indexertest.Healthy())
	node := &repoNode{yml: yml}
	node.routes(srv)
	c := srv.Client(t)
	ios, _, out, errOut := output.Test()
	_ = out
	f := &repoFixture{node: node, srv: srv, cfg: cfg, yml: yml, io: ios}
	f.opts = &indexercmd.RepositoryOptions{IO: ios, Config: func() (*config.Config, error) { return cfg, nil },
		API:   func(context.Context) (indexercmd.RepositoryAPI, error) { return c, nil },
		Units: func(context.Context) (indexercmd.RepositoryUnits, error) { return node, nil },
		Poll:  time.Millisecond, Timeout: 10 * time.Second,
		Change: cli.Change{IO: ios, Lock: func(ctx context.Context) (func(), error) {
			l, err := lock.Acquire(ctx, lock.HostPath(cfg.StateDir), lock.Holder{Command: "siemctl indexer repository prepare"}, 0)
			if err != nil {
				return nil, err
			}
			return func() { _ = l.Release() }, nil
		}}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
		}
	})
	return f
}

func (f *repoFixture) puts() int {
	n := 0
	for _, r := range f.srv.Requests() {
		if r.Method == http.MethodPut {
			n++
		}
	}
	return n
}

func TestRepositoryPrepareOnAStockNode(t *testing.T) {
	f := newRepoFixture(t)
	f.opts.Change.Yes = true
	if err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts); err != nil {
		t.Fatal(err)
	}
	repoDir := f.cfg.Indexer.DataDir + "-snapshots"
	loc := filepath.Join(repoDir, "siemctl")
	b, _ := os.ReadFile(f.yml)
	if !strings.HasPrefix(string(b), stockYML) || !strings.Contains(string(b), "\npath.repo: [\""+repoDir+"\"]\n") {
		t.Fatalf("opensearch.yml:\n%s", b)
	}
	if fi, _ := os.Stat(f.yml); fi.Mode().Perm() != 0o640 {
		t.Errorf("opensearch.yml mode %v", fi.Mode())
	}
	backups, _ := filepath.Glob(filepath.Join(f.cfg.BackupDir, "repository-*", "opensearch.yml"))
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	if old, _ := os.ReadFile(backups[0]); string(old) != stockYML {
		t.Errorf("backup holds %q", old)
	}
	if fi, err := os.Stat(loc); err != nil || !fi.IsDir() {
		t.Fatalf("location: %v", err)
	}
	if strings.Join(f.node.ops, ",") != "stop siem-indexer.service,start siem-indexer.service" {
		t.Errorf("units %v", f.node.ops)
	}
	if f.node.repoLoc != loc || f.node.repoRate != "0b" {
		t.Errorf("registered at %q, snapshots at most %q/s; want %q, unthrottled (0b)", f.node.repoLoc, f.node.repoRate, loc)
	}
	if _, ok := f.srv.Last("POST /_snapshot/siemctl/_verify"); !ok {
		t.Error("not verified")
	}
	// The lock was released.
	l, err := lock.Acquire(context.Background(), lock.HostPath(f.cfg.StateDir), lock.Holder{}, 0)
	if err != nil {
		t.Fatalf("lock left held: %v", err)
	}
	l.Release()
	// Again: nothing to do, nothing restarted.
	f.node.ops = nil
	puts := f.puts()
	if err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts); err != nil || len(f.node.ops) != 0 || f.puts() != puts {
		t.Fatalf("second prepare: %v, units %v, %d PUTs", err, f.node.ops, f.puts()-puts)
	}
	// A registration at the node's default rate (40 MB/s: an earlier siemctl's, or the site's own
	// without a rate) is registered again, unthrottled; a rate the site set is kept.
	f.node.repoRate = ""
	if err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts); err != nil || f.node.repoRate != "0b" || len(f.node.ops) != 0 {
		t.Fatalf("prepare of a repository at the default rate: %v, rate %q, units %v", err, f.node.repoRate, f.node.ops)
	}
	f.node.repoRate = "200mb"
	puts = f.puts()
	if err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts); err != nil || f.node.repoRate != "200mb" || f.puts() != puts {
		t.Fatalf("prepare of a repository with the site's rate: %v, rate %q", err, f.node.repoRate)
	}
}

func TestRepositoryPrepareChangesNothingUnlessAllowed(t *testing.T) {
	t.Run("dry-run", func(t *testing.T) {
		f := newRepoFixture(t)
		f.opts.Change.DryRun = true
		if err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts); err != nil {
			t.Fatal(err)
		}
		// The plan is printed as the calls it would make, one per line.
		if out := f.io.Out.(interface{ String() string }).String(); !strings.Contains(out, "path.repo") || !strings.Contains(out, "POST /_snapshot/siemctl/_verify") {
			t.Errorf("dry run printed:\n%s", out)
		}
		if b, _ := os.ReadFile(f.yml); string(b) != stockYML || len(f.node.ops) != 0 || f.puts() != 0 {
			t.Fatalf("dry run changed something: %q %v %d", b, f.node.ops, f.puts())
		}
		if _, err := os.Stat(f.cfg.Indexer.DataDir + "-snapshots"); err == nil {
			t.Error("dry run created the directory")
		}
	})
	t.Run("no terminal, no --yes", func(t *testing.T) {
		f := newRepoFixture(t)
		if err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts); !errors.Is(err, output.ErrNoTTY) {
			t.Fatalf("err %v", err)
		}
		if b, _ := os.ReadFile(f.yml); string(b) != stockYML || len(f.node.ops) != 0 {
			t.Fatal("changed without confirmation")
		}
	})
	t.Run("symlinked opensearch.yml", func(t *testing.T) {
		f := newRepoFixture(t)
		f.opts.Change.Yes = true
		real := filepath.Join(t.TempDir(), "real.yml")
		if err := os.Rename(f.yml, real); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, f.yml); err != nil {
			t.Fatal(err)
		}
		err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts)
		if err == nil || !strings.Contains(err.Error(), "not written through") {
			t.Fatalf("err %v", err)
		}
		if b, _ := os.ReadFile(real); string(b) != stockYML || len(f.node.ops) != 0 || f.puts() != 0 {
			t.Fatal("wrote through the symlink or went on")
		}
	})
	t.Run("host lock held", func(t *testing.T) {
		f := newRepoFixture(t)
		f.opts.Change.Yes = true
		clitest.HoldLock(t, f.cfg.StateDir)
		if err := indexercmd.RunRepositoryPrepare(context.Background(), f.opts); !errors.Is(err, lock.ErrHeld) {
			t.Fatalf("err %v", err)
		}
		if b, _ := os.ReadFile(f.yml); string(b) != stockYML || len(f.node.ops) != 0 {
			t.Fatal("changed while locked")
		}
	})
}

func TestRepositoryShow(t *testing.T) {
	f := newRepoFixture(t)
	if err := indexercmd.RunRepositoryShow(context.Background(), f.opts); err != nil {
		t.Fatal(err)
	}
	out := f.io.Out.(interface{ String() string }).String()
	for _, want := range []string{"path.repo", "(none: snapshot mode needs it; siemctl indexer repository prepare)", "repository siemctl", "not registered", "data_safety", "auto"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	f.node.pathRepo, f.node.repoLoc = []string{"/var/lib/siem-snaprepo"}, "/var/lib/siem-snaprepo/siemctl"
	f.opts.Output = "json"
	if err := indexercmd.RunRepositoryShow(context.Background(), f.opts); err != nil {
		t.Fatal(err)
	}
	if s := f.io.Out.(interface{ String() string }).String(); !strings.Contains(s, `"verified": true`) || !strings.Contains(s, `"location": "/var/lib/siem-snaprepo/siemctl"`) {
		t.Errorf("json:\n%s", s)
	}
	// The table says how fast its snapshots may copy.
	for rate, want := range map[string]string{"": "snapshots at the node's default 40 MB/s (prepare lifts it)", "0b": "snapshots unthrottled", "0": "snapshots unthrottled", "0gb": "snapshots unthrottled", "200mb": "snapshots at most 200mb/s", "10b": "snapshots at most 10b/s"} {
		f.node.repoRate = rate
		f.opts.Output = ""
		f.io.Out.(interface{ Reset() }).Reset()
		if err := indexercmd.RunRepositoryShow(context.Background(), f.opts); err != nil {
			t.Fatal(err)
		}
		if s := f.io.Out.(interface{ String() string }).String(); !strings.Contains(s, "fs at /var/lib/siem-snaprepo/siemctl, "+want) {
			t.Errorf("rate %q: show lacks %q:\n%s", rate, want, s)
		}
	}
}
