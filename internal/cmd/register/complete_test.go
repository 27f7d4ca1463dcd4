package register_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/cmd/register"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// complete runs the shell-completion entry point as the shells do and returns the offered values.
func complete(t *testing.T, cfgPath string, args ...string) []string {
	t.Helper()
	ios, _, out, _ := output.Test()
	f := factory.New(ios, nil)
	root := cli.NewCmdRoot(f)
	register.All(root, f)
	root.SetOut(out)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"__complete", "--config", cfgPath}, args...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return got
}

func TestCompletionValues(t *testing.T) {
	d := t.TempDir()
	state := filepath.Join(d, "state")
	// The manager API is unreachable: agent ids complete to nothing, quickly.
	cfgPath := clitest.WriteConfig(t, d, "state_dir: "+state+"\nmanager:\n  api_url: https://127.0.0.1:1\n")
	for _, id := range []string{"20261101T100000Z-aaaaaa", "20261102T100000Z-bbbbbb"} {
		os.MkdirAll(filepath.Join(state, "runs", id), 0o700)
		os.WriteFile(filepath.Join(state, "runs", id, "journal.jsonl"), nil, 0o600)
	}
	store := &snapshot.Store{Dir: filepath.Join(state, "snapshots")}
	for i, label := range []string{"pre-upgrade", "post-upgrade"} {
		at := time.Date(2026, 11, 1, 10, i, 0, 0, time.UTC)
		id, _ := snapshot.NewID(at, strings.NewReader(strings.Repeat("x", 64)))
		if _, err := store.Save(&snapshot.Document{SchemaVersion: snapshot.SchemaVersion, ID: id, Label: label, TakenAt: at.Format(time.RFC3339)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"health", "--profile", ""}, []string{"siem", "wazuh"}},
		{[]string{"health", "-o", ""}, []string{"table", "json", "nagios", "prometheus"}},
		{[]string{"snapshot", "capture", "-o", ""}, []string{"table", "json", "prometheus"}},
		{[]string{"alerts", "count", "-o", ""}, []string{"table", "json"}},
		{[]string{"health", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
		{[]string{"upgrade", "status", ""}, []string{"20261102T100000Z-bbbbbb", "20261101T100000Z-aaaaaa", "latest"}},
		{[]string{"upgrade", "report", "20261101"}, []string{"20261101T100000Z-aaaaaa"}},
		{[]string{"rollback", ""}, []string{"20261102T100000Z-bbbbbb", "20261101T100000Z-aaaaaa", "latest"}},
		{[]string{"snapshot", "show", "label:"}, []string{"label:post-upgrade", "label:pre-upgrade"}},
		{[]string{"snapshot", "diff", "latest", "pre"}, []string{"previous"}},
		{[]string{"snapshot", "diff", "latest", "previous", ""}, nil},
		{[]string{"agents", "show", ""}, nil},
	} {
		got := complete(t, cfgPath, tc.args...)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v: got %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := complete(t, cfgPath, "snapshot", "show", ""); len(got) != 6 || got[0] != "latest" || got[1] != "previous" {
		t.Errorf("snapshot refs: %q, want latest, previous, 2 labels, 2 ids", got)
	}
}

func TestCompletionAgentIDs(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: []managertest.Agent{
		{ID: "001", Name: "web-01", Status: "active"}, {ID: "002", Name: "db-01", Status: "disconnected"}, {ID: "013", Name: "edge", Status: "active"}}})
	d := t.TempDir()
	t.Setenv("SIEMCTL_TEST_MANAGER_PW", srv.Password())
	cfgPath := clitest.WriteConfig(t, d, "state_dir: "+d+"\nmanager:\n  api_url: "+srv.URL+"\n  username: "+srv.Username()+"\n  password_env: SIEMCTL_TEST_MANAGER_PW\n")
	if got := complete(t, cfgPath, "agents", "restart", "00"); strings.Join(got, " ") != "000 001 002" {
		t.Errorf("agents restart 00<TAB>: %q", got)
	}
	// Ids already on the line are not offered again. (Each completion is a new process in a shell;
	// siemctl removes password_env from its environment once read, so set it again.)
	t.Setenv("SIEMCTL_TEST_MANAGER_PW", srv.Password())
	if got := complete(t, cfgPath, "agents", "remove", "001", "0"); strings.Join(got, " ") != "000 002 013" {
		t.Errorf("agents remove 001 0<TAB>: %q", got)
	}
}
