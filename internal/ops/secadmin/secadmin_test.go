package secadmin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/ops/secadmin"
)

// tool answers run after run from a script of (stdout, exit code, err).
type tool struct {
	runs  []toolRun
	argvs [][]string
	envs  [][]string
}

type toolRun struct {
	out  string
	code int
	err  error
}

func (t *tool) Run(_ context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error) {
	t.argvs = append(t.argvs, append([]string{name}, args...))
	t.envs = append(t.envs, env)
	r := t.runs[min(len(t.argvs), len(t.runs))-1]
	return []byte(r.out), nil, r.code, r.err
}

// retry polls up to 3 times without sleeping.
func retry(_ context.Context, what string, attempt func() (bool, error)) error {
	for range 3 {
		if ok, err := attempt(); ok || err != nil {
			return err
		}
	}
	return errors.New("still waiting for " + what)
}

func TestApply(t *testing.T) {
	done := toolRun{out: "Will update '/config' with /etc/opensearch-security/config.yml\nDone with success\n"}
	notYet := toolRun{out: "ERR: An unexpected NoNodeAvailableException occured\n", code: 255}
	tests := []struct {
		name     string
		tool     []string
		runs     []toolRun
		opts     secadmin.ApplyOptions
		wantErr  string
		attempts int
		runsDone int
	}{
		{name: "done with success", tool: []string{"/opt/init.sh"}, runs: []toolRun{done}, attempts: 1, runsDone: 1},
		{name: "exit 0 without Done with success: failed", tool: []string{"/opt/init.sh"}, runs: []toolRun{{out: "Contacting opensearch cluster\n"}},
			wantErr: "init.sh: exit 0: Contacting opensearch cluster", runsDone: 1},
		{name: "non-zero exit, no retry: error at once", tool: []string{"/opt/init.sh"}, runs: []toolRun{notYet, done},
			wantErr: "init.sh: exit 255: ERR: An unexpected NoNodeAvailableException", runsDone: 1},
		{name: "retry: fails, then succeeds", tool: []string{"/opt/init.sh"}, runs: []toolRun{notYet, done}, opts: secadmin.ApplyOptions{Retry: retry},
			attempts: 2, runsDone: 2},
		{name: "retry gives up with the last failure", tool: []string{"/opt/init.sh"}, runs: []toolRun{notYet}, opts: secadmin.ApplyOptions{Retry: retry},
			wantErr: "after 3 attempts: init.sh: exit 255", runsDone: 3},
		{name: "not configured: no retry", runs: []toolRun{done}, opts: secadmin.ApplyOptions{Retry: retry}, wantErr: "set indexer.security_init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := &tool{runs: tt.runs}
			failed := 0
			tt.opts.Failed = func(int, error) { failed++ }
			res, err := secadmin.Apply(context.Background(), tl, tt.tool, tt.opts)
			if (err != nil) != (tt.wantErr != "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
			if len(tl.argvs) != tt.runsDone || err == nil && res.Attempts != tt.attempts {
				t.Errorf("%d runs, attempts %d; want %d runs, %d attempts", len(tl.argvs), res.Attempts, tt.runsDone, tt.attempts)
			}
			if tt.opts.Retry != nil && err == nil && failed != tt.runsDone-1 {
				t.Errorf("%d failures heard", failed)
			}
			for _, a := range tl.argvs {
				if !slices.Equal(a, tt.tool) {
					t.Errorf("argv %q, want %q (no options)", a, tt.tool)
				}
			}
		})
	}
}

