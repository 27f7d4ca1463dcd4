package manager

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

func TestParseSyslog(t *testing.T) {
	tests := []struct {
		name, raw                  string
		program, ts, host, message string
	}{
		{"rfc3164 logger", "<13>Nov 21 23:09:27 vm TAG: msg-rfc3164", "TAG", "Nov 21 23:09:27", "vm", "msg-rfc3164"},
		{"rfc3164 pid", "<35>Nov 21 23:09:36 vm sshd[16785]: Failed password for root from 10.0.0.5 port 22 ssh2", "sshd", "Nov 21 23:09:36", "vm", "Failed password for root from 10.0.0.5 port 22 ssh2"},
		{"rfc5424 default", `<13>1 2026-11-21T23:09:27.888657+00:00 vm TAG - - [timeQuality tzKnown="1" isSynced="0"] msg-default`, "TAG", "2026-11-21T23:09:27.888657+00:00", "vm", "msg-default"},
		{"rfc5424 minimal", "<13>1 - - TAG - - - msg-rfc5424-minimal", "TAG", "", "", "msg-rfc5424-minimal"},
		{"rfc5424 two sd", `<132>1 2026-11-21T23:09:27.900591+00:00 vm siem-cli - UPG01 [timeQuality tzKnown="1" isSynced="0"][lab@32473 pkg="siem-demo" ver="4.10.0-1"] upgrade done`, "siem-cli", "2026-11-21T23:09:27.900591+00:00", "vm", "upgrade done"},
		{"no header", "just text", "", "", "", "just text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := ParseSyslog(tc.raw)
			if ev.Program != tc.program || ev.SyslogTS != tc.ts || ev.Hostname != tc.host || ev.Message != tc.message {
				t.Fatalf("got %+v", ev)
			}
		})
	}
}

func testAnalyzer(t *testing.T) (*Analyzer, Home) {
	t.Helper()
	h := newHome(t, 5)
	b, _ := os.ReadFile(h.OssecConf())
	conf, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	local, err := LoadLocalRules(h.LocalRules(), "etc/rules/local_rules.xml")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewRuleset(local)
	if err != nil {
		t.Fatal(err)
	}
	return NewAnalyzer(h, conf, rs, "siem01", func() time.Time { return testNow }), h
}

