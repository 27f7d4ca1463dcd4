package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/cleanup"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{FlagErrorf("bad flag"), 2},
		{&config.Error{Key: "indexer.url", Msg: "bad"}, 2},
		{output.ErrNoTTY, 2},
		{&ExitError{Code: 3}, 3},
		{&ExitError{Code: ExitRollbackFailed, Err: errors.New("rollback stopped")}, 11},
		// the domain's outcomes: the first in the chain decides, before what they wrap
		{&engine.GateError{Step: "preflight/disk", Reason: "full", Err: &netclient.Error{Op: "GET /", Kind: netclient.ErrUnreachable}}, 3},
		{&engine.PlanError{}, 2},
		{fmt.Errorf("wrapped: %w", &engine.FailedError{Step: "a", Err: &engine.GateError{Step: "b"}}), 1},
		{&engine.FinallyError{Errs: []engine.StepErr{{Step: "f", Err: &engine.GateError{}}}}, 1},
		{fmt.Errorf("wrapped: %w", &engine.RolledBackError{Step: "a", Cause: errors.New("x")}), 10},
		{&engine.RollbackFailedError{Cause: &engine.GateError{}, Failed: []engine.StepErr{{Step: "u", Err: errors.New("undo")}}}, 11},
		{&engine.StoppedError{RunID: "r"}, 130},
		{&rollout.RollingBackError{Entry: "indexer/indexer-2", Reason: &netclient.Error{Op: "GET /", Kind: netclient.ErrTimeout}}, 10},
		{fmt.Errorf("turn: %w", &rollout.NotYourTurnError{Whose: "indexer/indexer-3"}), 7},
		{&lock.HeldError{Path: "/var/lib/siemctl/lock"}, 6},
		{&cleanup.RefusedError{Reasons: []string{"index in use"}}, 3},
		{&secadmin.RemovedError{}, 3},
		{fmt.Errorf("apply: %w", &secadmin.BackupFailedError{}), 3},
		{errors.Join(errors.New("first"), &lock.HeldError{}), 6},
		{&netclient.Error{Op: "GET /", Kind: netclient.ErrUnauthorized}, 4},
		{&config.SecretError{Key: "indexer.password_file", Msg: "missing"}, 4},
		{&netclient.Error{Op: "GET /", Kind: netclient.ErrUnreachable}, 5},
		{&netclient.Error{Op: "GET /", Kind: netclient.ErrTLS}, 5},
		{fmt.Errorf("x: %w", context.Canceled), 130},
		// a start whose service did not answer: slow (8) until a cause is named, then failed (1)
		{&services.ActionError{Action: "start", Err: &services.NotAnsweringError{Err: &netclient.Error{Op: "GET /", Kind: netclient.ErrUnreachable}}}, 8},
		{&services.ActionError{Action: "start", Err: &services.NotAnsweringError{Err: &netclient.Error{Op: "GET /", Kind: netclient.ErrUnreachable}, Explained: true}}, 1},
	}
	tests = append(tests, namedStartFailures()...)
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// namedStartFailures: a failed start whose diagnosis names a cause of a class exits with that
// class; the rest is 1, a start with no cause named 8; a runbook step's start keeps the run's code.
func namedStartFailures() []struct {
	err  error
	want int
} {
	report := func(kind, cause string) diagnose.Report {
		return diagnose.Report{Component: "indexer", Unit: "siem-indexer.service", Findings: []diagnose.Finding{{Kind: kind, Cause: cause, Fix: "…"}}}
	}
	start := func(component string, err error, rep diagnose.Report) error {
		return &services.ActionError{Action: "start", Component: component, Unit: "siem-" + component + ".service",
			Err: &services.DiagnosedError{Err: err, Report: rep}}
	}
	died := errors.New("siem-indexer.service is not running (exit-code (exit status 1)); its log says why")
	silent := func(explained bool) error {
		return &services.NotAnsweringError{Unit: "siem-indexer.service", Wait: time.Minute, Explained: explained,
			Err: &netclient.Error{Op: "GET /", URL: "https://127.0.0.1:9200", Kind: netclient.ErrUnreachable}}
	}
	refused := &services.RefusedError{Cause: "its output https://127.0.0.1:9200 refuses the shipper's output credentials (401 Unauthorized)", Err: netclient.ErrUnauthorized}
	return []struct {
		err  error
		want int
	}{
		// the shipper's output refuses its credentials (the readiness probe's 401)
		{start("shipper", refused, report(diagnose.KindRefused, refused.Cause)), 4},
		// a file the service user cannot read or write
		{start("indexer", died, report(diagnose.KindPermission, "indexer cannot read /etc/siem-indexer/opensearch.yml: owned by root:root, mode -rw-------")), 4},
		// the indexer runs on the port its opensearch.yml names, not indexer.url's: siemctl's configuration
		{start("indexer", silent(true), report(diagnose.KindHTTPPort, "the indexer listens on port 9201 (http.port in /etc/siem-indexer/opensearch.yml) and siemctl's indexer.url https://127.0.0.1:9200 asks port 9200")), 2},
		// named causes of no class: 1
		{start("indexer", died, report(diagnose.KindTLSFile, "plugins.security.ssl.http.pemkey_filepath in /etc/siem-indexer/opensearch.yml names /etc/siem-indexer/certs/k.pem, which does not exist")), 1},
		{start("indexer", died, report(diagnose.KindUnknownSetting, "unknown setting [foo.bar] in /etc/siem-indexer/opensearch.yml")), 1},
		{start("indexer", silent(true), report(diagnose.KindPortBound, "port 9200 already bound by pid 4242 (python3)")), 1},
		// no cause: still starting
		{start("indexer", silent(false), report(diagnose.KindStillStarting, "siem-indexer.service is still starting (active/running) and does not answer yet")), 8},
		// a runbook's start: the run's outcome decides
		{&engine.FailedError{Step: "indexer/start", Err: start("indexer", died, report(diagnose.KindPermission, "indexer cannot write /var/lib/siem-indexer"))}, 1},
	}
}

