//go:build e2e

package health_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EHealthReachAndCerts (issue 23): a dashboard that cannot reach its indexer, a shipper whose
// output is unreachable, and an indexer node certificate that is expired or from a foreign CA are
// each named by the default health run with a fix on the right side; the test applies the fix as
// printed (the certificate one with the lab's PKI standing in for the administrator's own: a node
// certificate for the same key from the CA the components trust) and health is OK again. The
// faults run one after another in one lab, healed between. Each step logs what services and
// health said (the issue's closing table).
func TestE2EHealthReachAndCerts(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 750})
	e2e.Eventually(t, 2*time.Minute, 3*time.Second, func() error {
		if rep, r := health(t, l); r.Code != 0 {
			return fmt.Errorf("fresh lab: exit %d:%s", r.Code, notOK(rep))
		}
		return nil
	})
	indexerAddr := "127.0.0.1:" + strconv.Itoa(9200+portOffset(t, l))
	okAgain := func(t *testing.T, l *e2e.Lab, check string) {
		t.Helper()
		e2e.Eventually(t, 3*time.Minute, 3*time.Second, func() error {
			rep, _ := health(t, l)
			if st := byID(rep)[check]; st.Status != "OK" {
				return fmt.Errorf("%s still %s: %s", check, st.Status, st.Summary)
			}
			return nil
		})
	}
	table := func(t *testing.T, cause, services, health string) {
		t.Logf("TABLE | %s | services: %s | health: %s", cause, oneLine(services), oneLine(health))
	}
	// restart runs the restart a fix prints. On a loaded machine the component may need longer than
	// the spec's start wait (the indexer's 60 s): still starting with no cause found (exit 8) is
	// slowness, not the fault; health decides.
	restart := func(t *testing.T, l *e2e.Lab, component string) {
		t.Helper()
		if r := l.Siemctl("services", "restart", component, "--yes"); r.Code != 0 {
			if r.Code != 8 || !strings.Contains(r.Stderr, "is still starting") {
				t.Fatalf("restart %s after the fix: exit %d\n%s%s", component, r.Code, r.Stdout, r.Stderr)
			}
			t.Logf("restart %s after the fix did not answer within the spec's wait (slow machine); waiting for health", component)
		}
	}

	t.Run("dashboard-indexer-unreachable", func(t *testing.T) {
		l := l.For(t)
		l.MustSiemlab("fault", "dashboard-indexer-unreachable")
		// The real dashboard starts and answers 503 "not ready yet": start means ready fails.
		sr := l.Siemctl("services", "restart", "dashboard", "--yes")
		if sr.Code == 0 {
			t.Errorf("services restart dashboard exit 0 while it cannot reach the indexer:\n%s%s", sr.Stdout, sr.Stderr)
		}
		rep, r := health(t, l)
		got := byID(rep)["dashboard"]
		if got.Status != "CRIT" || !strings.Contains(got.Summary, "not ready yet") || !strings.Contains(got.Summary, "https://"+"127.0.0.1:1") || r.Code != 2 {
			t.Fatalf("dashboard %s: %s (exit %d)", got.Status, got.Summary, r.Code)
		}
		m := regexp.MustCompile(`set opensearch\.hosts in (\S+) to the indexer \((\S+) answers here\), then siemctl services restart dashboard`).FindStringSubmatch(got.Fix)
		if m == nil {
			t.Fatalf("fix %q", got.Fix)
		}
		table(t, "dashboard opensearch.hosts nowhere", fmt.Sprintf("exit %d: %s", sr.Code, sr.Stdout+sr.Stderr), got.Summary+" / fix: "+got.Fix)
		// The fix as printed: opensearch.hosts to the indexer, restart the dashboard.
		setLine(t, m[1], `(?m)^opensearch\.hosts:.*$`, "opensearch.hosts: "+m[2])
		restart(t, l, "dashboard")
		okAgain(t, l, "dashboard")
		t.Logf("TABLE | dashboard opensearch.hosts nowhere | fix worked: yes")
		l.MustSiemlab("heal", "dashboard-indexer-unreachable")
	})

	t.Run("shipper-output-unreachable", func(t *testing.T) {
		l := l.For(t)
		l.MustSiemlab("fault", "shipper-output-unreachable")
		sr := l.Siemctl("services", "restart", "shipper", "--yes")
		// Default health, no --deep: the output is part of it.
		rep, r := health(t, l)
		got := byID(rep)["shipper"]
		if got.Status != "CRIT" || !strings.Contains(got.Summary, "output unreachable") || !strings.Contains(got.Summary, "dial up... ERROR") || r.Code != 2 {
			t.Fatalf("shipper %s: %s (exit %d)", got.Status, got.Summary, r.Code)
		}
		m := regexp.MustCompile(`output\.elasticsearch\.hosts in (\S+)\)`).FindStringSubmatch(got.Fix)
		if m == nil {
			t.Fatalf("fix %q", got.Fix)
		}
		if t.Failed() {
			return
		}
		// The fix: the output section's hosts back to the indexer, restart the shipper.
		table(t, "shipper output unreachable", fmt.Sprintf("exit %d: %s", sr.Code, sr.Stdout+sr.Stderr), got.Summary+" / fix: "+got.Fix)
		setLine(t, m[1], `hosts: \["127\.0\.0\.1:1"\]`, `hosts: ["`+indexerAddr+`"]`)
		restart(t, l, "shipper")
		okAgain(t, l, "shipper")
		t.Logf("TABLE | shipper output unreachable | fix worked: yes")
		l.MustSiemlab("heal", "shipper-output-unreachable")
	})

	for _, tc := range []struct{ fault, summary, cause, fixRe string }{
		{"indexer-cert-expired", "expired on", "expired node certificate", `replace (\S+) \(and its key`},
		{"indexer-cert-foreign", "not by the CA the indexer, shipper, dashboard trust", "node certificate from a foreign CA", `replace (\S+) \(and its key`},
		{"key-mismatch", "do not belong together", "certificate and key that do not belong together", `issue a new certificate for the key in \S+; then`},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			l := l.For(t)
			l.MustSiemlab("fault", tc.fault)
			// within the spec's wait, whether the node answers with the certificate, died of it or
			// is still coming up: a failed start naming the certificate and its fix
			sr := l.Siemctl("services", "restart", "indexer", "--yes")
			if sr.Code != 1 || !strings.Contains(sr.Stderr, "cause: indexer certificate") || !strings.Contains(sr.Stderr, tc.summary) ||
				!regexp.MustCompile(`fix: .*`+tc.fixRe).MatchString(sr.Stderr) {
				t.Errorf("services restart indexer: exit %d, want 1 naming the certificate (%q) and its fix:\n%s%s", sr.Code, tc.summary, sr.Stdout, sr.Stderr)
			}
			var got struct{ Status, Summary, Fix string }
			e2e.Eventually(t, 2*time.Minute, 3*time.Second, func() error {
				rep, _ := health(t, l)
				got = byID(rep)["certs"]
				if got.Status != "CRIT" || !strings.Contains(got.Summary, tc.summary) {
					return fmt.Errorf("certs %s: %s", got.Status, got.Summary)
				}
				if api := byID(rep)["indexer.api"]; strings.Contains(api.Fix, "ca_file to the CA") || strings.Contains(got.Fix, "ca_file") {
					return fmt.Errorf("the fix points at siemctl's trust: certs %q, indexer.api %q", got.Fix, api.Fix)
				}
				if s := byID(rep)["secrets"]; strings.Contains(s.Summary, "TLS verified") {
					return fmt.Errorf("secrets says %q", s.Summary)
				}
				return nil
			})
			table(t, tc.cause, fmt.Sprintf("exit %d: %s", sr.Code, sr.Stdout+sr.Stderr), got.Summary+" / fix: "+got.Fix)
			if !regexp.MustCompile(tc.fixRe).MatchString(got.Fix) || !strings.Contains(got.Fix, "siemctl services restart indexer") {
				t.Fatalf("fix %q", got.Fix)
			}
			// The fix: a certificate for the node's key (key-mismatch: the key in its place now) from
			// the CA the components trust (the lab's PKI is the administrator's), in place of the
			// certificate file, then the restart printed.
			m := regexp.MustCompile(`(?:replace|indexer certificate) (\S+\.pem)`).FindStringSubmatch(got.Fix + " " + got.Summary)
			if m == nil {
				t.Fatalf("no certificate file in %q / %q", got.Fix, got.Summary)
			}
			lb, err := lab.Open(l.Dir)
			if err != nil {
				t.Fatal(err)
			}
			pemCert, err := lb.IssueNodeCert(time.Now().Add(-time.Hour), time.Now().AddDate(1, 0, 0), false)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(m[1], pemCert, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(m[1], lab.IndexerUID, lab.IndexerUID); err != nil {
				t.Fatal(err)
			}
			restart(t, l, "indexer")
			okAgain(t, l, "certs")
			okAgain(t, l, "indexer.api")
			t.Logf("TABLE | %s | fix worked: yes", tc.cause)
			l.MustSiemlab("heal", tc.fault)
		})
	}

	e2e.Eventually(t, 3*time.Minute, 3*time.Second, func() error {
		if rep, r := health(t, l); r.Code != 0 {
			return fmt.Errorf("after every heal: exit %d:%s", r.Code, notOK(rep))
		}
		return nil
	})
}

func portOffset(t *testing.T, l *e2e.Lab) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.Dir, "siemctl.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^port_offset: (\d+)$`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// setLine replaces what re matches in file (keeping its mode), as an administrator's edit.
func setLine(t *testing.T, file, re, repl string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rx := regexp.MustCompile(re)
	if !rx.Match(b) {
		t.Fatalf("%s has nothing matching %s:\n%s", file, re, b)
	}
	fi, _ := os.Stat(file)
	if err := os.WriteFile(file, rx.ReplaceAllLiteral(b, []byte(repl)), fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
