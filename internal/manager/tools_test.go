package manager_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/process"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

const agentListOut = `
Wazuh agent_control. List of available agents:
   ID: 000, Name: siem01 (server), IP: 127.0.0.1, Active/Local
   ID: 001, Name: web-01, IP: any, Active
   ID: 002, Name: db-01, IP: 10.0.4.22, Disconnected
   ID: 003, Name: lab, east, IP: 10.0.0.0/24, Never connected
   ID: 004, Name: odd, IP: name, IP: any, Pending

List of agentless devices:

`

const statusOut = `wazuh-clusterd not running...
wazuh-modulesd is running...
wazuh-monitord is running...
wazuh-logcollector is running...
wazuh-remoted is running...
wazuh-syscheckd is running...
wazuh-analysisd: Process 4242 not used by Wazuh, removing...
wazuh-analysisd not running...
wazuh-maild not running...
wazuh-execd is running...
wazuh-db is running...
wazuh-authd is running...
wazuh-agentlessd not running...
wazuh-integratord not running...
wazuh-dbd not running...
wazuh-csyslogd not running...
wazuh-apid is running...
`

const agentInfoOut = `
Wazuh agent_control. Agent information:
   Agent ID:   001
   Agent Name: web-01
   IP address: any
   Status:     Active

   Operating system:    Linux |web-01 |5.15.0 |#1 SMP |x86_64
   Client version:      Wazuh v4.9.0
   Configuration hash:  ab73af41699f13fdd81903b5f23d8d00
   Shared file hash:    4a8e2c9b1f0e5d6c7b8a9f0e1d2c3b4a
   Last keep alive:     1740906944

   Syscheck last started at:  Sun Mar  2 09:00:01 2025
   Syscheck last ended at:    Sun Mar  2 09:01:12 2025
`

func TestParseAgentList(t *testing.T) {
	agents, errs := manager.ParseAgentList([]byte(agentListOut))
	want := []manager.ToolAgent{
		{ID: "000", Name: "siem01", IP: "127.0.0.1", Status: "active", Local: true},
		{ID: "001", Name: "web-01", IP: "any", Status: "active"},
		{ID: "002", Name: "db-01", IP: "10.0.4.22", Status: "disconnected"},
		{ID: "003", Name: "lab, east", IP: "10.0.0.0/24", Status: "never_connected"},
		{ID: "004", Name: "odd, IP: name", IP: "any", Status: "pending"},
	}
	if !reflect.DeepEqual(agents, want) || len(errs) != 0 {
		t.Fatalf("got %+v %v\nwant %+v", agents, errs, want)
	}
	// manage_agents -l has no status column
	agents, _ = manager.ParseAgentList([]byte("   ID: 001, Name: web-01, IP: any\n"))
	if len(agents) != 1 || agents[0].IP != "any" || agents[0].Status != "" {
		t.Fatalf("manage_agents line: %+v", agents)
	}
	agents, errs = manager.ParseAgentList([]byte("** Unable to connect to remoted.\n"))
	if len(agents) != 0 || agents == nil || len(errs) != 1 {
		t.Fatalf("error output: %+v %v", agents, errs)
	}
}

func TestParseControlStatus(t *testing.T) {
	st := manager.ParseControlStatus([]byte(statusOut))
	if len(st.Daemons) != 16 || st.Daemons[0].Name != "wazuh-clusterd" || st.Daemons[1] != (manager.DaemonStatus{Name: "wazuh-modulesd", Running: true}) {
		t.Fatalf("daemons = %+v", st.Daemons)
	}
	var analysisd manager.DaemonStatus
	for _, d := range st.Daemons {
		if d.Name == "wazuh-analysisd" {
			analysisd = d
		}
	}
	if analysisd.Running || analysisd.StalePID != 4242 {
		t.Fatalf("analysisd = %+v", analysisd)
	}
	if nr := st.States().NotReady(); !reflect.DeepEqual(nr, []string{"wazuh-analysisd (stopped)"}) {
		t.Fatalf("NotReady = %v", nr)
	}
	siem := manager.ParseControlStatus([]byte("siem-modulesd is running...\nsiem-db not running...\n"))
	if nr := siem.States().NotReady(); !reflect.DeepEqual(nr, []string{"siem-analysisd (missing)", "siem-execd (missing)", "siem-db (stopped)", "siem-remoted (missing)"}) {
		t.Fatalf("siem NotReady = %v", nr)
	}
}