func TestHealthExitCode(t *testing.T) {
	for s, want := range map[health.Status]int{health.OK: 0, health.Warn: 1, health.Crit: 2, health.Unknown: 3} {
		if got := HealthExitCode(s); got != want {
			t.Errorf("HealthExitCode(%s) = %d, want %d (Nagios)", s, got, want)
		}
	}
}

func TestMainErrorOutput(t *testing.T) {
	failing := func(err error) Registrar {
		return func(root *cobra.Command, f *Factory) {
			root.AddCommand(&cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error { return err }})
		}
	}
	unreachable := &netclient.Error{Op: "GET /", URL: "https://127.0.0.1:9200", Kind: netclient.ErrUnreachable}

	io, _, _, errOut := output.Test()
	code := Main(context.Background(), []string{"fail"}, Stdio{IO: io}, failing(unreachable))
	if code != 5 || !strings.Contains(errOut.String(), "error: GET / https://127.0.0.1:9200: unreachable") || !strings.Contains(errOut.String(), "hint: is the service running?") {
		t.Errorf("table mode: exit %d, stderr %q", code, errOut.String())
	}

	io, _, out, errOut := output.Test()
	code = Main(context.Background(), []string{"fail", "-o", "json"}, Stdio{IO: io}, failing(unreachable))
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal(errOut.Bytes(), &e); err != nil || e.ExitCode != 5 || code != 5 || out.Len() != 0 {
		t.Errorf("json mode: exit %d, stderr %q, stdout %q (%v)", code, errOut.String(), out.String(), err)
	}

	io, _, _, errOut = output.Test()
	if code := Main(context.Background(), []string{"nope"}, Stdio{IO: io}, nil); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("unknown command: exit %d %q", code, errOut.String())
	}
	io, _, _, errOut = output.Test()
	if code := Main(context.Background(), []string{"version", "--log-level", "loud"}, Stdio{IO: io}, nil); code != 2 || !strings.Contains(errOut.String(), "--log-level") {
		t.Errorf("bad log level: exit %d %q", code, errOut.String())
	}
}