func TestRulesAndAlertShape(t *testing.T) {
	an, h := testAnalyzer(t)
	tests := []struct {
		name, line string
		rule       string // "" = no alert
		level      float64
		data       map[string]any
	}{
		{"5710 invalid user", "<13>Mar  2 09:31:07 siem01 sshd[42]: Failed password for invalid user probe from 192.0.2.10 port 4242 ssh2", "5710", 5,
			map[string]any{"srcuser": "probe", "srcip": "192.0.2.10", "srcport": "4242"}},
		{"5716 then local 100001", "<13>Mar  2 09:31:07 siem01 sshd: Failed none for root from 1.1.1.1 port 1066 ssh2", "100001", 5,
			map[string]any{"dstuser": "root", "srcip": "1.1.1.1", "srcport": "1066"}},
		{"5716", "<13>Mar  2 09:31:07 siem01 sshd: Failed password for root from 10.9.9.9 port 22 ssh2", "5716", 5,
			map[string]any{"dstuser": "root", "srcip": "10.9.9.9", "srcport": "22"}},
		{"5715", "<13>Mar  2 09:31:07 siem01 sshd[1]: Accepted password for bob from 10.1.1.1 port 5000 ssh2", "5715", 3,
			map[string]any{"dstuser": "bob", "srcip": "10.1.1.1", "srcport": "5000"}},
		{"local program_name rule", "<13>1 - - siemctl-probe - - - nonce-123", "100100", 7, nil},
		{"plain text: rule 1, no alert", "<13>Mar  2 09:31:07 siem01 myapp: hello", "", 0, nil},
		{"bad word: 1002 level 2 below log_alert_level", "<13>Mar  2 09:31:07 siem01 myapp: operation failed", "", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := ParseSyslog(tc.line)
			ev.Location = "127.0.0.1"
			out, err := an.Process(ev)
			if err != nil {
				t.Fatal(err)
			}
			if tc.rule == "" {
				if out != nil {
					t.Fatalf("unexpected alert %s", out)
				}
				return
			}
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatal(err)
			}
			r := m["rule"].(map[string]any)
			if r["id"] != tc.rule || r["level"] != tc.level {
				t.Fatalf("rule %v", r)
			}
			if tc.data != nil && !reflect.DeepEqual(m["data"], tc.data) {
				t.Fatalf("data %v", m["data"])
			}
		})
	}
	// The first alert line is the golden shape (key order, timestamp, id "<epoch>.<offset>").
	f, err := os.Open(h.AlertsJSON())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	want := `{"timestamp":"2025-03-02T09:31:07.412+0000","rule":{"level":5,"description":"sshd: Attempt to login using a non-existent user","id":"5710","mitre":{"id":["T1110.001","T1021.004"],"tactic":["Credential Access","Lateral Movement"],"technique":["Password Guessing","SSH"]},"firedtimes":1,"mail":false,"groups":["syslog","sshd","authentication_failed","invalid_login"],"pci_dss":["10.2.4","10.2.5","10.6.1"],"gpg13":["7.1"],"gdpr":["IV_35.7.d","IV_32.2"],"hipaa":["164.312.b"],"nist_800_53":["AU.14","AC.7","AU.6"],"tsc":["CC6.1","CC6.8","CC7.2","CC7.3"]},"agent":{"id":"000","name":"siem01"},"manager":{"name":"siem01"},"id":"1740907867.0","full_log":"Mar  2 09:31:07 siem01 sshd[42]: Failed password for invalid user probe from 192.0.2.10 port 4242 ssh2","predecoder":{"program_name":"sshd","timestamp":"Mar  2 09:31:07","hostname":"siem01"},"decoder":{"parent":"sshd","name":"sshd"},"data":{"srcuser":"probe","srcip":"192.0.2.10","srcport":"4242"},"location":"127.0.0.1"}`
	if sc.Text() != want {
		t.Fatalf("alert line:\n%s\nwant\n%s", sc.Text(), want)
	}
	sc.Scan()
	var second map[string]any
	_ = json.Unmarshal(sc.Bytes(), &second)
	if second["id"] != "1740907867."+itoa(len(want)+1) {
		t.Fatalf("second id %v, want offset %d", second["id"], len(want)+1)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestConfigErrors(t *testing.T) {
	base := string(DefaultOssecConf(1514, 1515, 5514))
	tests := []struct {
		name, conf string
		want       []string
	}{
		{"unclosed element", strings.Replace(base, "</global>", "", 1), []string{"(1226): Error reading XML file 'etc/ossec.conf': XMLERR: Element 'global' not closed.", "(1202): Configuration error at 'etc/ossec.conf'."}},
		{"invalid element", strings.Replace(base, "log_alert_level>3</log_alert_level", "log_alert_lvl>3</log_alert_lvl", 1), []string{"(1230): Invalid element in the configuration: 'log_alert_lvl'.", "(1202): Configuration error at 'etc/ossec.conf'."}},
		{"invalid value", strings.Replace(base, "<log_alert_level>3<", "<log_alert_level>abc<", 1), []string{"(1235): Invalid value for element 'log_alert_level': abc.", "(1202): Configuration error at 'etc/ossec.conf'."}},
		{"truncated", base[:len(base)/2], []string{"XMLERR: End of file and some elements were not closed.", "(1202)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.conf))
			ce, ok := err.(*ConfigError)
			if !ok {
				t.Fatalf("err = %v", err)
			}
			msgs := ce.Messages()
			if len(msgs) != 2 || !strings.HasPrefix(ce.Lines[0], "wazuh-analysisd: ERROR: ") || !strings.HasPrefix(ce.Lines[1], "wazuh-analysisd: CRITICAL: ") {
				t.Fatalf("lines %q", ce.Lines)
			}
			for i, w := range tc.want {
				if !strings.Contains(msgs[i], w) {
					t.Errorf("line %d = %q, want %q", i, msgs[i], w)
				}
			}
		})
	}
	if _, err := ParseConfig([]byte(base)); err != nil {
		t.Fatalf("default config: %v", err)
	}
}

// Each element the emulator reads lands in its Config field; repeated elements: the last wins (and
// an invalid one is an error wherever it is), as in the daemons.
func TestParseConfigValues(t *testing.T) {
	base := string(DefaultOssecConf(1514, 1515, 5514))
	with := func(section, body string) string {
		return strings.Replace(base, "</ossec_config>", "<"+section+">"+body+"</"+section+">\n</ossec_config>", 1)
	}
	tests := []struct {
		name, conf string
		check      func(c *Config) bool
		wantErr    string
	}{
		{"defaults", base, func(c *Config) bool {
			return c.JSONOut && c.AlertsLog && c.LogAlertLevel == 3 && c.EmailAlertLevel == 12 &&
				c.AgentsDisconnectionTime == 10*time.Minute && c.BackgroundAlertsInterval == 20*time.Second &&
				len(c.Remotes) == 2 && reflect.DeepEqual(c.Remotes[0], Remote{Connection: "secure", Port: 1514, Protocol: "tcp", LocalIP: "127.0.0.1"}) &&
				c.Remotes[1].Connection == "syslog" && c.Remotes[1].Port == 5514 && c.Remotes[1].Protocol == "udp"
		}, ""},
		{"global", with("global", "<jsonout_output>no</jsonout_output><alerts_log>no</alerts_log><agents_disconnection_time>2h</agents_disconnection_time>"),
			func(c *Config) bool { return !c.JSONOut && !c.AlertsLog && c.AgentsDisconnectionTime == 2*time.Hour }, ""},
		{"alerts", with("alerts", "<log_alert_level>7</log_alert_level><email_alert_level>16</email_alert_level>"),
			func(c *Config) bool { return c.LogAlertLevel == 7 && c.EmailAlertLevel == 16 }, ""},
		{"auth", with("auth", "<disabled>yes</disabled><port>2515</port>"),
			func(c *Config) bool { return c.AuthDisabled && c.AuthPort == 2515 }, ""},
		{"cluster", with("cluster", "<disabled>no</disabled><name> prod </name><node_name>\n  master\n</node_name>"),
			func(c *Config) bool { return !c.ClusterDisabled && c.ClusterName == "prod" && c.NodeName == "master" }, ""},
		{"last of repeated wins", with("emulator", "<background_alerts_interval>5s</background_alerts_interval><background_alerts_interval>1m</background_alerts_interval>"),
			func(c *Config) bool { return c.BackgroundAlertsInterval == time.Minute }, ""},
		{"remote defaults", with("remote", "<connection>syslog</connection>"),
			func(c *Config) bool {
				return len(c.Remotes) == 3 && reflect.DeepEqual(c.Remotes[2], Remote{Connection: "syslog", Port: 514, Protocol: "tcp"})
			}, ""},
		{"invalid repeated element", with("emulator", "<background_alerts_interval>5s</background_alerts_interval><background_alerts_interval>soon</background_alerts_interval>"),
			nil, "(1235): Invalid value for element 'background_alerts_interval': soon."},
		{"level out of range", with("alerts", "<email_alert_level>17</email_alert_level>"), nil, "(1235): Invalid value for element 'email_alert_level': 17."},
		{"port out of range", with("auth", "<port>0</port>"), nil, "(1235): Invalid value for element 'port': 0."},
		{"not yes or no", with("cluster", "<disabled>maybe</disabled>"), nil, "(1235): Invalid value for element 'disabled': maybe."},
		{"remote protocol", with("remote", "<protocol>sctp</protocol>"), nil, "(1235): Invalid value for element 'protocol': sctp."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.conf))
			if tc.wantErr != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Messages()[0] != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("config %+v", c)
			}
		})
	}
}

