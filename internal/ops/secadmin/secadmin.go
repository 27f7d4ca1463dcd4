// Package secadmin administers the stack's credentials: the manager API's
// users (listed for snapshots too; created after the password passed the
// API's policy locally), indexer password hashes (the security plugin's
// hash tool, password passed through the environment, never argv), and the
// indexer security configuration (the security init tool: backup with
// `-backup DIR -icl -nhnv`, apply with its defaults, optionally retried
// until the node takes it). `siemctl security indexer` and the runbook's
// backup.indexer_security and indexer.security_apply steps call the same
// Backup and Apply.
package secadmin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/process"
	"github.com/siemctl/siemctl/internal/redact"
)

// AdminRoleID is the manager API's administrator role.
const AdminRoleID = 1

// Errors.
var (
	// ErrNotAdmin: the configured API user is not an administrator.
	ErrNotAdmin = errors.New("the configured API user is not an administrator")
	// ErrUserExists: an API user with that name exists.
	ErrUserExists = errors.New("API user already exists")
	// ErrNoTool: the tool is not configured.
	ErrNoTool = errors.New("tool not configured")
)

// UsersAPI is what the user operations need (*manager.Client).
type UsersAPI interface {
	Users(ctx context.Context) ([]manager.User, error)
	CreateUser(ctx context.Context, name, password string) (manager.User, error)
}

// APIUser is an API user as siemctl reports (and snapshots) it.
type APIUser struct {
	ID         int    `json:"id"`
	Username   string `json:"username"`
	Roles      []int  `json:"roles"`
	Admin      bool   `json:"admin"`
	AllowRunAs bool   `json:"allow_run_as"`
}

// ListAPIUsers returns the manager API's users, sorted by id. Snapshots can
// call it: it carries no secret.
func ListAPIUsers(ctx context.Context, api UsersAPI) ([]APIUser, error) {
	us, err := api.Users(ctx)
	if err != nil {
		return nil, fmt.Errorf("list API users: %w", err)
	}
	out := make([]APIUser, 0, len(us))
	for _, u := range us {
		roles := u.Roles
		if roles == nil {
			roles = []int{}
		}
		out = append(out, APIUser{ID: u.ID, Username: u.Username, Roles: roles, Admin: slices.Contains(roles, AdminRoleID), AllowRunAs: u.AllowRunAs})
	}
	slices.SortFunc(out, func(a, b APIUser) int { return a.ID - b.ID })
	return out, nil
}

// ValidateNewUser applies the API's rules to a new user locally: name 4–64
// characters, password 8–64 characters with upper, lower, digit and symbol.
func ValidateNewUser(name, password string) error {
	if err := manager.ValidateUsername(name); err != nil {
		return err
	}
	if err := manager.ValidatePassword(password); err != nil {
		return fmt.Errorf("password for %q: %w", name, err)
	}
	return nil
}

// AddAPIUser creates an API user. The name and password are checked
// locally first; then the configured user (self) must be an administrator
// and the name must be free; only then is the password sent.
func AddAPIUser(ctx context.Context, api UsersAPI, self, name, password string) (APIUser, error) {
	if err := ValidateNewUser(name, password); err != nil {
		return APIUser{}, err
	}
	users, err := ListAPIUsers(ctx, api)
	if err != nil {
		return APIUser{}, err
	}
	for _, u := range users {
		if u.Username == self && !u.Admin {
			return APIUser{}, fmt.Errorf("%w: %q has roles %v; creating API users needs the administrator role (%d): set manager.username to an administrative user", ErrNotAdmin, self, u.Roles, AdminRoleID)
		}
		if u.Username == name {
			return APIUser{}, fmt.Errorf("%w: %q (id %d)", ErrUserExists, name, u.ID)
		}
	}
	u, err := api.CreateUser(ctx, name, password)
	if err != nil {
		return APIUser{}, err
	}
	roles := u.Roles
	if roles == nil {
		roles = []int{}
	}
	return APIUser{ID: u.ID, Username: u.Username, Roles: roles, Admin: slices.Contains(roles, AdminRoleID), AllowRunAs: u.AllowRunAs}, nil
}

// Runner runs the security plugin's tools (see process.Runner); a
// password reaches them only through env.
type Runner = process.Runner

// ExecRunner is the tools' runner: their output is only shown (its tail on
// failure), so each stream keeps its last process.DefaultMaxOutput bytes.
func ExecRunner() Runner { return process.ExecRunner{} }

// ToolError is a tool that failed, with the tail of its output.
type ToolError struct {
	Tool     string
	ExitCode int
	Lines    []string
}