func TestParseControlInfo(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want manager.ControlInfo
		ok   bool
	}{
		{"wazuh", "WAZUH_VERSION=\"v4.9.0\"\nWAZUH_REVISION=\"40907\"\nWAZUH_TYPE=\"server\"\n", manager.ControlInfo{Product: "WAZUH", Version: "v4.9.0", Revision: "40907", Type: "server"}, true},
		{"siem unquoted crlf", "SIEM_VERSION=v4.10.0\r\nSIEM_REVISION=41000\r\nSIEM_TYPE=server\r\n", manager.ControlInfo{Product: "SIEM", Version: "v4.10.0", Revision: "41000", Type: "server"}, true},
		{"usage only", "Usage: /var/ossec/bin/wazuh-control [-j] {start|stop|restart|status|enable|disable|info [-v -r -t]}\n", manager.ControlInfo{}, false},
		{"empty", "", manager.ControlInfo{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := manager.ParseControlInfo([]byte(tt.out))
			if got != tt.want || ok != tt.ok {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseCheck(t *testing.T) {
	out := `2025/03/02 09:20:11 wazuh-analysisd: INFO: Reading rules file
2025/03/02 09:20:11 wazuh-analysisd: ERROR: (1230): Invalid element in the configuration: 'log_alert_lvl'.
2025/03/02 09:20:11 wazuh-analysisd: CRITICAL: (1202): Configuration error at 'etc/ossec.conf'.
wazuh-remoted: Configuration error. Exiting
`
	got := manager.ParseCheck([]byte(out))
	if len(got) != 3 {
		t.Fatalf("got %+v", got)
	}
	want0 := manager.LogLine{Time: time.Date(2025, 3, 2, 9, 20, 11, 0, time.UTC), Tag: "wazuh-analysisd", Level: "ERROR", Message: "(1230): Invalid element in the configuration: 'log_alert_lvl'."}
	if got[0] != want0 || got[1].Level != "CRITICAL" || got[2].Tag != "wazuh-remoted" {
		t.Fatalf("got %+v", got)
	}
	if len(manager.ParseCheck([]byte("2025/03/02 09:20:11 wazuh-analysisd: INFO: ok\n"))) != 0 {
		t.Fatal("INFO lines are not problems")
	}
}

func TestParseAgentInfo(t *testing.T) {
	info, ok, errs := manager.ParseAgentInfo([]byte(agentInfoOut))
	if !ok || len(errs) != 0 || info.ID != "001" || info.Name != "web-01" || info.Status != "active" || info.Version != "Wazuh v4.9.0" ||
		!info.LastKeepAlive.Equal(time.Unix(1740906944, 0)) || !strings.HasPrefix(info.OS, "Linux |web-01") || info.SyscheckEnded == "" {
		t.Fatalf("info = %+v ok=%v errs=%v", info, ok, errs)
	}
	local, ok, _ := manager.ParseAgentInfo([]byte("   Agent ID:   000 (local instance)\n   Status:     Active/Local\n"))
	if !ok || !local.Local || local.ID != "000" {
		t.Fatalf("000 = %+v", local)
	}
	_, ok, errs = manager.ParseAgentInfo([]byte("\n** Invalid agent id '099'.\n\nWazuh agent_control: usage...\n"))
	if ok || len(errs) != 1 {
		t.Fatalf("invalid id: ok=%v errs=%v", ok, errs)
	}
}

// fakeRunner answers by argv.
type fakeRunner struct {
	out   map[string]string
	code  map[string]int
	calls []string
}

func (f *fakeRunner) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
	key := filepath.Base(name) + " " + strings.Join(args, " ")
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	out, ok := f.out[key]
	if !ok {
		return nil, []byte("not found"), 127, nil
	}
	return []byte(out), nil, f.code[key], nil
}

func TestToolsWithFakeRunner(t *testing.T) {
	f := &fakeRunner{
		out: map[string]string{
			"siem-control info":       "SIEM_VERSION=\"v4.9.0\"\nSIEM_REVISION=\"40907\"\nSIEM_TYPE=\"server\"\n",
			"siem-control status":     statusOut,
			"siem-control check":      "2025/03/02 09:20:11 siem-analysisd: ERROR: (1230): Invalid element in the configuration: 'log_alert_lvl'.\n",
			"agent_control -lc":       agentListOut,
			"agent_control -i 001":    agentInfoOut,
			"agent_control -i 099":    "\n** Invalid agent id '099'.\n",
			"agent_control -R -u 001": "\nWazuh agent_control: Restarting agent: 001\n",
			"agent_control -R -u 002": "\n** Unable to restart agent: 002\n",
			"manage_agents -r 001":    "Provide the ID of the agent to be removed (or '\\q' to quit): 001\nConfirm deleting it?(y/n): y\nAgent '001' removed.\n",
			"manage_agents -r 099":    "** Invalid ID '099' given. ID is not present.\n",
		},
		code: map[string]int{"siem-control status": 1, "siem-control check": 1, "agent_control -i 099": 1, "agent_control -R -u 002": 1, "manage_agents -r 099": 1},
	}
	tools := manager.Tools{InstallDir: "/var/siem", ControlName: "siem-control", Runner: f}
	ctx := ctxT(t)

	info, err := tools.ControlInfo(ctx)
	if v, _ := info.ParsedVersion(); err != nil || v.String() != "4.9.0" || info.Revision != "40907" {
		t.Fatalf("ControlInfo = %+v, %v", info, err)
	}
	if f.calls[0] != "/var/siem/bin/siem-control info" {
		t.Fatalf("call = %q", f.calls[0])
	}
	st, err := tools.ControlStatus(ctx) // exit 1 is not an error
	if err != nil || len(st.Daemons) != 16 {
		t.Fatalf("ControlStatus = %+v, %v", st, err)
	}
	chk, err := tools.ControlCheck(ctx)
	if err != nil || chk.OK || len(chk.Problems) != 1 || chk.Problems[0].Tag != "siem-analysisd" {
		t.Fatalf("ControlCheck = %+v, %v", chk, err)
	}
	agents, err := tools.AgentList(ctx, manager.ListActive)
	if err != nil || len(agents) != 5 {
		t.Fatalf("AgentList = %+v, %v", agents, err)
	}
	ai, err := tools.AgentInfo(ctx, "001")
	if err != nil || ai.Name != "web-01" {
		t.Fatalf("AgentInfo = %+v, %v", ai, err)
	}
	if _, err := tools.AgentInfo(ctx, "099"); !errors.Is(err, manager.ErrAgentNotFound) {
		t.Fatalf("AgentInfo(099) = %v", err)
	}
	if err := tools.RestartAgent(ctx, "001"); err != nil {
		t.Fatal(err)
	}
	var te *manager.ToolError
	if err := tools.RestartAgent(ctx, "002"); !errors.As(err, &te) || te.ExitCode != 1 || te.Lines[0] != "** Unable to restart agent: 002" {
		t.Fatalf("RestartAgent(002) = %v", err)
	}
	if err := tools.RestartAgent(ctx, "000"); !errors.Is(err, manager.ErrManagerAgent) {
		t.Fatalf("RestartAgent(000) = %v", err)
	}
	if err := tools.RemoveAgent(ctx, "001"); err != nil {
		t.Fatal(err)
	}
	if err := tools.RemoveAgent(ctx, "099"); !errors.Is(err, manager.ErrAgentNotFound) {
		t.Fatalf("RemoveAgent(099) = %v", err)
	}
	if err := tools.RemoveAgent(ctx, "99"); !errors.Is(err, manager.ErrInvalidAgentID) {
		t.Fatalf("RemoveAgent(99) = %v", err)
	}
}

func TestControlCheckUnsupported(t *testing.T) {
	f := &fakeRunner{out: map[string]string{"wazuh-control check": "Usage: /var/ossec/bin/wazuh-control [-j] {start|stop|restart|status|enable|disable|info [-v -r -t]}\n"},
		code: map[string]int{"wazuh-control check": 1}}
	_, err := manager.Tools{InstallDir: "/var/ossec", Runner: f}.ControlCheck(ctxT(t))
	if !errors.Is(err, manager.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}

// TestExecRunner runs tiny shell scripts as the tools through the real exec
// runner.
func TestExecRunner(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, script string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("siem-control", `case "$1" in
info) echo 'SIEM_VERSION="v4.10.0"'; echo 'SIEM_REVISION="41000"'; echo 'SIEM_TYPE="server"';;
status) echo "siem-analysisd is running..."; echo "siem-maild not running..."; exit 1;;
check) echo "2025/03/02 09:20:11 siem-analysisd: CRITICAL: (1202): Configuration error at 'etc/ossec.conf'." >&2; exit 1;;
*) echo "Usage: $0 {start|stop|status|info|check}"; exit 1;;
esac
`)
	write("agent_control", `if [ "$1" = "-l" ]; then printf '\nSIEM agent_control. List of available agents:\n   ID: 000, Name: siem01 (server), IP: 127.0.0.1, Active/Local\n'; fi
if [ "$1" = "-lc" ] || [ "$1" = "-l" -a -n "$HUGE" ]; then head -c 3000000 /dev/zero | tr '\0' 'x'; fi
if [ "$1" = "-ln" ]; then exec sleep 30; fi
`)
	tools := manager.Tools{InstallDir: dir, ControlName: "siem-control", Runner: manager.ExecRunner(1 << 16)}
	ctx := ctxT(t)

	info, err := tools.ControlInfo(ctx)
	if err != nil || info.Version != "v4.10.0" || info.Product != "SIEM" {
		t.Fatalf("ControlInfo = %+v, %v", info, err)
	}
	st, err := tools.ControlStatus(ctx)
	if err != nil || len(st.Daemons) != 2 || !st.Daemons[0].Running {
		t.Fatalf("ControlStatus = %+v, %v", st, err)
	}
	chk, err := tools.ControlCheck(ctx) // the error is on stderr
	if err != nil || chk.OK || len(chk.Problems) != 1 || chk.Problems[0].Level != "CRITICAL" {
		t.Fatalf("ControlCheck = %+v, %v", chk, err)
	}
	agents, err := tools.AgentList(ctx, manager.ListAll)
	if err != nil || len(agents) != 1 || !agents[0].Local {
		t.Fatalf("AgentList = %+v, %v", agents, err)
	}
	// An output over the cap is an error naming the tool and the cap, never
	// a cut listing handed to the parser.
	stdout, _, _, err := manager.ExecRunner(1<<16).Run(ctx, nil, filepath.Join(bin, "agent_control"), "-lc")
	if !errors.Is(err, netclient.ErrTooLarge) || len(stdout) != 1<<16 ||
		!strings.Contains(err.Error(), "agent_control -lc stdout") || !strings.Contains(err.Error(), "64 KiB") {
		t.Fatalf("capped output: %d bytes, err %v", len(stdout), err)
	}
	if _, err := tools.AgentList(ctx, manager.ListActive); !errors.Is(err, netclient.ErrTooLarge) { // -lc
		t.Fatalf("AgentList over the cap: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := tools.AgentList(short, manager.ListDisconnected); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled run: %v", err)
	}
	if _, _, _, err := manager.ExecRunner(0).Run(ctx, nil, filepath.Join(bin, "missing")); err == nil {
		t.Fatal("missing tool ran")
	}
}

func TestValidateAgentID(t *testing.T) {
	for id, ok := range map[string]bool{"001": true, "000": true, "999": true, "1": false, "01": false, "0001": false, "1000": true, "10000": true, "01000": false, "abc": false, "": false, " 01": false, "1e2": false} {
		err := manager.ValidateAgentID(id)
		if (err == nil) != ok {
			t.Errorf("ValidateAgentID(%q) = %v", id, err)
		}
		if err != nil && !strings.Contains(err.Error(), "three digits like 001") {
			t.Errorf("message %q does not name the form", err)
		}
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want manager.Version
		ok   bool
	}{
		{"Wazuh v4.9.0", manager.Version{4, 9, 0}, true},
		{"v4.10.2", manager.Version{4, 10, 2}, true},
		{"4.9.0", manager.Version{4, 9, 0}, true},
		{" SIEM V4.14.1 ", manager.Version{4, 14, 1}, true},
		{"4.9", manager.Version{}, false},
		{"4.9.0-1", manager.Version{}, false},
		{"v4.x.0", manager.Version{}, false},
		{"Wazuh agent v4.9.0", manager.Version{}, false},
		{"", manager.Version{}, false},
		{"v", manager.Version{}, false},
	}
	for _, tt := range tests {
		got, err := manager.ParseVersion(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseVersion(%q) = %v, %v", tt.in, got, err)
		}
	}
	a, b := manager.Version{4, 9, 0}, manager.Version{4, 10, 0}
	if !a.Less(b) || b.Less(a) || a.Compare(a) != 0 || b.Compare(a) != 1 {
		t.Fatal("ordering is numeric, not lexical")
	}
}

// The real tools' answers (v4.9.0 format strings, read at test time): a never-connected agent's
// unset columns are "(null)" and must read as absent; `manage_agents -r` on an unknown id with
// authd running says so only on stderr (9011) and exits 0, which is "agent not found".
func TestRealToolAnswers(t *testing.T) {
	never := wazuhreal.Read(t, "tool-outputs", "agent_control-i-011-never-connected.txt")
	info, ok, errs := manager.ParseAgentInfo(never)
	if !ok || len(errs) != 0 || info.ID != "011" || info.Status != manager.AgentNeverConnected {
		t.Fatalf("ParseAgentInfo = %+v %v %v", info, ok, errs)
	}
	if info.OS != "" || info.Version != "" || info.ConfigHash != "" || info.SharedHash != "" || !info.LastKeepAlive.IsZero() {
		t.Fatalf("(null) fields kept as values: %+v", info)
	}
	connected, _, _ := manager.ParseAgentInfo(wazuhreal.Read(t, "tool-outputs", "agent_control-i-001.txt"))
	if connected.Version == "" || connected.OS == "" {
		t.Fatalf("a connected agent lost its fields: %+v", connected)
	}

	fake := func(stdout, stderr []byte, code int) manager.Tools {
		return manager.Tools{InstallDir: "/var/ossec", Runner: process.RunnerFunc(func(ctx context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
			return stdout, stderr, code, nil
		})}
	}
	err := fake(wazuhreal.Read(t, "tool-outputs", "manage_agents-r-099-authd.txt"),
		wazuhreal.Read(t, "tool-outputs", "manage_agents-r-099-authd.stderr.txt"), 0).RemoveAgent(ctxT(t), "099")
	if !errors.Is(err, manager.ErrAgentNotFound) || !strings.Contains(err.Error(), "9011") {
		t.Fatalf("authd running, unknown id: %v, want ErrAgentNotFound naming 9011", err)
	}
	err = fake(wazuhreal.Read(t, "tool-outputs", "manage_agents-r-099-not-present.txt"), nil, 1).RemoveAgent(ctxT(t), "099")
	if !errors.Is(err, manager.ErrAgentNotFound) {
		t.Fatalf("authd down, unknown id: %v", err)
	}
	if err := fake(wazuhreal.Read(t, "tool-outputs", "manage_agents-r-001.txt"), nil, 0).RemoveAgent(ctxT(t), "001"); err != nil {
		t.Fatalf("removal of 001: %v", err)
	}
}

// TestConfigCheckAnalysisd: on Wazuh the offline check is
// `bin/wazuh-analysisd -t` (wazuh-control has no check): exit 0 and silence
// is valid; the real -t error lines (exit 1) are the problems. A relative
// program is under install_dir, an absolute one is taken as given.
func TestConfigCheckAnalysisd(t *testing.T) {
	realErr := wazuhreal.Read(t, "tool-outputs", "wazuh-control-start-config-error.stderr.txt")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "err.txt"), realErr, 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n[ \"$1\" = -t ] || { echo \"wrong args: $*\" >&2; exit 2; }\n[ -f " + dir + "/broken ] || exit 0\ncat " + dir + "/err.txt >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "wazuh-analysisd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := manager.Tools{InstallDir: dir, ControlName: "wazuh-control", ConfigCheck: []string{"bin/wazuh-analysisd", "-t"}, Runner: manager.ExecRunner(0)}
	if got := tools.ConfigCheckCommand(); got != filepath.Join(bin, "wazuh-analysisd")+" -t" {
		t.Errorf("command = %q", got)
	}
	chk, err := tools.ControlCheck(ctxT(t))
	if err != nil || !chk.OK || len(chk.Problems) != 0 {
		t.Fatalf("valid config: %+v, %v", chk, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	chk, err = tools.ControlCheck(ctxT(t))
	if err != nil || chk.OK || len(chk.Problems) != 2 {
		t.Fatalf("broken config: %+v, %v", chk, err)
	}
	if p := chk.Problems[0]; p.Tag != "wazuh-analysisd" || p.Level != "ERROR" || !strings.Contains(p.Message, "(1230): Invalid element in the configuration: 'jsonout_outputt'") {
		t.Errorf("first problem = %+v", p)
	}
	if p := chk.Problems[1]; p.Level != "CRITICAL" || !strings.Contains(p.Message, "etc/ossec.conf") {
		t.Errorf("second problem = %+v", p)
	}
	// An absolute program is taken as given.
	abs := manager.Tools{InstallDir: "/nonexistent", ConfigCheck: []string{filepath.Join(bin, "wazuh-analysisd"), "-t"}, Runner: manager.ExecRunner(0)}
	if chk, err := abs.ControlCheck(ctxT(t)); err != nil || chk.OK {
		t.Fatalf("absolute program: %+v, %v", chk, err)
	}
	// The real wazuh-control answers `check` with its usage: unsupported,
	// and the error names the key to set.
	usage := wazuhreal.Read(t, "tool-outputs", "wazuh-control-check-usage.txt")
	f := &fakeRunner{out: map[string]string{"wazuh-control check": string(usage)}, code: map[string]int{"wazuh-control check": 1}}
	_, err = manager.Tools{InstallDir: "/var/ossec", Runner: f}.ControlCheck(ctxT(t))
	if !errors.Is(err, manager.ErrUnsupported) || !strings.Contains(err.Error(), "manager.config_check") {
		t.Fatalf("usage answer: %v", err)
	}
}
