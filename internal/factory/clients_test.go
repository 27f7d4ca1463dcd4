package factory_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/process"
)

// refusingServer is a TLS server that refuses every login, counting in
// tries those whose user counts says so; dir holds its CA (ca) and a
// password file (pw).
func refusingServer(t *testing.T, tries *atomic.Int32, counts func(user string) bool) (srv *httptest.Server, dir, ca, pw string) {
	t.Helper()
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, _, ok := r.BasicAuth(); ok && counts(u) {
			tries.Add(1)
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	dir = t.TempDir()
	ca = filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	return srv, dir, ca, clitest.WriteSecret(t, dir, "pw", "Generated-1")
}

// TestDefaultCredentialTriesAreCached: the remote tries cost failed logins
// (the manager blocks an IP after 50), so a second run within the hour must
// not repeat them; the configured password is still compared every run.
func TestDefaultCredentialTriesAreCached(t *testing.T) {
	var tries atomic.Int32
	srv, dir, ca, pw := refusingServer(t, &tries, func(string) bool { return true })
	cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\n"+
		"indexer: {url: \""+srv.URL+"\", ca_file: "+ca+", password_file: "+pw+"}\n"+
		"manager: {api_url: \""+srv.URL+"\", ca_file: "+ca+", password_file: "+pw+"}\n")
	s := factory.NewClients(context.Background(), cfg, factory.ClientOptions{})
	found, err := s.Health().DefaultCredentials(context.Background(), false)
	if err != nil || len(found.Found) != 0 {
		t.Fatalf("first run: %v %v", found, err)
	}
	first := tries.Load()
	if first == 0 {
		t.Fatal("no default credential was tried")
	}
	if _, err := s.Health().DefaultCredentials(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if tries.Load() != first {
		t.Errorf("second run tried again: %d logins, want %d", tries.Load(), first)
	}
	// A configured default password is reported without any login.
	os.WriteFile(pw, []byte("siem\n"), 0o600)
	found, _ = factory.NewClients(context.Background(), cfg, factory.ClientOptions{}).Health().DefaultCredentials(context.Background(), false)
	if len(found.Found) != 1 || found.Found[0] != "manager (the configured password is a factory default)" {
		t.Errorf("configured default not reported: %v", found)
	}
}

// TestDefaultCredentialTriesDailyWithAComponentDown: with the indexer down
// (its factory password cannot be tried) the manager's failed logins are
// still sent once a day, not on every cron run; --deep tries again, and the
// record is replaced atomically, never written through a symlink.
func TestDefaultCredentialTriesDailyWithAComponentDown(t *testing.T) {
	var tries atomic.Int32
	srv, dir, ca, pw := refusingServer(t, &tries, func(u string) bool { return strings.HasPrefix(u, "siem") })
	cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\n"+
		"indexer: {url: \"http://"+clitest.ClosedAddr(t)+"\", username: siemctl-ro, ca_file: \"\", password_file: "+pw+"}\n"+
		"manager: {api_url: \""+srv.URL+"\", ca_file: "+ca+", password_file: "+pw+"}\n")
	run := func(deep bool) health.CredentialReport {
		t.Helper()
		rep, err := factory.NewClients(context.Background(), cfg, factory.ClientOptions{}).Health().DefaultCredentials(context.Background(), deep)
		if err == nil || !strings.Contains(err.Error(), "indexer (unreachable)") {
			t.Fatalf("the indexer is down: %v", err)
		}
		return rep
	}
	rep := run(false)
	first := tries.Load()
	if first == 0 || !strings.Contains(strings.Join(rep.Evidence, "\n"), "manager default passwords tried now") {
		t.Fatalf("first run: %d logins, evidence %q", first, rep.Evidence)
	}
	for range 2 {
		rep = run(false)
	}
	if tries.Load() != first {
		t.Errorf("three runs with the indexer down sent %d failed logins to the manager, want %d (once a day)", tries.Load(), first)
	}
	if ev := strings.Join(rep.Evidence, "\n"); !strings.Contains(ev, "manager default passwords last tried 20") || !strings.Contains(ev, "or with --deep") {
		t.Errorf("evidence does not say when the manager was last tried: %q", rep.Evidence)
	}
	run(true)
	if tries.Load() != 2*first {
		t.Errorf("--deep did not try again: %d logins", tries.Load())
	}

	// A day later the tries run again.
	state := filepath.Join(dir, "state", "cache", "default-credentials.json")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Version int                                   `json:"version"`
		Tries   map[string]map[string]json.RawMessage `json:"tries"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Tries) != 1 {
		t.Fatalf("record %s: %v", b, err)
	}
	for k := range rec.Tries {
		rec.Tries[k]["tried_at"] = json.RawMessage(`"` + time.Now().Add(-25*time.Hour).UTC().Format(time.RFC3339) + `"`)
	}
	b, _ = json.Marshal(rec)
	os.WriteFile(state, b, 0o600)
	run(false)
	if tries.Load() != 3*first {
		t.Errorf("a day later the manager was not tried again: %d logins", tries.Load())
	}

	// A symlink at the record's place is replaced, never followed.
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	os.Remove(state)
	if err := os.Symlink(victim, state); err != nil {
		t.Fatal(err)
	}
	run(false)
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the record was written through a symlink: %q", b)
	}
	if fi, err := os.Lstat(state); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the record is not a regular file after the write: %v %v", fi, err)
	}
	if tries.Load() != 4*first {
		t.Errorf("a symlinked record was read as a try: %d logins", tries.Load())
	}
}

// A hung indexer (it reads requests and never answers) must not receive the
// factory credentials: they go only to a node that answered siemctl itself.
func TestDefaultCredentialsNeverSentToAHungIndexer(t *testing.T) {
	hung := clitest.Hang(t, "tcp")
	dir := t.TempDir()
	pw := clitest.WriteSecret(t, dir, "pw", "Generated-1")
	cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\n"+
		"indexer: {url: \"http://"+hung.Addr+"\", username: siemctl-ro, ca_file: \"\", password_file: "+pw+"}\n"+
		"manager: {api_url: \"http://"+clitest.ClosedAddr(t)+"\", password_file: "+pw+"}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := factory.NewClients(ctx, cfg, factory.ClientOptions{}).Health().DefaultCredentials(ctx, true)
	if err == nil {
		t.Fatal("an unreachable indexer gave a verdict")
	}
	if def := base64.StdEncoding.EncodeToString([]byte("admin:admin")); strings.Contains(hung.Received(), def) {
		t.Fatalf("the default credentials were sent to a hung indexer:\n%s", hung.Received())
	}
}

// password_env is read once and removed: no child process inherits it.
func TestPasswordEnvIsRemovedFromChildren(t *testing.T) {
	t.Setenv("SIEMCTL_TEST_INDEXER_PW", "Env-Secret-4711")
	dir := t.TempDir()
	cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\n"+
		"indexer: {url: \"http://127.0.0.1:9\", ca_file: \"\", password_env: SIEMCTL_TEST_INDEXER_PW}\n"+
		"manager: {api_url: \"http://127.0.0.1:9\", password_env: SIEMCTL_TEST_INDEXER_PW}\n")
	s := factory.NewClients(context.Background(), cfg, factory.ClientOptions{})
	if s.Indexer.Err() != nil || s.Manager.Err() != nil {
		t.Fatalf("clients: %v %v", s.Indexer.Err(), s.Manager.Err())
	}
	out, _, _, err := process.ExecRunner{}.Run(context.Background(), nil, "env")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "Env-Secret-4711") || strings.Contains(string(out), "SIEMCTL_TEST_INDEXER_PW") {
		t.Fatal("a child inherited the password_env variable")
	}
	if got := s.Redactor.String("login with Env-Secret-4711 failed"); strings.Contains(got, "Env-Secret-4711") {
		t.Fatalf("the resolved password is unknown to the redactor: %q", got)
	}
}

// TestStepDepsWithoutClients: a client that could not be built is a nil
// interface in the step kinds' dependencies (never a typed nil, which a
// kind's nil check would miss) with the reason; the host facts are wired.
func TestStepDepsWithoutClients(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-secret")
	cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\n"+
		"indexer: {password_file: "+missing+"}\nmanager: {password_file: "+missing+"}\n")
	d := factory.NewClients(context.Background(), cfg, factory.ClientOptions{}).StepDeps()
	ix, ixErr := d.Indexer.Get()
	mg, mgErr := d.Manager.Get()
	if ix != nil || mg != nil {
		t.Fatalf("typed nils leaked: %#v %#v", ix, mg)
	}
	if ixErr == nil || mgErr == nil || !strings.Contains(ixErr.Error(), "no-such-secret") {
		t.Fatalf("reasons lost: %v / %v", ixErr, mgErr)
	}
	if d.Ports == nil || d.Disk == nil || d.Dashboard == nil || d.Exec == nil || d.Units == nil || d.Snapshot == nil || d.Redact == nil {
		t.Fatal("host facts not wired")
	}
}
