//go:build e2e

package diagnose_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/lab/e2e"
)

// handRow is one line of the faults-by-hand table: cause | what services start said | what
// health said | the fix followed | result.
type handRow struct{ cause, start, health, fix, result string }

// moreFaultsByHand are TestE2EFaultsByHand's faults beyond the indexer's files, made on the same
// lab as an admin makes them (a file edited, a drop-in written, the security REST API used): each
// asserts what siemctl says and its exit class, follows the printed fix, checks the result and
// leaves the lab as it found it.
func moreFaultsByHand(t *testing.T, l *e2e.Lab, httpPort int) {
	var rows []handRow
	health := func(checks string) string {
		h := l.Siemctl("health", "--check", checks)
		if h.Code == 0 {
			return "OK (exit 0)"
		}
		for _, line := range strings.Split(h.Stdout, "\n") {
			if f := strings.SplitN(line, "\t", 3); len(f) == 3 && (f[0] == "CRIT" || f[0] == "WARN") {
				return fmt.Sprintf("exit %d: %s %s: %s", h.Code, f[0], f[1], f[2])
			}
		}
		return fmt.Sprintf("exit %d", h.Code)
	}
	said := func(r e2e.Result) string {
		return fmt.Sprintf("exit %d: %s", r.Code, strings.TrimPrefix(cmpOr(firstWith(r.Stderr, "cause: "), firstWith(r.Stderr, "error: ")), "cause: "))
	}
	expect := func(t *testing.T, r e2e.Result, code int, want ...string) {
		t.Helper()
		if r.Code != code {
			t.Errorf("exit %d, want %d:\n%s%s", r.Code, code, r.Stdout, r.Stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.Stderr, w) {
				t.Errorf("lacks %q:\n%s", w, r.Stderr)
			}
		}
	}

	t.Run("dashboard yml duplicated key", func(t *testing.T) {
		l := l.For(t)
		file := l.Path(l.Profile.DashboardConfig)
		orig, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(file, orig, 0o644)
		// the admin adds a key the file already has (its first setting), at its end
		var first string
		for _, line := range strings.Split(string(orig), "\n") {
			if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") && !strings.HasPrefix(line, " ") && strings.Contains(s, ": ") {
				first = s
				break
			}
		}
		text := strings.TrimRight(string(orig), "\n") + "\n"
		line := strings.Count(text, "\n") + 1
		if err := os.WriteFile(file, []byte(text+first+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := l.Siemctl("services", "restart", "dashboard", "--yes")
		at := fmt.Sprintf("%s line %d", file, line)
		expect(t, r, 1, at+" does not parse (YAML): duplicated mapping key", "fix: correct "+at)
		h := health("units,dashboard")
		// the fix: correct that line (the duplicate goes)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		after := l.Siemctl("services", "start", "dashboard", "--yes")
		if after.Code != 0 {
			t.Fatalf("services start dashboard after the fix: exit %d\n%s", after.Code, after.Stderr)
		}
		rows = append(rows, handRow{"dashboard YAML: a key added twice by hand", said(r), h, "removed the duplicate at the line named", "services start dashboard exit 0"})
	})

	t.Run("shipper password changed", func(t *testing.T) {
		l := l.For(t)
		sh := l.Profile.Shipper
		secret, err := os.ReadFile(l.Path("etc/siemctl/secrets/indexer"))
		if err != nil {
			t.Fatal(err)
		}
		password := strings.TrimSpace(string(secret))
		keystore := func(pw string) {
			t.Helper()
			cmd := exec.Command(l.Path(sh.Binary), "--path.config", l.Path(sh.ConfigDir), "keystore", "add", "password", "--stdin", "--force")
			cmd.Stdin = strings.NewReader(pw)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("shipper keystore add password: %v\n%s", err, out)
			}
		}
		// the admin puts another password into the shipper's keystore (a rotation half done)
		keystore("Not-the-Passw0rd")
		restored := false
		defer func() {
			if !restored {
				keystore(password)
				l.Siemctl("services", "restart", "shipper", "--yes")
			}
		}()
		r := l.Siemctl("services", "restart", "shipper", "--yes")
		expect(t, r, 4, "401", "keystore add password")
		if strings.Contains(r.Stderr, "hint: check the username and the password source in the config") {
			t.Errorf("the hint blames siemctl's own credentials:\n%s", r.Stderr)
		}
		h := health("shipper")
		// the fix: the indexer user's current password into the keystore, on the command's stdin
		m := regexp.MustCompile("`([^`]*keystore add password[^`]*)`").FindStringSubmatch(firstWith(r.Stderr, "fix: "))
		if m == nil {
			t.Fatalf("no keystore command in the fix:\n%s", r.Stderr)
		}
		cmd := exec.Command("sh", "-c", m[1])
		cmd.Stdin = strings.NewReader(password)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", m[1], err, out)
		}
		restored = true
		after := l.Siemctl("services", "restart", "shipper", "--yes")
		if after.Code != 0 {
			t.Fatalf("services restart shipper after the fix: exit %d\n%s", after.Code, after.Stderr)
		}
		rows = append(rows, handRow{"the shipper's keystore password changed by hand", said(r), h, m[1] + " (the indexer user's password on stdin)", "services restart shipper exit 0"})
	})

	t.Run("user made through the security REST API", func(t *testing.T) {
		l := l.For(t)
		rest := indexerREST(t, l, httpPort)
		admin, err := os.ReadFile(l.Path("etc/siemctl/secrets/indexer"))
		if err != nil {
			t.Fatal(err)
		}
		adminPW := strings.TrimSpace(string(admin))
		const user, userPW = "oncall-byhand", "Kq7#vX2!pLm9@Tz4wR-oncall"
		secDir := l.Path(l.Profile.IndexerConf(), "opensearch-security")
		saved := map[string][]byte{}
		names, err := os.ReadDir(secDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if b, err := os.ReadFile(filepath.Join(secDir, n.Name())); err == nil && !n.IsDir() {
				saved[n.Name()] = b
			}
		}
		defer func() {
			rest("DELETE", "/_plugins/_security/api/internalusers/"+user, "admin", adminPW, "")
			for n, b := range saved {
				_ = os.WriteFile(filepath.Join(secDir, n), b, 0o640)
			}
		}()
		if code, body := rest("PUT", "/_plugins/_security/api/internalusers/"+user, "admin", adminPW,
			`{"password":"`+userPW+`","backend_roles":["readall"],"description":"made by hand through the REST API"}`); code != 200 && code != 201 {
			t.Fatalf("PUT internalusers/%s: %d %s", user, code, body)
		}
		login := func() int {
			code, _ := rest("GET", "/_plugins/_security/authinfo", user, userPW, "")
			return code
		}
		if c := login(); c != 200 {
			t.Fatalf("the new user's login: %d", c)
		}
		dry := l.Siemctl("security", "indexer", "apply", "--dry-run")
		if dry.Code != 0 || !strings.Contains(dry.Stdout+dry.Stderr, "would remove internal_users "+user) {
			t.Errorf("apply --dry-run: exit %d, does not name %s as removed:\n%s%s", dry.Code, user, dry.Stdout, dry.Stderr)
		}
		r := l.Siemctl("security", "indexer", "apply", "--yes")
		expect(t, r, 3, "would remove 1 object(s) created through the security REST API", "internal_users "+user, "nothing was changed")
		if c := login(); c != 200 {
			t.Fatalf("after the refused apply the user's login answers %d, want 200", c)
		}
		h := health("indexer.api")
		// the fix that keeps it: make the files the live configuration, then apply
		m := regexp.MustCompile("`(siemctl security indexer backup [^`]+)`").FindStringSubmatch(r.Stderr)
		if m == nil {
			t.Fatalf("no backup command in the refusal:\n%s", r.Stderr)
		}
		if b := l.Siemctl(strings.Fields(m[1])[1:]...); b.Code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", m[1], b.Code, b.Stdout, b.Stderr)
		}
		again := l.Siemctl("security", "indexer", "apply", "--yes")
		if again.Code != 0 {
			t.Fatalf("apply after the backup into the files: exit %d\n%s%s", again.Code, again.Stdout, again.Stderr)
		}
		if c := login(); c != 200 {
			t.Fatalf("after the apply the user's login answers %d, want 200", c)
		}
		rows = append(rows, handRow{"a user made with PUT _plugins/_security/api/internalusers, then security indexer apply",
			fmt.Sprintf("apply --dry-run: would remove internal_users %s; apply --yes: exit %d, nothing changed", user, r.Code), h,
			m[1] + ", then security indexer apply --yes", "apply exit 0; the user's login 200 throughout"})
	})

	reload := func(t *testing.T) {
		t.Helper()
		// a loaded machine's systemd may take long over a reload
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		um, err := units.New(ctx, "unix:path="+filepath.Join(l.Dir, "rt/systemd/private"))
		if err != nil {
			t.Fatal(err)
		}
		defer um.Close()
		if err := um.DaemonReload(ctx); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("TLS key its service user cannot read", func(t *testing.T) {
		l := l.For(t)
		key := l.Path(l.Profile.IndexerConf(), "certs", "indexer-key.pem")
		info, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		defer func() {
			os.Chown(key, int(st.Uid), int(st.Gid))
			os.Chmod(key, info.Mode().Perm())
		}()
		// the admin copies a renewed key in as root and leaves it root's, mode 0600
		if err := os.Chown(key, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(key, 0o600); err != nil {
			t.Fatal(err)
		}
		r := l.Siemctl("services", "restart", "indexer", "--yes")
		expect(t, r, 4, "the indexer's service user cannot read its TLS file "+key)
		h := health(healthChecks)
		// the fix: the command it prints, that file alone
		m := regexp.MustCompile("`(chown [^`]+)`").FindStringSubmatch(firstWith(r.Stderr, "fix: "))
		if m == nil || strings.Contains(m[1], "-R") || !strings.Contains(m[1], key) {
			t.Fatalf("no chown of the key alone in the fix:\n%s", r.Stderr)
		}
		if out, err := exec.Command("sh", "-c", m[1]).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", m[1], err, out)
		}
		mustStart(t, func() e2e.Result { return l.Siemctl("services", "start", "indexer", "--yes") })
		rows = append(rows, handRow{"the indexer's TLS key chowned to root, mode 0600", said(r), h, m[1] + ", services start indexer", "started"})
	})

	t.Run("drop-in ExecStart to a missing program", func(t *testing.T) {
		l := l.For(t)
		unit := l.Profile.IndexerUnit()
		dropIn := l.Path("etc/systemd/system", unit+".d", "50-admin.conf")
		if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
			t.Fatal(err)
		}
		exe := "/" + l.Profile.IndexerHome() + "/bin/opensearch-moved"
		if err := os.WriteFile(dropIn, []byte("# an admin's override\n[Service]\nExecStart=\nExecStart="+exe+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		removed := false
		defer func() {
			if !removed {
				os.Remove(dropIn)
				reload(t)
			}
		}()
		reload(t)
		r := l.Siemctl("services", "restart", "indexer", "--yes")
		expect(t, r, 1, "could not execute "+unit+"'s ExecStart (exit status 203/EXEC", unit+".d/50-admin.conf:4 (ExecStart="+exe+")",
			"then systemctl daemon-reload")
		h := health(healthChecks)
		// the fix: remove that ExecStart (the drop-in holds nothing else), daemon-reload, start
		if !strings.Contains(firstWith(r.Stderr, "fix: "), "50-admin.conf:4") {
			t.Errorf("the fix does not name the drop-in:\n%s", r.Stderr)
		}
		if err := os.Remove(dropIn); err != nil {
			t.Fatal(err)
		}
		removed = true
		reload(t)
		mustStart(t, func() e2e.Result { return l.Siemctl("services", "start", "indexer", "--yes") })
		rows = append(rows, handRow{"a drop-in's ExecStart= to a program that is not there", said(r), h, "removed the drop-in, daemon-reload, services start indexer", "started"})
	})

	t.Run("drop-in heap larger than the host", func(t *testing.T) {
		l := l.For(t)
		unit := l.Profile.IndexerUnit()
		dropIn := l.Path("etc/systemd/system", unit+".d", "60-heap.conf")
		if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
			t.Fatal(err)
		}
		// an admin "gives it more heap" in the unit, over jvm.options, the value unquoted: systemd
		// passes -Xms100g alone (-Xmx100g is no assignment), over jvm.options' -Xmx512m
		if err := os.WriteFile(dropIn, []byte("[Service]\nEnvironment=OPENSEARCH_JAVA_OPTS=-Xms100g -Xmx100g\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		removed := false
		defer func() {
			if !removed {
				os.Remove(dropIn)
				reload(t)
			}
		}()
		reload(t)
		r := l.Siemctl("services", "restart", "indexer", "--yes")
		expect(t, r, 1, "the JVM refused its options: -Xms100g is above -Xmx512m", "-Xms100g set in ", unit+".d/60-heap.conf: systemd ignores -Xmx100g")
		fix := firstWith(r.Stderr, "fix: ")
		for _, w := range []string{"remove -Xms/-Xmx from Environment=OPENSEARCH_JAVA_OPTS in ", unit + ".d/60-heap.conf", "systemctl daemon-reload"} {
			if !strings.Contains(fix, w) {
				t.Errorf("the fix lacks %q: %s", w, fix)
			}
		}
		h := health(healthChecks)
		// the fix: the drop-in's Environment= goes (the drop-in holds nothing else), daemon-reload, start
		if err := os.Remove(dropIn); err != nil {
			t.Fatal(err)
		}
		removed = true
		reload(t)
		mustStart(t, func() e2e.Result { return l.Siemctl("services", "start", "indexer", "--yes") })
		rows = append(rows, handRow{"a drop-in's Environment=OPENSEARCH_JAVA_OPTS=-Xms100g -Xmx100g (unquoted)", said(r), h, "removed the drop-in, daemon-reload, services start indexer", "started"})
	})

	t.Run("path.data moved to a new empty directory", func(t *testing.T) {
		l := l.For(t)
		yml := l.Path(l.Profile.IndexerConf(), "opensearch.yml")
		orig, err := os.ReadFile(yml)
		if err != nil {
			t.Fatal(err)
		}
		data := l.Path("var/lib", l.Profile.Indexer)
		from := "path.data: " + data
		if !strings.Contains(string(orig), from) {
			t.Fatalf("%s has no %q", yml, from)
		}
		// siemctl's snapshot (the hourly timer's) has seen the cluster with its data: taken once the
		// node answers with its indices (the case before may have left its security plugin loading)
		poll(l, 3*time.Minute, 3*time.Second, func(h e2e.Result) bool { return h.Code == 0 }, "health", "--check", "indexer.api")
		if r := l.Siemctl("snapshot", "capture"); r.Code != 0 {
			t.Fatalf("snapshot capture: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// an admin moving the data to a new disk: an empty directory for the service user, path.data
		// pointed at it, the indexer started; it comes up green on nothing
		st, err := os.Stat(data)
		if err != nil {
			t.Fatal(err)
		}
		moved := data + "-newdisk"
		if err := os.Mkdir(moved, 0o750); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(moved)
		sys := st.Sys().(*syscall.Stat_t)
		if err := os.Chown(moved, int(sys.Uid), int(sys.Gid)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(yml, []byte(strings.Replace(string(orig), from, "path.data: "+moved, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		restored := false
		defer func() {
			if !restored {
				os.WriteFile(yml, orig, 0o644)
				l.Siemctl("services", "restart", "indexer", "--yes")
			}
		}()
		r := l.Siemctl("services", "restart", "indexer", "--yes")
		if r.Code != 0 && r.Code != 8 {
			t.Fatalf("services restart on the new directory: exit %d\n%s", r.Code, r.Stderr)
		}
		// health: CRIT with the evidence, once the new cluster answers (UNKNOWN while it starts)
		// with the evidence
		h := poll(l, 4*time.Minute, 5*time.Second, func(h e2e.Result) bool { return h.Code == 2 }, "health", "--check", "indexer.data", "-o", "json")
		fix := fmt.Sprintf("set path.data back to %s in %s", data, yml)
		// (from the files while the empty node does not answer, its security index not there either;
		// from the cluster's answer where it does: the same evidence and fix)
		for _, want := range []string{"path.data " + data + " in snapshot", moved + " now", fix} {
			if !strings.Contains(h.Stdout, want) {
				t.Errorf("health --check indexer.data (exit %d) lacks %q:\n%s", h.Code, want, h.Stdout)
			}
		}
		if h.Code != 2 {
			t.Fatalf("health --check indexer.data: exit %d, want 2 (CRIT)\n%s", h.Code, h.Stdout)
		}
		said := health("indexer.data")
		// indexer.api, once the empty node answers "Security not initialized": not the security
		// apply (it would initialise the empty directory) but the data's fix
		api := poll(l, 3*time.Minute, 5*time.Second, func(h e2e.Result) bool { return strings.Contains(h.Stdout, "not initialised") }, "health", "--check", "indexer.api")
		if !strings.Contains(api.Stdout, "the node runs without its data") || !strings.Contains(api.Stdout, fix) || strings.Contains(api.Stdout, "security indexer apply") {
			t.Errorf("health --check indexer.api on the empty directory: exit %d\n%s", api.Code, api.Stdout)
		}
		// the fix as printed: path.data back, restart; the data is in view again
		if err := os.WriteFile(yml, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		restored = true
		after := l.Siemctl("services", "restart", "indexer", "--yes")
		if after.Code != 0 && after.Code != 8 {
			t.Fatalf("services restart indexer after the fix: exit %d\n%s", after.Code, after.Stderr)
		}
		ok := poll(l, 4*time.Minute, 5*time.Second, func(h e2e.Result) bool { return h.Code == 0 }, "health", "--check", "indexer.data")
		if ok.Code != 0 || !strings.Contains(ok.Stdout, "holds every index and document") {
			t.Errorf("after the fix: health --check indexer.data exit %d\n%s", ok.Code, ok.Stdout)
		}
		rows = append(rows, handRow{"path.data pointed at a new empty directory (a disk move)", fmt.Sprintf("exit %d (the indexer starts on nothing)", r.Code), said,
			"set path.data back, services restart indexer", fmt.Sprintf("health --check indexer.data exit %d: %s", ok.Code, firstWith(ok.Stdout, "OK"))})
	})

	t.Run("http.port moved", func(t *testing.T) {
		l := l.For(t)
		yml := l.Path(l.Profile.IndexerConf(), "opensearch.yml")
		orig, err := os.ReadFile(yml)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		moved := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		from := "http.port: " + strconv.Itoa(httpPort)
		if !strings.Contains(string(orig), from) {
			t.Fatalf("%s has no %q", yml, from)
		}
		if err := os.WriteFile(yml, []byte(strings.Replace(string(orig), from, "http.port: "+strconv.Itoa(moved), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		restored := false
		defer func() {
			if !restored {
				os.WriteFile(yml, orig, 0o644)
				l.Siemctl("services", "restart", "indexer", "--yes")
			}
		}()
		// a short start wait: the cause is named from the configuration at its end
		short := *l
		short.Env = append(append([]string{}, l.Env...), "SIEMCTL_INDEXER_START_WAIT=20s")
		began := time.Now()
		r := short.Siemctl("services", "restart", "indexer", "--yes")
		t.Logf("services restart with http.port moved: exit %d after %s", r.Code, time.Since(began).Round(time.Second))
		expect(t, r, 2, fmt.Sprintf("siemctl's indexer.url https://127.0.0.1:%d asks port %d", httpPort, httpPort),
			fmt.Sprintf("fix: set http.port: %d in %s again", httpPort, yml))
		h := health("indexer.api")
		// the fix: set http.port back, restart
		if err := os.WriteFile(yml, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		restored = true
		after := l.Siemctl("services", "restart", "indexer", "--yes")
		if after.Code != 0 && (after.Code != 8 || !strings.Contains(after.Stderr, "is still starting")) {
			t.Fatalf("services restart indexer after the fix: exit %d\n%s", after.Code, after.Stderr)
		}
		rows = append(rows, handRow{"http.port moved in opensearch.yml", said(r), h, fmt.Sprintf("set http.port: %d back, services restart indexer", httpPort), fmt.Sprintf("exit %d", after.Code)})
	})

	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.cause, r.start, r.health, r.fix, r.result)
	}
	t.Logf("cause | services start | health | fix followed | result\n%s", b.String())
}

// poll runs siemctl with args every interval until done says so or limit passes, and returns the
// last result (the caller asserts on it).
func poll(l *e2e.Lab, limit, every time.Duration, done func(e2e.Result) bool, args ...string) e2e.Result {
	deadline := time.Now().Add(limit)
	for {
		r := l.Siemctl(args...)
		if done(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(every)
	}
}

// indexerREST calls the lab's indexer as an admin does with curl: over its CA, with a user's
// basic credentials; it returns the status and body.
func indexerREST(t *testing.T, l *e2e.Lab, port int) func(method, path, user, password, body string) (int, string) {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(l.Dir, "certs", "root-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate in root-ca.pem")
	}
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return func(method, path, user, password, body string) (int, string) {
		req, err := http.NewRequest(method, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, password)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, string(b)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
