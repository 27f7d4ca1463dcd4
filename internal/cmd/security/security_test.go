package security_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	securitycmd "github.com/siemctl/siemctl/internal/cmd/security"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/manager/managertest"
)

const newPassword = "N3w-Str0ng.Pass"

// fake hash.sh: refuses -p, reads the password from the -env variable like
// the OpenSearch Hasher, logs its argv.
const hashScript = `#!/bin/sh
echo "$@" >> "$(dirname "$0")/argv.log"
echo "**************************************************************************" >&2
echo "** This tool will be deprecated in the next major release of OpenSearch **" >&2
if [ "$1" != "-env" ]; then echo "Parsing failed.  Reason: Cannot allocate a console" >&2; exit 255; fi
eval "pw=\$$2"
printf '$2y$12$%s\n' "$(printf '%s' "$pw" | sha256sum | cut -c1-53)"
`

// fake indexer-security-init.sh: -backup writes files and SUCC lines for
// securityadmin's types, as the real retrieveFile does: a type named in
// ./absent is "empty source" (its file opened, left empty; exit 255), one
// in ./unread fails on a timeout; ./noindex is a missing security index
// (created, every type empty); ./down refuses the connection first.
const initScript = `#!/bin/bash
d="$(dirname "$0")"
echo "$@" >> "$d/argv.log"
echo "Security Admin v7"
if [ -e "$d/down" ]; then echo "ERR: An unexpected ConnectException occured: Connection refused"; exit 255; fi
echo "Will connect to 127.0.0.1:9200 ... done"
if [ "$1" = "--options" ]; then
  set -- $2
  [ "$1" = "-backup" ] || exit 1
  live="$d/live" rc=0
  if [ -e "$d/noindex" ]; then echo -n ".opendistro_security index does not exists, attempt to create it ... "; echo "done (0-all replicas)"; fi
  for tf in config:config roles:roles rolesmapping:roles_mapping internalusers:internal_users actiongroups:action_groups tenants:tenants nodesdn:nodes_dn allowlist:allowlist audit:audit; do
    t=${tf%%:*}; f=${tf#*:}
    echo "Will retrieve '/$t' into $2/$f.yml"
    : > "$2/$f.yml"
    if [ -e "$d/noindex" ] && [ "$t" != nodesdn ] && [ "$t" != allowlist ] || grep -qx "$t" "$d/absent" 2>/dev/null; then
      echo "   FAIL: Configuration for '$t' failed because of empty source"; rc=255; continue
    fi
    if grep -qx "$t" "$d/unread" 2>/dev/null; then
      echo "   FAIL: Get configuration for '$t' failed because of java.net.SocketTimeoutException: 30,000 milliseconds timeout on connection http-outgoing-0 [ACTIVE]"; rc=255; continue
    fi
    if [ -e "$live/$f.yml" ]; then cp "$live/$f.yml" "$2/$f.yml"; else echo "_meta: {type: $t}" > "$2/$f.yml"; fi
    echo "   SUCC: Configuration for '$t' stored in $2/$f.yml"
  done
  exit $rc
fi
if [ -e "$d/fail" ]; then echo "ERR: An unexpected ConnectException occured: Connection refused"; exit 255; fi
echo "Will update '/config' with /etc/siem-indexer/opensearch-security/config.yml"
echo "   SUCC: Configuration for 'config' created or updated"
echo "Done with success"
`

type env struct {
	cfg, dir string
}

func newEnv(t *testing.T, apiURL, user, password string) env {
	t.Helper()
	d := t.TempDir()
	pw := clitest.WriteSecret(t, d, "pw", password)
	clitest.WriteFile(t, filepath.Join(d, "hash.sh"), hashScript, 0o755)
	clitest.WriteFile(t, filepath.Join(d, "init.sh"), initScript, 0o755)
	cfg := clitest.WriteConfig(t, d, "state_dir: "+d+"/state\n"+
		"indexer: {url: \"http://127.0.0.1:9\", config_dir: "+d+"/conf, password_file: "+pw+", hash_tool: ["+d+"/hash.sh], security_init: ["+d+"/init.sh]}\n"+
		"manager: {api_url: \""+apiURL+"\", username: "+user+", password_file: "+pw+"}\n")
	return env{cfg: cfg, dir: d}
}

func (e env) argv() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "argv.log"))
	return string(b)
}

