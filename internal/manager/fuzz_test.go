package manager

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func addFixtures(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "api", "manager", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func FuzzParseAgentList(f *testing.F) {
	f.Add([]byte("   ID: 000, Name: siem01 (server), IP: 127.0.0.1, Active/Local\n   ID: 001, Name: a, b, IP: any, Never connected\n"))
	f.Add([]byte("ID: 001, Name: , IP: , \n** Unable to connect to remoted.\n"))
	f.Add([]byte("ID: 001, Name: x, IP: "))
	f.Fuzz(func(t *testing.T, out []byte) {
		agents, _ := ParseAgentList(out)
		for _, a := range agents {
			if ValidateAgentID(a.ID) != nil {
				t.Fatalf("invalid id %q accepted", a.ID)
			}
			if strings.Contains(a.IP, ", ") {
				t.Fatalf("ip %q holds a separator", a.IP)
			}
		}
		_, _, _ = ParseAgentInfo(out)
	})
}

func FuzzParseControlStatus(f *testing.F) {
	f.Add([]byte("wazuh-analysisd is running...\nwazuh-maild not running...\nwazuh-db: Process 12 not used by Wazuh, removing...\n"))
	f.Add([]byte(": Process  not used by\n is running\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		st := ParseControlStatus(out)
		seen := map[string]bool{}
		for _, d := range st.Daemons {
			if d.Name == "" || seen[d.Name] {
				t.Fatalf("bad or duplicate daemon %q", d.Name)
			}
			seen[d.Name] = true
		}
		_ = st.States().NotReady()
	})
}

func FuzzParseControlInfo(f *testing.F) {
	f.Add([]byte("WAZUH_VERSION=\"v4.9.0\"\nWAZUH_REVISION=\"40907\"\nWAZUH_TYPE=\"server\"\n"))
	f.Add([]byte("_VERSION=\"\nX_VERSION='\n=\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		info, ok := ParseControlInfo(out)
		if ok && info.Product == "" {
			t.Fatal("version without product")
		}
		_, _ = info.ParsedVersion()
	})
}

func FuzzParseCheck(f *testing.F) {
	f.Add([]byte("2025/03/02 09:20:11 wazuh-analysisd: ERROR: (1230): Invalid element in the configuration: 'log_alert_lvl'.\n"))
	f.Add([]byte("2025/13/45 99:99:99 x: CRITICAL: y\nwazuh-remoted: Configuration error. Exiting\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, l := range ParseCheck(out) {
			if l.Level != "ERROR" && l.Level != "CRITICAL" {
				t.Fatalf("level %q", l.Level)
			}
		}
		_ = splitValidationErrors(string(out))
	})
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"Wazuh v4.9.0", "v4.10.2", "4.9.0", "4.9", "v", " ", "1.2.3.4", "999999.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		if v.Major < 0 || v.Minor < 0 || v.Patch < 0 {
			t.Fatalf("negative part in %v", v)
		}
		back, err := ParseVersion(v.String())
		if err != nil || back != v {
			t.Fatalf("round trip %q → %v → %v, %v", s, v, back, err)
		}
	})
}

func FuzzDecodeEnvelope(f *testing.F) {
	addFixtures(f)
	f.Add([]byte(`{"data":{"affected_items":[{"id":1}],"failed_items":[{"error":{"code":"x"},"id":[1,"a",null]}]},"error":"2"}`))
	f.Add([]byte(`{"title":["a"],"detail":{"x":1},"error":1e300}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = DecodeProblem(400, body).Error()
		if env, err := DecodeEnvelope[json.RawMessage](bytes.NewReader(body)); err == nil {
			_ = env.Err()
		}
		_, _ = DecodeResult[map[string]any](bytes.NewReader(body))
		var page agentPage
		_ = decodeAgentPage(bytes.NewReader(body), &page, func(a *Agent) bool { return page.count < 1000 })
	})
}