// TestDaemonSyslogWithLogger runs the daemon on loopback ports and sends a real `logger` datagram.
func TestDaemonSyslogWithLogger(t *testing.T) {
	if _, err := exec.LookPath("logger"); err != nil {
		t.Skip("logger not installed")
	}
	h := newHome(t, 5)
	base := string(DefaultOssecConf(freePort(t), freePort(t), freePort(t)))
	base = strings.Replace(base, "<background_alerts_interval>20s<", "<background_alerts_interval>0<", 1)
	addrs, stop := runDaemon(t, h, []byte(base), "siem01")
	defer func() {
		stop()
		if pid, _ := pidfile(h, "wazuh-apid"); pid != 0 {
			t.Errorf("pidfile left behind")
		}
	}()
	if states := DaemonStates(h); states["wazuh-remoted"] != "running" || states["wazuh-maild"] != "stopped" {
		t.Fatalf("states %v", states)
	}
	host, port, _ := strings.Cut(addrs.Syslog, ":")
	cmd := exec.CommandContext(t.Context(), "logger", "--udp", "--rfc3164", "--server", host, "--port", port, "-t", "sshd",
		"Failed password for invalid user probe-xyz from 192.0.2.10 port 4242 ssh2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("logger: %v %s", err, out)
	}
	m := waitAlert(t, h, "probe-xyz")
	if m == nil {
		b, _ := os.ReadFile(h.AlertsJSON())
		t.Fatalf("no alert; alerts.json=%q", b)
	}
	if m["rule"].(map[string]any)["id"] != "5710" || m["location"] != "127.0.0.1" || m["data"].(map[string]any)["srcuser"] != "probe-xyz" {
		t.Fatalf("alert %v", m)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*netTCPAddr).Port
}