// TestToolJVMStartsQuick: both runs of the security init tool ask its JVM for the client
// compiler only, and a JAVA_OPTS of siemctl's environment comes after (its options win).
func TestToolJVMStartsQuick(t *testing.T) {
	for _, tt := range []struct{ env, want string }{
		{"", "JAVA_OPTS=-XX:TieredStopAtLevel=1"},
		{"-Xmx1g -XX:TieredStopAtLevel=4", "JAVA_OPTS=-XX:TieredStopAtLevel=1 -Xmx1g -XX:TieredStopAtLevel=4"},
	} {
		t.Setenv("JAVA_OPTS", tt.env)
		tl := &tool{runs: []toolRun{{out: "SUCC: Configuration for 'config' stored in /x/config.yml\nDone with success\n"}}}
		if _, err := secadmin.Backup(context.Background(), tl, []string{"/opt/init.sh"}, filepath.Join(t.TempDir(), "sec")); err != nil {
			t.Fatal(err)
		}
		if _, err := secadmin.Apply(context.Background(), tl, []string{"/opt/init.sh"}, secadmin.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, env := range tl.envs {
			if !slices.Contains(env, tt.want) {
				t.Errorf("JAVA_OPTS %q, run %d's environment %q, want %q", tt.env, i+1, env, tt.want)
			}
		}
	}
}

func TestBackup(t *testing.T) {
	stored := "SUCC: Configuration for 'config' stored in /x/config.yml\nSUCC: Configuration for 'internalusers' stored in /x/internal_users.yml\n"
	tests := []struct {
		name    string
		dir     string // relative to a temp dir unless absolute-invalid
		runs    []toolRun
		wantErr string
		stored  []string
	}{
		{name: "stored", dir: "sec", runs: []toolRun{{out: stored}}, stored: []string{"config", "internalusers"}},
		{name: "exit 0, nothing stored: failed", dir: "sec", runs: []toolRun{{out: "Contacting opensearch cluster\n"}}, wantErr: "exit 0"},
		{name: "non-zero exit", dir: "sec", runs: []toolRun{{out: stored, code: 1}}, wantErr: "exit 1"},
		{name: "exit -1 for audit the index holds none of: everything live is stored", dir: "sec",
			runs:   []toolRun{{out: stored + "Will retrieve '/audit' into /x/audit.yml\n   FAIL: Configuration for 'audit' failed because of empty source\n", code: 255}},
			stored: []string{"config", "internalusers"}},
		{name: "exit -1 for a type it could not read: failed", dir: "sec",
			runs:    []toolRun{{out: stored + "   FAIL: Get configuration for 'roles' failed because of java.net.SocketTimeoutException: 30,000 milliseconds timeout\n", code: 255}},
			wantErr: "exit 255"},
		{name: "blank in the directory: refused before running", dir: "my sec", wantErr: "without spaces or quotes"},
		{name: "relative directory: refused", dir: "-", wantErr: "use an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tt.dir)
			if tt.dir == "-" {
				dir = "sec"
			}
			tl := &tool{runs: tt.runs}
			res, err := secadmin.Backup(context.Background(), tl, []string{"/opt/init.sh"}, dir)
			if (err != nil) != (tt.wantErr != "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
			if tt.runs == nil {
				if len(tl.argvs) > 0 {
					t.Fatalf("ran %q", tl.argvs)
				}
				return
			}
			if want := []string{"/opt/init.sh", "--options", "-backup " + dir + " -icl -nhnv"}; !slices.Equal(tl.argvs[0], want) {
				t.Errorf("argv %q, want %q", tl.argvs[0], want)
			}
			if st, serr := os.Stat(dir); serr != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("backup directory: %v %v", st, serr)
			}
			if err == nil && !slices.Equal(res.Stored, tt.stored) {
				t.Errorf("stored %q, want %q", res.Stored, tt.stored)
			}
		})
	}
}

// LiveBackup on securityadmin's own lines: absent types are nothing to
// keep, unread ones are blind where the files would overwrite them.
func TestLiveBackup(t *testing.T) {
	out := `Security Admin v7
Will connect to 127.0.0.1:9200 ... done
Connected as "CN=admin,OU=Wazuh,O=Wazuh,L=California,C=US"
OpenSearch Version: 2.19.2
Clusterstate: GREEN
.opendistro_security index already exists, so we do not need to create one.
Will retrieve '/config' into /b/config.yml
   SUCC: Configuration for 'config' stored in /b/config.yml
Will retrieve '/roles' into /b/roles.yml
   FAIL: Get configuration for 'roles' failed because of java.net.SocketTimeoutException: 30,000 milliseconds timeout on connection http-outgoing-0 [ACTIVE]
Will retrieve '/rolesmapping' into /b/roles_mapping.yml
   SUCC: Configuration for 'rolesmapping' stored in /b/roles_mapping.yml
Will retrieve '/tenants' into /b/tenants.yml
ERR: Seems tenants from cluster is not in 7 format: com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException
Will retrieve '/audit' into /b/audit.yml
   FAIL: Configuration for 'audit' failed because of empty source
`
	dir, files := t.TempDir(), t.TempDir()
	for _, f := range []string{"roles.yml", "audit.yml"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil { // the tool opens before it reads
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(files, "roles.yml"), []byte("_meta: {type: roles, config_version: 2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := secadmin.LiveBackup(context.Background(), &tool{runs: []toolRun{{out: out, code: 255}}}, []string{"/opt/init.sh"}, dir, files)
	if err != nil {
		t.Fatal(err)
	}
	if got := secadmin.JoinFailures(l.Absent); got != "audit (empty source: the security index holds none)" {
		t.Errorf("absent %q", got)
	}
	var unread []string
	for _, f := range l.Unread {
		unread = append(unread, f.Type)
	}
	// internalusers, actiongroups, nodesdn, allowlist: the tool named none of them and failed
	if want := []string{"roles", "tenants", "internalusers", "actiongroups", "nodesdn", "allowlist"}; !slices.Equal(unread, want) {
		t.Errorf("unread %q, want %q", unread, want)
	}
	// only roles.yml is in the files: tenants is left alone by the apply
	if b := l.Blind(files); len(b) != 1 || b[0].Type != "roles" || !strings.Contains(b[0].Reason, "SocketTimeoutException") {
		t.Errorf("blind %v", b)
	}
	for _, f := range []string{"roles.yml", "audit.yml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("the empty %s the tool opened is kept in the backup: %v", f, err)
		}
	}
	e := &secadmin.BackupFailedError{Blind: l.Blind(files), Stored: l.Result.Stored, Backup: dir, FilesDir: files}
	if msg := e.Error(); !strings.Contains(msg, "(roles.yml)") || !strings.Contains(msg, "backed up: config, rolesmapping in "+dir) {
		t.Errorf("%s", msg)
	}
}