func (e *ToolError) Error() string {
	msg := strings.Join(e.Lines, " | ")
	if msg == "" {
		msg = "no output"
	}
	return fmt.Sprintf("%s: exit %d: %s", e.Tool, e.ExitCode, msg)
}

func outputLines(b ...[]byte) []string {
	var out []string
	for _, x := range b {
		for _, l := range strings.Split(string(x), "\n") {
			if l = strings.TrimRight(l, "\r "); strings.TrimSpace(l) != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

func tail(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// HashEnv is the environment variable the hash tool reads the password
// from (`hash.sh -env NAME`). The OpenSearch Hasher does not read stdin: without
// -p and -env it needs a console ("Cannot allocate a console", exit 255).
const HashEnv = "SIEMCTL_HASH_PASSWORD"

// Hash returns the hash of password from the security plugin's hash tool
// (argv from indexer.hash_tool). The password travels in the tool's
// environment, never on its command line.
func Hash(ctx context.Context, run Runner, tool []string, password string) (string, error) {
	if len(tool) == 0 || tool[0] == "" {
		return "", fmt.Errorf("%w: set indexer.hash_tool to the security plugin's hash.sh", ErrNoTool)
	}
	if password == "" {
		return "", errors.New("empty password")
	}
	if strings.ContainsAny(password, "\n\r\x00") {
		return "", errors.New("the password contains a line break or NUL")
	}
	argv := append(slices.Clone(tool), "-env", HashEnv)
	env := []string{HashEnv + "=" + password}
	if os.Getenv("JAVA_HOME") == "" && os.Getenv("OPENSEARCH_JAVA_HOME") == "" {
		if jh := bundledJava(tool[0]); jh != "" {
			env = append(env, "OPENSEARCH_JAVA_HOME="+jh)
		}
	}
	stdout, stderr, code, err := run.Run(ctx, env, argv[0], argv[1:]...)
	if err != nil {
		return "", err
	}
	lines := outputLines(stdout)
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "$") && !strings.Contains(l, " ") && len(l) > 20 {
			if code != 0 {
				break
			}
			return l, nil
		}
	}
	msg := tail(outputLines(stdout, stderr), 3)
	return "", &ToolError{Tool: filepath.Base(tool[0]), ExitCode: code, Lines: redactLines(msg, password)}
}

// bundledJava finds the indexer's bundled JDK (<home>/jdk) from the
// hash tool's path <home>/plugins/opensearch-security/tools/hash.sh.
func bundledJava(tool string) string {
	home := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(tool))))
	jdk := filepath.Join(home, "jdk")
	if st, err := os.Stat(filepath.Join(jdk, "bin", "java")); err == nil && !st.IsDir() {
		return jdk
	}
	return ""
}

func redactLines(lines []string, secret string) []string {
	r := redact.New(secret)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = r.String(l)
	}
	return out
}

// ToolJavaOpts are the JVM options the security init tool runs with (before
// any JAVA_OPTS of siemctl's environment, which win): securityadmin is a
// short-lived JVM whose few seconds go to starting up, and the client
// compiler alone takes 0.7-0.8 s (about a quarter) off each run here, both
// in the backup before the indexer's stop and in the apply after its start.
// The init tool (Wazuh's indexer-security-init.sh and securityadmin.sh)
// passes JAVA_OPTS to the JVM.
const ToolJavaOpts = "-XX:TieredStopAtLevel=1"

// toolEnv is the security init tool's added environment.
func toolEnv() []string {
	return []string{"JAVA_OPTS=" + strings.TrimSpace(ToolJavaOpts+" "+os.Getenv("JAVA_OPTS"))}
}

// BackupOptions are the security init options of the backup: the
// upgrade guide's `--options "-backup DIR -icl -nhnv"`.
func BackupOptions(dir string) []string {
	return []string{"--options", "-backup " + dir + " -icl -nhnv"}
}

// InitResult is a run of the security init tool.
type InitResult struct {
	Argv   []string `json:"argv"`
	Dir    string   `json:"dir,omitempty"`
	Stored []string `json:"stored"` // backup: configuration types written
	Files  []string `json:"files"`  // backup: files found in Dir afterwards
	// NotStored are the types the backup did not write, with the tool's
	// reason (backup only).
	NotStored []TypeFailure `json:"not_stored,omitempty"`
	// IndexCreated: the security index did not exist; the backup tool
	// created it, empty, first (backup only).
	IndexCreated bool     `json:"index_created,omitempty"`
	Output       []string `json:"output"` // the tool's last lines
	// Attempts counts the runs of the tool (more than one with Retry).
	Attempts int `json:"attempts"`
}

