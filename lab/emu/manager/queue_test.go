package manager

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseQueueMessage(t *testing.T) {
	tests := []struct {
		name, in          string
		location, program string
		message           string
		wantErr           bool
	}{
		{"logcollector line", "1:/var/log/auth.log:Nov 24 01:02:03 web-01 sshd[811]: Failed password for invalid user x from 192.0.2.9 port 22 ssh2",
			"/var/log/auth.log", "sshd", "Failed password for invalid user x from 192.0.2.9 port 22 ssh2", false},
		{"agent event", "1:[001] (web-01) 10.0.0.5->/var/log/auth.log:Nov 24 01:02:03 web-01 sshd[811]: Accepted publickey for deploy",
			"/var/log/auth.log", "sshd", "Accepted publickey for deploy", false},
		{"colon in the log", "1:journald:Nov 24 01:02:03 h app: a: b: c", "journald", "app", "a: b: c", false},
		{"no location", "1:just text", "", "", "", true},
		{"no queue id", "/var/log/auth.log:line", "", "", "", true},
		{"empty log", "1:/var/log/x:", "", "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseQueueMessage(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrQueueMessage) {
					t.Fatalf("err = %v, want ErrQueueMessage", err)
				}
				return
			}
			if err != nil || ev.Location != tc.location || ev.Program != tc.program || ev.Message != tc.message {
				t.Fatalf("got %+v, %v", ev, err)
			}
		})
	}
}

// On a stock ossec.conf (no syslog <remote>) the daemon listens on no syslog port but reads analysisd's
// queue socket: the stock sshd line injected the way logcollector does raises rule 5710 level 5; with
// analysisd failed the event is lost, as with the real daemon down.
func TestDaemonQueueSocketOnStockConfig(t *testing.T) {
	h := newHome(t, 3)
	conf := StockOssecConf(StockOptions{AgentPort: freePort(t), EnrollmentPort: freePort(t), IndexerPort: 9200})
	if bytes.Contains(conf, []byte("<connection>syslog</connection>")) {
		t.Fatal("stock ossec.conf has a syslog remote")
	}
	addrs, stop := runDaemon(t, h, conf, "wazuh01")
	defer func() {
		stop()
		if _, err := os.Stat(h.QueueSocket()); err == nil {
			t.Error("queue socket left behind")
		}
	}()
	if addrs.Syslog != "" || addrs.Queue != h.QueueSocket() {
		t.Fatalf("addrs %+v: want no syslog listener and the queue socket", addrs)
	}
	fi, err := os.Stat(h.QueueSocket())
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Fatalf("queue socket: %v %v", fi, err)
	}
	send := func(user string) {
		t.Helper()
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: h.QueueSocket(), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		line := "1:/var/log/auth.log:" + time.Now().Format(time.Stamp) + " wazuh01 sshd[4242]: Failed password for invalid user " + user + " from 192.0.2.77 port 40022 ssh2"
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	send("probe-q1")
	m := waitAlert(t, h, "probe-q1")
	if m == nil {
		t.Fatal("no alert for the queue event")
	}
	r := m["rule"].(map[string]any)
	if r["id"] != "5710" || r["level"] != float64(5) || m["location"] != "/var/log/auth.log" || m["agent"].(map[string]any)["id"] != "000" {
		t.Fatalf("alert %v", m)
	}
	// analysisd failed: the marker makes /manager/status say so and the event is lost.
	if err := os.WriteFile(filepath.Join(h.RunDir(), "wazuh-analysisd.failed"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if DaemonStates(h)["wazuh-analysisd"] != "failed" {
		t.Fatal("analysisd not failed")
	}
	send("probe-q2")
	send("probe-q1-marker") // a later datagram: once it is read, probe-q2 was read (and dropped) before it
	time.Sleep(300 * time.Millisecond)
	if findAlert(t, h, "probe-q2") != nil || findAlert(t, h, "probe-q1-marker") != nil {
		t.Fatal("a failed analysisd wrote an alert")
	}
}

func TestAnalysisdTestConfig(t *testing.T) {
	h := newHome(t, 1)
	var out, errb bytes.Buffer
	env := ToolEnv{Home: h, Stdout: &out, Stderr: &errb, Now: func() time.Time { return testNow }, Loc: time.UTC}
	if rc := Analysisd(context.Background(), env, []string{"-t"}); rc != 0 || out.Len() != 0 || errb.Len() != 0 {
		t.Fatalf("-t on a good config: rc %d stdout %q stderr %q", rc, out.String(), errb.String())
	}
	b, _ := os.ReadFile(h.OssecConf())
	if err := os.WriteFile(h.OssecConf(), bytes.Replace(b, []byte("<alerts>"), []byte("<alerts>\n    <log_alert_lvl>3</log_alert_lvl>"), 1), 0o640); err != nil {
		t.Fatal(err)
	}
	want := "2025/03/02 09:31:07 wazuh-analysisd: ERROR: (1230): Invalid element in the configuration: 'log_alert_lvl'.\n" +
		"2025/03/02 09:31:07 wazuh-analysisd: CRITICAL: (1202): Configuration error at 'etc/ossec.conf'.\n"
	out.Reset()
	if rc := Analysisd(context.Background(), env, []string{"-t"}); rc != 1 || out.Len() != 0 || errb.String() != want {
		t.Fatalf("-t on a bad config: rc %d stdout %q stderr %q, want %q", rc, out.String(), errb.String(), want)
	}
	if _, err := os.Stat(filepath.Join(h.RunDir(), "wazuh-analysisd.failed")); err == nil {
		t.Error("-t marked analysisd failed (only wazuh-control start does)")
	}
	errb.Reset()
	if rc := Analysisd(context.Background(), env, nil); rc != 1 || !strings.Contains(errb.String(), "-t") {
		t.Errorf("without -t: rc %d %q", rc, errb.String())
	}
}

func TestStockOssecConfParses(t *testing.T) {
	for _, syslog := range []int{0, 1514} {
		conf := StockOssecConf(StockOptions{AgentPort: 1600, EnrollmentPort: 1601, IndexerPort: 9300, Root: "/lab/root", SyslogPort: syslog})
		c, err := ParseConfig(conf)
		if err != nil {
			t.Fatalf("stock ossec.conf (syslog %d) does not parse: %v", syslog, err)
		}
		var syslogs int
		for _, r := range c.Remotes {
			if r.Connection == "syslog" {
				syslogs++
			}
		}
		if c.AuthPort != 1601 || c.Remotes[0].Port != 1600 || c.ClusterName != "wazuh" || (syslogs == 1) != (syslog > 0) {
			t.Errorf("stock config (syslog %d): %+v", syslog, c)
		}
		for _, want := range []string{"<location>/var/log/auth.log</location>", "<host>https://127.0.0.1:9300</host>", "<ca>/lab/root/etc/filebeat/certs/root-ca.pem</ca>"} {
			if !bytes.Contains(conf, []byte(want)) {
				t.Errorf("stock ossec.conf lacks %s", want)
			}
		}
	}
}
