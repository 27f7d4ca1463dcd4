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
