package redact_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/redact"
)

func TestStringDoesNotGarble(t *testing.T) {
	r := redact.New("wazuh", "siem")
	for _, s := range []string{
		"/etc/wazuh-indexer/opensearch.yml",
		"/usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml",
		"siemctl upgrade plan",
		"unit siem-indexer.service is active",
		"wazuh-alerts-4.x-2025.01.01",
		"password_file: /etc/siemctl/secrets/indexer",
		"password_env: SIEM_PW",
		"~/wazuh",
	} {
		if got := r.String(s); got != s {
			t.Errorf("%q garbled to %q", s, got)
		}
	}
}

func TestStringRedacts(t *testing.T) {
	r := redact.New("wazuh", "S3cr:t/pw")
	for in, want := range map[string]string{
		"login as admin with wazuh failed":                         "login as admin with [redacted] failed",
		"the password is wazuh.":                                   "the password is [redacted].",
		`{"user":"x","password":"anything"}`:                       `{"user":"x","password":"[redacted]"}`,
		"password: hunter2\nuser: x":                               "password: [redacted]\nuser: x",
		"GET /?api_key=abc123&x=1":                                 "GET /?api_key=[redacted]&x=1",
		"Authorization: Basic YWRtaW46YWRtaW4=":                    "Authorization: Basic [redacted]",
		`echo: {"authorization": "Bearer eyJhbGciOi.x.y"}`:         `echo: {"authorization": "Bearer [redacted]"}`,
		"https://admin:hunter2@127.0.0.1:9200/_cat":                "https://admin:[redacted]@127.0.0.1:9200/_cat",
		"parse \"https://admin:p%zz@host\": invalid escape":        "parse \"https://admin:[redacted]@host\": invalid escape",
		"server said: d2F6dWg=":                                    "server said: [redacted]",
		"quoted \"S3cr:t/pw\" and escaped S3cr%3At%2Fpw":           "quoted \"[redacted]\" and escaped [redacted]",
		`"summary":"request {\"password\":\"Unknown-1\"} refused"`: `"summary":"request {\"password\":\"[redacted]\"} refused"`,
		`{"token": 5, "secret": null, "api_key": "k"}`:             `{"token": 5, "secret": null, "api_key": "[redacted]"}`,
		"password: 123456\n":                                       "password: [redacted]\n",
		"token=" + "abc" + " level=warn":                           "token=[redacted] level=warn",
	} {
		if got := r.String(in); got != want {
			t.Errorf("%q\n got %q\nwant %q", in, got, want)
		}
	}
	// A secret that is no plain word goes wherever it appears.
	r.Add("mgr-T0ken-9f8e7d")
	if got := r.String("index leak-mgr-T0ken-9f8e7d-x"); got != "index leak-[redacted]-x" {
		t.Errorf("strong secret inside a word: %q", got)
	}
	// Idempotent.
	s := r.String("Authorization: Basic abc password=x https://u:p@h")
	if again := r.String(s); again != s {
		t.Errorf("not idempotent: %q → %q", s, again)
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://admin:wazuh@127.0.0.1:9200": "https://admin:[redacted]@127.0.0.1:9200",
		"https://admin:p%zz@127.0.0.1:9200":  "https://admin:[redacted]@127.0.0.1:9200",
		"https://127.0.0.1:9200":             "https://127.0.0.1:9200",
		"::bad":                              "::bad",
	} {
		if got := redact.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMapAndWriter(t *testing.T) {
	r := redact.New("pw123456")
	m := r.Map(map[string]any{"password": "x", "nested": map[string]any{"token": 5, "msg": "used pw123456"}, "list": []any{"pw123456"}})
	if got := fmt.Sprint(m); got != "map[list:[[redacted]] nested:map[msg:used [redacted] token:[redacted]] password:[redacted]]" {
		t.Fatal(got)
	}
	var b bytes.Buffer
	fmt.Fprintf(r.Writer(&b), "error: login with pw123456 refused\n")
	if strings.Contains(b.String(), "pw123456") || !strings.Contains(b.String(), "[redacted]") {
		t.Fatal(b.String())
	}
}

// BenchmarkString: one health report's worth of text (about 4 KiB, every
// line through the boundary) with two known secrets.
func BenchmarkString(b *testing.B) {
	r := redact.New("wazuh", "Generated-Pass-1234")
	line := `{"id":"indexer.api","status":"OK","summary":"reachable at https://127.0.0.1:9200, version 2.19.1","evidence":["/etc/wazuh-indexer/certs/root-ca.pem"]}` + "\n"
	text := strings.Repeat(line, 4096/len(line)+1)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(text)
	}
}
