package cli_test

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/process"
)

// TestDefaultCredentialTriesAreCached: the remote tries cost failed logins
// (the manager blocks an IP after 50), so a second run within the hour must
// not repeat them; the configured password is still compared every run.
func TestDefaultCredentialTriesAreCached(t *testing.T) {
	var tries atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); ok {
			tries.Add(1)
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	pw := clitest.WriteSecret(t, dir, "pw", "Generated-1")
	cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\n"+
		"indexer: {url: \""+srv.URL+"\", ca_file: "+ca+", password_file: "+pw+"}\n"+
		"manager: {api_url: \""+srv.URL+"\", ca_file: "+ca+", password_file: "+pw+"}\n")
	s := cli.NewClients(context.Background(), cfg, cli.ClientOptions{})
	found, err := s.Health().DefaultCredentials(context.Background())
	if err != nil || len(found) != 0 {
		t.Fatalf("first run: %v %v", found, err)
	}
	first := tries.Load()
	if first == 0 {
		t.Fatal("no default credential was tried")
	}
	if _, err := s.Health().DefaultCredentials(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tries.Load() != first {
		t.Errorf("second run tried again: %d logins, want %d", tries.Load(), first)
	}
	// A configured default password is reported without any login.
	os.WriteFile(pw, []byte("siem\n"), 0o600)
	found, _ = cli.NewClients(context.Background(), cfg, cli.ClientOptions{}).Health().DefaultCredentials(context.Background())
	if len(found) != 1 || found[0] != "manager (the configured password is a factory default)" {
		t.Errorf("configured default not reported: %v", found)
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
	_, err := cli.NewClients(ctx, cfg, cli.ClientOptions{}).Health().DefaultCredentials(ctx)
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
	s := cli.NewClients(context.Background(), cfg, cli.ClientOptions{})
	if s.IndexerErr != nil || s.ManagerErr != nil {
		t.Fatalf("clients: %v %v", s.IndexerErr, s.ManagerErr)
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