// run runs `siemctl security --config e.cfg args...` (on a terminal when
// tty, which answers stdin); no password may reach its output or a child's
// argv.
func run(t *testing.T, e env, tty bool, stdin string, args ...string) clitest.Result {
	t.Helper()
	r := clitest.Main(context.Background(), clitest.Group(securitycmd.NewCmdSecurity), tty, stdin, append([]string{"security", "--config", e.cfg}, args...)...)
	clitest.NoSecret(t, "the output or a child's argv", r.Out+r.ErrOut+e.argv(), newPassword, "Secr3t.Pass")
	return r
}

func TestUsersList(t *testing.T) {
	srv := managertest.New(t, managertest.Config{})
	e := newEnv(t, srv.URL, srv.Username(), srv.Password())
	for _, tc := range []struct{ name, format string }{{"users_table", "table"}, {"users_json", "json"}} {
		r := run(t, e, false, "", "api-users", "list", "-o", tc.format)
		if r.Code != 0 {
			t.Fatalf("exit %d %s", r.Code, r.ErrOut)
		}
		golden.Assert(t, tc.name, []byte(r.Out))
	}
}

func TestUsersAdd(t *testing.T) {
	srv := managertest.New(t, managertest.Config{})
	e := newEnv(t, srv.URL, srv.Username(), srv.Password())
	pwFile := clitest.WriteSecret(t, e.dir, "new.pw", newPassword)
	weak := clitest.WriteSecret(t, e.dir, "weak.pw", "alllowercase1!")

	bad := []struct {
		name  string
		stdin string
		tty   bool
		args  []string
		msg   string
	}{
		{"no source", "", false, []string{"api-users", "add", "ops-bot"}, "exactly one of --password-file and --password-stdin"},
		{"both sources", "", false, []string{"api-users", "add", "ops-bot", "--password-stdin", "--password-file", pwFile}, "exactly one"},
		{"short name", "", false, []string{"api-users", "add", "ops", "--password-stdin"}, "4 to 64 characters"},
		{"short password", "Ab1!", false, []string{"api-users", "add", "ops-bot", "--password-stdin"}, "8 to 64 characters long (got 4)"},
		{"no upper", "", false, []string{"api-users", "add", "ops-bot", "--password-file", weak}, "needs an upper case letter"},
		{"no symbol", "Abcdefg12", false, []string{"api-users", "add", "ops-bot", "--password-stdin"}, "needs a symbol"},
		{"stdin is a terminal", "", true, []string{"api-users", "add", "ops-bot", "--password-stdin"}, "stdin is a terminal"},
	}
	for _, tt := range bad {
		r := run(t, e, tt.tty, tt.stdin, tt.args...)
		if r.Code != 2 || !strings.Contains(r.ErrOut, tt.msg) {
			t.Errorf("%s: exit %d %q, want 2 %q", tt.name, r.Code, r.ErrOut, tt.msg)
		}
	}
	if n := srv.Requests.Load(); n != 0 {
		t.Fatalf("requests sent for bad input: %v", srv.Seen())
	}

	// Off a terminal without --yes, a dry run, and while an upgrade holds
	// the host lock: nothing is sent.
	if r := run(t, e, false, newPassword+"\n", "api-users", "add", "ops-bot", "--password-stdin"); r.Code != 2 || !strings.Contains(r.ErrOut, "--yes") {
		t.Errorf("no --yes: exit %d %s", r.Code, r.ErrOut)
	}
	r := run(t, e, false, "", "api-users", "add", "ops-bot", "--password-file", pwFile, "--dry-run")
	if r.Code != 0 || !strings.HasPrefix(r.Out, `POST /security/users {"password":"[redacted]","username":"ops-bot"}`) {
		t.Errorf("dry run: exit %d %q %s", r.Code, r.Out, r.ErrOut)
	}
	held := clitest.HoldLock(t, filepath.Join(e.dir, "state"))
	if r := run(t, e, false, "", "api-users", "add", "ops-bot", "--password-file", pwFile, "--yes"); r.Code != 6 || !strings.Contains(r.ErrOut, "siemctl upgrade apply --to 4.10.0") {
		t.Errorf("locked: exit %d %s", r.Code, r.ErrOut)
	}
	_ = held.Release()
	if n := srv.Requests.Load(); n != 0 {
		t.Fatalf("requests sent without --yes, in a dry run or under the lock: %v", srv.Seen())
	}

	r = run(t, e, false, newPassword+"\n", "api-users", "add", "ops-bot", "--password-stdin", "-o", "json", "--yes")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "users_add_json", []byte(r.Out))
	r = run(t, e, false, "", "api-users", "add", "ops-bot", "--password-file", pwFile, "--yes")
	if r.Code != 1 || !strings.Contains(r.ErrOut, `API user already exists: "ops-bot"`) {
		t.Errorf("duplicate: exit %d %s", r.Code, r.ErrOut)
	}
	if n := len(srv.SeenPath("POST /security/users")); n != 1 {
		t.Errorf("%d POSTs", n)
	}
	_ = os.Chmod(pwFile, 0o644)
	r = run(t, e, false, "", "api-users", "add", "ops-bot2", "--password-file", pwFile, "--yes")
	if r.Code != 0 || !strings.Contains(r.ErrOut, "readable by group or others") || !strings.Contains(r.Out, "created API user ops-bot2") {
		t.Errorf("loose file: exit %d %s %s", r.Code, r.Out, r.ErrOut)
	}

	// A non-administrative configured user is refused before the POST.
	srv2 := managertest.New(t, managertest.Config{Username: "ops-bot2", Password: newPassword})
	srv2.Handle("GET /security/users", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"affected_items":[{"id":1,"username":"wazuh","allow_run_as":true,"roles":[1]},{"id":100,"username":"ops-bot2","allow_run_as":false,"roles":[3]}],"total_affected_items":2,"total_failed_items":0,"failed_items":[]},"message":"All specified users were returned","error":0}`))
	})
	e2 := newEnv(t, srv2.URL, "ops-bot2", newPassword)
	r = run(t, e2, false, "Another-P4ss!", "api-users", "add", "ops-bot3", "--password-stdin", "--yes")
	if r.Code != 4 || !strings.Contains(r.ErrOut, "not an administrator") || len(srv2.SeenPath("POST /security/users")) != 0 {
		t.Errorf("non-admin: exit %d %s", r.Code, r.ErrOut)
	}
}

func TestIndexerHash(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:9", "wazuh", "Secr3t.Pass")
	r := run(t, e, false, newPassword+"\n", "indexer", "hash")
	if r.Code != 0 || !strings.HasPrefix(r.Out, "$2y$12$") {
		t.Fatalf("exit %d %q %s", r.Code, r.Out, r.ErrOut)
	}
	first := r.Out
	pwFile := filepath.Join(e.dir, "p")
	_ = os.WriteFile(pwFile, []byte(newPassword), 0o600)
	r = run(t, e, false, "", "indexer", "hash", "--password-file", pwFile, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Out, `"hash": "`+strings.TrimSpace(first)+`"`) {
		t.Errorf("same password, other source: %s vs %s", r.Out, first)
	}
	if !strings.Contains(e.argv(), "-env SIEMCTL_HASH_PASSWORD") {
		t.Errorf("argv %q", e.argv())
	}
	if r := run(t, e, false, "", "indexer", "hash"); r.Code == 0 || !strings.Contains(r.ErrOut, "empty password") {
		t.Errorf("empty: exit %d %s", r.Code, r.ErrOut)
	}
}

func TestIndexerBackupApply(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:9", "wazuh", "Secr3t.Pass")
	dir := filepath.Join(e.dir, "backup")
	r := run(t, e, false, "", "indexer", "backup", dir)
	if r.Code != 0 || !strings.Contains(r.Out, "backed up config, roles, rolesmapping, internalusers, actiongroups, tenants, nodesdn, allowlist, audit into "+dir+" (9 files)") {
		t.Fatalf("exit %d %s %s", r.Code, r.Out, r.ErrOut)
	}
	if got := strings.TrimSpace(e.argv()); got != "--options -backup "+dir+" -icl -nhnv" {
		t.Errorf("argv %q", got)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("backup dir %v %v", st, err)
	}
	for _, d := range []string{"relative/dir", "/tmp/with space"} {
		if r := run(t, e, false, "", "indexer", "backup", d); r.Code != 2 {
			t.Errorf("%q: exit %d", d, r.Code)
		}
	}
	_ = os.Remove(filepath.Join(e.dir, "argv.log"))
	if r := run(t, e, false, "", "indexer", "apply"); r.Code != 2 || e.argv() != "" {
		t.Errorf("apply without --yes: exit %d argv %q", r.Code, e.argv())
	}
	r = run(t, e, false, "", "indexer", "apply", "--dry-run")
	if r.Code != 0 || !strings.Contains(r.Out, "run "+e.dir+"/init.sh\n") || strings.Contains(e.argv(), "\n\n") || strings.Contains(r.Out, "would remove") {
		t.Errorf("apply --dry-run: exit %d %q argv %q", r.Code, r.Out, e.argv())
	}
	_ = os.Remove(filepath.Join(e.dir, "argv.log"))
	held := clitest.HoldLock(t, filepath.Join(e.dir, "state"))
	if r := run(t, e, false, "", "indexer", "apply", "--yes"); r.Code != 6 || !strings.Contains(r.ErrOut, "run 20261121T101500Z-3f9a1c") || e.argv() != "" {
		t.Errorf("apply under the lock: exit %d %s argv %q", r.Code, r.ErrOut, e.argv())
	}
	_ = held.Release()
	r = run(t, e, true, "y\n", "indexer", "apply")
	if r.Code != 0 || !strings.Contains(r.Out, "Done with success") || !strings.HasSuffix(e.argv(), "-icl -nhnv\n\n") {
		t.Errorf("apply: exit %d %s argv %q", r.Code, r.ErrOut, e.argv())
	}
	_ = os.WriteFile(filepath.Join(e.dir, "fail"), nil, 0o600)
	r = run(t, e, false, "", "indexer", "apply", "--yes")
	if r.Code != 1 || !strings.Contains(r.ErrOut, "Connection refused") {
		t.Errorf("failing apply: exit %d %s", r.Code, r.ErrOut)
	}
}

// The live configuration (what securityadmin -backup writes) holds a user,
// a role and a mapping created through the REST API that the files lack.
const (
	liveUsers = `---
