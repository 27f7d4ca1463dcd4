package stack

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/siemctl/siemctl/internal/config"
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
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("Generated-1\n"), 0o600)
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte("state_dir: "+dir+"/state\n"+
		"indexer: {url: \""+srv.URL+"\", ca_file: "+ca+", password_file: "+pw+"}\n"+
		"manager: {api_url: \""+srv.URL+"\", ca_file: "+ca+", password_file: "+pw+"}\n"), 0o600)
	cfg, err := config.Load(config.LoadOptions{Path: cfgFile, ExplicitPath: true})
	if err != nil {
		t.Fatal(err)
	}
	s := Open(context.Background(), cfg, Options{})
	found, err := s.DefaultCredentials(context.Background())
	if err != nil || len(found) != 0 {
		t.Fatalf("first run: %v %v", found, err)
	}
	first := tries.Load()
	if first == 0 {
		t.Fatal("no default credential was tried")
	}
	if _, err := s.DefaultCredentials(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tries.Load() != first {
		t.Errorf("second run tried again: %d logins, want %d", tries.Load(), first)
	}
	// A configured default password is reported without any login.
	os.WriteFile(pw, []byte("siem\n"), 0o600)
	found, _ = s.DefaultCredentials(context.Background())
	if len(found) != 1 || !strings.Contains(found[0], "manager user siem (configured password is the default)") {
		t.Errorf("configured default not reported: %v", found)
	}
}