func TestDaemonRefusesBrokenConfig(t *testing.T) {
	h := newHome(t, 5)
	b, _ := os.ReadFile(h.OssecConf())
	_ = os.WriteFile(h.OssecConf(), []byte(strings.Replace(string(b), "</alerts>", "", 1)), 0o644)
	rc := RunDaemon(context.Background(), DaemonOptions{Home: h, Now: func() time.Time { return testNow }})
	if rc != 1 {
		t.Fatalf("exit %d", rc)
	}
	log, _ := os.ReadFile(h.OssecLog())
	want := "2025/03/02 09:31:07 wazuh-analysisd: ERROR: (1226): Error reading XML file 'etc/ossec.conf': XMLERR: Element 'alerts' not closed."
	if !strings.HasPrefix(string(log), want) || !strings.Contains(string(log), "wazuh-analysisd: CRITICAL: (1202): Configuration error at 'etc/ossec.conf'.") {
		t.Fatalf("ossec.log:\n%s", log)
	}
	if DaemonStates(h)["wazuh-analysisd"] != "failed" {
		t.Fatalf("analysisd not marked failed")
	}
}

func TestAlertsStoppedFault(t *testing.T) {
	an, h := testAnalyzer(t)
	an.Faults.Dir = filepath.Join(t.TempDir(), "faults")
	line := "<13>Mar  2 09:31:07 siem01 sshd[42]: Failed password for invalid user probe from 192.0.2.10 port 4242 ssh2"
	if out, err := an.Process(ParseSyslog(line)); err != nil || out == nil {
		t.Fatalf("without the fault: %s, %v", out, err)
	}
	if err := faults.Set(an.Faults.Dir, faults.AlertsStopped, true); err != nil {
		t.Fatal(err)
	}
	if out, err := an.Process(ParseSyslog(line)); err != nil || out != nil {
		t.Fatalf("alerts-stopped: %s, %v; want no alert", out, err)
	}
	data, _ := os.ReadFile(h.AlertsJSON())
	if n := strings.Count(string(data), "\n"); n != 1 {
		t.Errorf("alerts.json has %d lines, want the one from before the fault", n)
	}
}