// Backup downloads the indexer's security configuration into dir (created
// 0700 if needed; must be absolute and contain no space, because the init
// tool passes the options through a shell word split). A type the security
// index holds none of is in NotStored (Absent) and no failure; a type the
// tool failed to read is.
func Backup(ctx context.Context, run Runner, tool []string, dir string) (InitResult, error) {
	if len(tool) == 0 || tool[0] == "" {
		return InitResult{}, fmt.Errorf("%w: set indexer.security_init", ErrNoTool)
	}
	if !filepath.IsAbs(dir) || strings.ContainsAny(dir, " \t\n\"'$`\\") {
		return InitResult{}, fmt.Errorf("backup directory %q: use an absolute path without spaces or quotes", dir)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return InitResult{}, fmt.Errorf("backup directory: %w", err)
	}
	res := InitResult{Argv: append(slices.Clone(tool), BackupOptions(dir)...), Dir: dir, Stored: []string{}, Files: []string{}, Attempts: 1}
	stdout, stderr, code, err := run.Run(ctx, toolEnv(), res.Argv[0], res.Argv[1:]...)
	if err != nil {
		return res, err
	}
	lines := outputLines(stdout, stderr)
	res.Output = tail(lines, 15)
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "SUCC: Configuration for '"); ok {
			if typ, _, ok := strings.Cut(rest, "'"); ok {
				res.Stored = append(res.Stored, typ)
			}
		}
	}
	res.NotStored, res.IndexCreated = backupFailures(lines)
	dropEmpty(dir, res.NotStored)
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if !e.IsDir() {
				res.Files = append(res.Files, e.Name())
			}
		}
	}
	// the tool exits -1 for a type the security index holds none of (audit
	// on a brand-new cluster): everything live is backed up all the same
	onlyAbsent := !slices.ContainsFunc(res.NotStored, func(f TypeFailure) bool { return !f.Absent })
	if len(res.Stored) == 0 || code != 0 && (len(res.NotStored) == 0 || !onlyAbsent) {
		return res, &ToolError{Tool: filepath.Base(tool[0]), ExitCode: code, Lines: tail(lines, 5)}
	}
	return res, nil
}

// ApplyCalls is the command Apply runs, for dry runs.
func ApplyCalls(tool []string) ([]string, error) {
	if len(tool) == 0 || tool[0] == "" {
		return nil, fmt.Errorf("%w: set indexer.security_init", ErrNoTool)
	}
	return []string{"run " + strings.Join(tool, " ")}, nil
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// Retry, when set, runs the tool again after a failure for as long as
	// Retry keeps polling (right after a start the node may not take the
	// upload yet); it returns the last failure when it gives up. Nil: one
	// run.
	Retry func(ctx context.Context, what string, attempt func() (bool, error)) error
	// Failed hears each failed attempt that is retried.
	Failed func(attempt int, err error)
}

// Apply uploads the security configuration from the indexer's config
// directory (the init tool with its default options). Success is exit 0
// and the tool's "Done with success".
func Apply(ctx context.Context, run Runner, tool []string, opts ApplyOptions) (InitResult, error) {
	if _, err := ApplyCalls(tool); err != nil {
		return InitResult{}, err
	}
	if opts.Retry == nil {
		return applyOnce(ctx, run, tool, 1)
	}
	var res InitResult
	var last error
	attempts := 0
	err := opts.Retry(ctx, "the security init tool to succeed", func() (bool, error) {
		attempts++
		res, last = applyOnce(ctx, run, tool, attempts)
		if last != nil && opts.Failed != nil {
			opts.Failed(attempts, last)
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return res, fmt.Errorf("after %d attempts: %w", attempts, last)
	}
	return res, err
}

func applyOnce(ctx context.Context, run Runner, tool []string, attempt int) (InitResult, error) {
	res := InitResult{Argv: slices.Clone(tool), Stored: []string{}, Files: []string{}, Attempts: attempt}
	stdout, stderr, code, err := run.Run(ctx, toolEnv(), res.Argv[0], res.Argv[1:]...)
	if err != nil {
		return res, err
	}
	lines := outputLines(stdout, stderr)
	res.Output = tail(lines, 15)
	done := false
	for _, l := range lines {
		if strings.Contains(l, "Done with success") {
			done = true
		}
	}
	if code != 0 || !done {
		return res, &ToolError{Tool: filepath.Base(tool[0]), ExitCode: code, Lines: tail(lines, 5)}
	}
	return res, nil
}