_meta:
  type: "internalusers"
  config_version: 2
admin:
  hash: "$2y$12$abc"
  reserved: true
  backend_roles:
  - "admin"
kibanaserver:
  hash: "$2y$12$def"
  reserved: true
alice:
  hash: "$2y$12$ghi"
  reserved: false
  backend_roles: []
  attributes: {}
  description: "made with PUT _plugins/_security/api/internalusers/alice"
`
	fileUsers = `---
_meta:
  type: "internalusers"
  config_version: 2
admin:
  hash: "$2y$12$abc"
  reserved: true
kibanaserver:
  hash: "$2y$12$def"
  reserved: true
`
	liveMapping = `_meta: {type: "rolesmapping", config_version: 2}
all_access: {reserved: false, backend_roles: ["admin"]}
soc_readers: {reserved: false, users: ["alice"]}
`
	fileMapping = `_meta: {type: "rolesmapping", config_version: 2}
all_access: {reserved: false, backend_roles: ["admin"]}
`
)

func TestIndexerApplyKeepsLiveObjects(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:9", "wazuh", "Secr3t.Pass")
	clitest.WriteFile(t, filepath.Join(e.dir, "live/internal_users.yml"), liveUsers, 0o600)
	clitest.WriteFile(t, filepath.Join(e.dir, "live/roles_mapping.yml"), liveMapping, 0o600)
	clitest.WriteFile(t, filepath.Join(e.dir, "conf/opensearch-security/internal_users.yml"), fileUsers, 0o600)
	clitest.WriteFile(t, filepath.Join(e.dir, "conf/opensearch-security/roles_mapping.yml"), fileMapping, 0o600)
	applied := func() bool { return strings.Contains(e.argv(), "\n\n") || e.argv() == "\n" }

	// --dry-run names them and changes nothing
	r := run(t, e, false, "", "indexer", "apply", "--dry-run")
	if r.Code != 0 || !strings.Contains(r.Out, "would remove internal_users alice (live, not in "+e.dir+"/conf/opensearch-security/internal_users.yml)") ||
		!strings.Contains(r.Out, "would remove roles_mapping soc_readers") || applied() {
		t.Errorf("dry run: exit %d %q argv %q", r.Code, r.Out, e.argv())
	}
	// --yes alone refuses, naming them, the backup and both ways out
	r = run(t, e, false, "", "indexer", "apply", "--yes")
	if r.Code != 3 || !strings.Contains(r.ErrOut, "internal_users alice, roles_mapping soc_readers") || !strings.Contains(r.ErrOut, "--remove-live-objects") ||
		!strings.Contains(r.ErrOut, e.dir+"/state/security-backups/") || applied() {
		t.Errorf("--yes: exit %d %s argv %q", r.Code, r.ErrOut, e.argv())
	}
	ents, _ := os.ReadDir(filepath.Join(e.dir, "state/security-backups"))
	if len(ents) != 1 {
		t.Fatalf("backups %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "state/security-backups", ents[0].Name(), "internal_users.yml")); string(b) != liveUsers {
		t.Errorf("the live users are not backed up: %q", b)
	}
	// on a terminal the question names them; no declines
	r = run(t, e, true, "n\n", "indexer", "apply")
	if r.Code == 0 || !strings.Contains(r.ErrOut, "REMOVES 2 object(s)") || !strings.Contains(r.ErrOut, "alice") || applied() {
		t.Errorf("declined: exit %d %s argv %q", r.Code, r.ErrOut, e.argv())
	}
	// the files carry the live objects: nothing to remove, --yes applies
	clitest.WriteFile(t, filepath.Join(e.dir, "conf/opensearch-security/internal_users.yml"), liveUsers, 0o600)
	clitest.WriteFile(t, filepath.Join(e.dir, "conf/opensearch-security/roles_mapping.yml"), liveMapping, 0o600)
	r = run(t, e, false, "", "indexer", "apply", "--yes", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Out, `"removed": []`) || !strings.Contains(r.Out, `"live_backup": "`+e.dir+"/state/security-backups/") || !applied() {
		t.Errorf("nothing removed: exit %d %s %s argv %q", r.Code, r.Out, r.ErrOut, e.argv())
	}
	// removing knowingly
	_ = os.Remove(filepath.Join(e.dir, "argv.log"))
	clitest.WriteFile(t, filepath.Join(e.dir, "conf/opensearch-security/internal_users.yml"), fileUsers, 0o600)
	r = run(t, e, false, "", "indexer", "apply", "--yes", "--remove-live-objects")
	if r.Code != 0 || !strings.Contains(r.Out, "removed internal_users alice") || !applied() {
		t.Errorf("--remove-live-objects: exit %d %s %s argv %q", r.Code, r.Out, r.ErrOut, e.argv())
	}
}