func TestConfirm(t *testing.T) {
	io, in, _, _ := output.Test()
	if err := io.Confirm("go?", false); !errors.Is(err, output.ErrNoTTY) {
		t.Errorf("no TTY: %v", err)
	}
	if err := io.Confirm("go?", true); err != nil {
		t.Errorf("--yes: %v", err)
	}
	io.SetTTY(true, true, true)
	in.WriteString("y\n")
	if err := io.Confirm("go?", false); err != nil {
		t.Errorf("answered y: %v", err)
	}
	in.WriteString("n\n")
	if err := io.Confirm("go?", false); !errors.Is(err, output.ErrDeclined) {
		t.Errorf("answered n: %v", err)
	}
}

// TestHintsFollowTheService: a 429 or 403 gets the hint of the service
// that answered it; an interruption gets none.
func TestHintsFollowTheService(t *testing.T) {
	tests := []struct {
		err     error
		code    int
		want    string
		mustNot string
	}{
		{&netclient.Error{Service: "indexer", Op: "GET /_cluster/health", Status: 429, Kind: netclient.ErrRateLimited}, 5, "thread_pool", "300"},
		{&netclient.Error{Service: "manager API", Op: "GET /agents", Status: 429, Code: 6001, Kind: netclient.ErrRateLimited}, 5, "max_request_per_minute", "thread_pool"},
		{&netclient.Error{Service: "manager API", Op: "GET /agents", Status: 403, Code: 4000, Kind: netclient.ErrForbidden}, 4, "RBAC", "roles_mapping"},
		{&netclient.Error{Service: "indexer", Op: "GET /_cat/indices", Status: 403, Kind: netclient.ErrForbidden}, 4, "roles_mapping", "RBAC"},
		{&netclient.Error{Service: "indexer", Op: "GET /_cat/indices", Kind: netclient.ErrTooLarge}, 1, "narrow the request", ""},
		{&netclient.Error{Service: "manager API", Op: "GET /agents", Kind: netclient.ErrInterrupted, Err: context.Canceled}, 130, "", "services status"},
		// a start whose diagnosis names the shipper's output refusing its credentials: the fix is in
		// the error; siemctl's own username and password are not the cause
		{&services.ActionError{Action: "restart", Component: "shipper", Unit: "shipper.service", Err: &services.DiagnosedError{
			Err:    &services.RefusedError{Cause: "its output https://127.0.0.1:9200 refuses the shipper's output credentials (401 Unauthorized)", Err: netclient.ErrUnauthorized},
			Report: diagnose.Report{Findings: []diagnose.Finding{{Kind: diagnose.KindRefused, Cause: "its output … (401 Unauthorized)", Fix: "shipper keystore add output.elasticsearch.password --force"}}}}},
			4, "", "password source in the config"},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.code {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.code)
		}
		h := hint(tt.err)
		if (tt.want == "" && h != "") || !strings.Contains(h, tt.want) || (tt.mustNot != "" && strings.Contains(h, tt.mustNot)) {
			t.Errorf("hint(%v) = %q", tt.err, h)
		}
	}
}

// TestExitCodesHaveOneHome fails when a package outside internal/cli gives an error an exit code
// of its own (an ExitCode method or a constant named Exit…): cli.ExitCode would not read it, and
// the command would exit 1. Map the error in exit.go's domainCode instead.
func TestExitCodesHaveOneHome(t *testing.T) {
	root := filepath.Join("..", "..")
	method := regexp.MustCompile(`(?m)^func \([^)]*\) ExitCode\(\) int`)
	constant := regexp.MustCompile(`(?m)^\s*(const\s+)?[Ee]xit[A-Z]\w*\s*(int\s*)?=\s*\d+`)
	var bad []string
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.HasPrefix(filepath.ToSlash(path), "../../internal/cli/") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if method.Match(b) || constant.Match(b) {
				bad = append(bad, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(bad) > 0 {
		t.Errorf("exit codes outside internal/cli/exit.go (map the error in domainCode instead): %s", strings.Join(bad, ", "))
	}
}