// A backup of the live configuration that fails, as securityadmin -backup
// fails on real clusters: the apply goes on only over what has nothing
// live to lose, and never overwrites unseen what it could not back up.
func TestIndexerApplyLiveBackupFails(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:9", "wazuh", "Secr3t.Pass")
	conf := filepath.Join(e.dir, "conf/opensearch-security")
	for _, f := range []string{"config.yml", "roles.yml", "roles_mapping.yml", "internal_users.yml", "action_groups.yml", "tenants.yml", "nodes_dn.yml", "audit.yml"} {
		clitest.WriteFile(t, filepath.Join(conf, f), "_meta: {type: x, config_version: 2}\n", 0o600)
	}
	clitest.WriteFile(t, filepath.Join(conf, "internal_users.yml"), fileUsers, 0o600)
	applied := func() bool { return strings.Contains(e.argv(), "\n\n") || e.argv() == "\n" }
	reset := func() {
		for _, f := range []string{"argv.log", "absent", "unread", "noindex", "down"} {
			_ = os.Remove(filepath.Join(e.dir, f))
		}
	}
	lastBackup := func() string {
		ents, _ := os.ReadDir(filepath.Join(e.dir, "state/security-backups"))
		if len(ents) == 0 {
			return ""
		}
		return filepath.Join(e.dir, "state/security-backups", ents[len(ents)-1].Name())
	}

	// a brand-new cluster: no audit document in the security index; the
	// rest is backed up, audit is named with nothing to keep, the apply goes on
	clitest.WriteFile(t, filepath.Join(e.dir, "absent"), "audit\n", 0o600)
	r := run(t, e, false, "", "indexer", "apply", "--yes")
	if r.Code != 0 || !applied() || !strings.Contains(r.ErrOut, "not in the live configuration, nothing to keep: audit (empty source: the security index holds none)") ||
		!strings.Contains(r.Out, "(not backed up: audit (empty source") {
		t.Errorf("audit absent: exit %d %s %s argv %q", r.Code, r.Out, r.ErrOut, e.argv())
	}
	if _, err := os.Stat(filepath.Join(lastBackup(), "audit.yml")); !os.IsNotExist(err) {
		t.Errorf("the tool's empty audit.yml is left in the backup as if it were the live audit configuration: %v", err)
	}
	if _, err := os.Stat(filepath.Join(lastBackup(), "internal_users.yml")); err != nil {
		t.Errorf("the users are not backed up: %v", err)
	}

	// the security index missing (not initialised): the tool creates it
	// empty; nothing live to keep, the apply is the fix
	reset()
	clitest.WriteFile(t, filepath.Join(e.dir, "noindex"), "", 0o600)
	r = run(t, e, false, "", "indexer", "apply", "--yes", "-o", "json")
	if r.Code != 0 || !applied() || !strings.Contains(r.ErrOut, "the security index did not exist") || !strings.Contains(r.Out, `"not_backed_up": [`) ||
		!strings.Contains(r.Out, `"type": "internalusers"`) {
		t.Errorf("no index: exit %d %s %s", r.Code, r.Out, r.ErrOut)
	}

	// the users could not be read (a timeout): applying internal_users.yml
	// would overwrite them unseen; refused, named, both ways on
	reset()
	clitest.WriteFile(t, filepath.Join(e.dir, "unread"), "internalusers\n", 0o600)
	r = run(t, e, false, "", "indexer", "apply", "--yes")
	if r.Code != 3 || applied() || !strings.Contains(r.ErrOut, "could not be backed up in full: internalusers (java.net.SocketTimeoutException") ||
		!strings.Contains(r.ErrOut, "(internal_users.yml)") || !strings.Contains(r.ErrOut, "--remove-live-objects") || !strings.Contains(r.ErrOut, "nothing was changed") {
		t.Errorf("users unread: exit %d %s argv %q", r.Code, r.ErrOut, e.argv())
	}
	// --dry-run: two calls counted; the refusal a note after them
	r = run(t, e, false, "", "indexer", "apply", "--dry-run")
	if r.Code != 0 || !strings.Contains(r.ErrOut, "would make 2 call(s)") || !strings.Contains(r.Out, "would refuse: the live security configuration could not be backed up in full: internalusers") {
		t.Errorf("dry run, users unread: exit %d %q %q", r.Code, r.Out, r.ErrOut)
	}
	// knowingly: the files win
	_ = os.Remove(filepath.Join(e.dir, "argv.log"))
	r = run(t, e, false, "", "indexer", "apply", "--yes", "--remove-live-objects")
	if r.Code != 0 || !applied() || !strings.Contains(r.ErrOut, "overwritten by the files anyway (--remove-live-objects): internalusers") {
		t.Errorf("users unread, --remove-live-objects: exit %d %s %s", r.Code, r.Out, r.ErrOut)
	}

	// the tool cannot connect: nothing read, every file unseen; refused
	reset()
	clitest.WriteFile(t, filepath.Join(e.dir, "down"), "", 0o600)
	r = run(t, e, false, "", "indexer", "apply", "--yes")
	if r.Code != 3 || applied() || !strings.Contains(r.ErrOut, "not retrieved: the tool failed: ERR: An unexpected ConnectException occured: Connection refused") {
		t.Errorf("tool down: exit %d %s argv %q", r.Code, r.ErrOut, e.argv())
	}
}

func TestIndexerApplyDryRunCounts(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:9", "wazuh", "Secr3t.Pass")
	clitest.WriteFile(t, filepath.Join(e.dir, "live/internal_users.yml"), liveUsers, 0o600)
	clitest.WriteFile(t, filepath.Join(e.dir, "conf/opensearch-security/internal_users.yml"), fileUsers, 0o600)
	r := run(t, e, false, "", "indexer", "apply", "--dry-run")
	if r.Code != 0 || !strings.Contains(r.ErrOut, "would make 2 call(s)") || !strings.Contains(r.Out, "would remove internal_users alice") {
		t.Errorf("dry run: exit %d %q %q", r.Code, r.Out, r.ErrOut)
	}
	r = run(t, e, false, "", "indexer", "apply", "--dry-run", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Out, `"notes": [`) || strings.Count(r.Out, `"run `) != 2 {
		t.Errorf("dry run json: exit %d %s", r.Code, r.Out)
	}
}
