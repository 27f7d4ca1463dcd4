package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// ToolEnv is what the command-line tools need from their process.
type ToolEnv struct {
	Home      Home
	FaultsDir string
	Hostname  string
	Now       func() time.Time
	Stdout    io.Writer
	Stderr    io.Writer
	// Poll is the wait step of start/stop (default 100ms).
	Poll time.Duration
	// Name is the control tool's program name: "wazuh-control" behaves like the real one (no check
	// command); anything else (siem-control, the siem layout's tool) also has `check`.
	Name string
	// Loc is the time zone of ctime-style dates (agent_control's syscheck times); default time.Local.
	Loc *time.Location
}

func (e *ToolEnv) defaults() {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Hostname == "" {
		e.Hostname = e.Home.Hostname()
	}
	if e.Poll == 0 {
		e.Poll = 100 * time.Millisecond
	}
	if e.Name == "" {
		e.Name = "siem-control"
	}
	if e.Loc == nil {
		e.Loc = time.Local
	}
}

// logLine prints a daemon-style log line (src/shared/debug_op.c: "YYYY/MM/DD HH:MM:SS tag: LEVEL: msg").
func (e *ToolEnv) logLine(tag, level, msg string) {
	fmt.Fprintf(e.Stderr, "%s %s: %s: %s\n", e.Now().In(e.Loc).Format("2006/01/02 15:04:05"), tag, level, msg)
}

// ToolHome finds the install directory of a tool from its executable path (INSTALL_DIR/bin/<tool>);
// override is used when non-empty (SIEM_HOME).
func ToolHome(exe, override string) Home {
	if override != "" {
		return Home{Dir: override}
	}
	return Home{Dir: filepath.Dir(filepath.Dir(exe))}
}

func (e *ToolEnv) version() Version {
	v, err := e.Home.ReadVersion()
	if err != nil {
		return Version{Tag: "v0.0.0"}
	}
	return v
}

func (e *ToolEnv) viewCtx(agents []*Agent) *viewCtx {
	fc := faults.Checker{Dir: e.FaultsDir}
	c := &viewCtx{now: e.Now(), hostname: e.Hostname, nodeName: "node01", managerVersion: e.version().Tag}
	if b, err := os.ReadFile(e.Home.OssecConf()); err == nil {
		if conf, err := ParseConfig(b); err == nil {
			c.nodeName = conf.NodeName
		}
	}
	c.discSince, c.disconnected = fc.Since(faults.AgentsDisconnected)
	if fc.Active(faults.AgentNewer) {
		for _, a := range agents {
			if a.ID > 0 && a.Conn == StatusActive {
				c.newerID = a.ID
				break
			}
		}
	}
	return c
}

// ---- siem-control (wazuh-control) ----

// Control runs siem-control with args and returns the exit code.
func Control(ctx context.Context, e ToolEnv, args []string) int {
	e.defaults()
	jsonOut := false
	if len(args) > 0 && args[0] == "-j" {
		jsonOut, args = true, args[1:]
	}
	// The real wazuh-control (src/init/wazuh-server.sh help()) has no check command; the siem
	// layout's siem-control adds it.
	hasCheck := e.Name != "wazuh-control"
	usage := func() int {
		cmds := "start|stop|restart|status|enable|disable|info [-v -r -t]"
		if hasCheck {
			cmds = "start|stop|restart|status|check|enable|disable|info [-v -r -t]"
		}
		fmt.Fprintf(e.Stdout, "\nUsage: %s [-j] {%s}\n\n    -j    Use JSON output.\n", e.Home.Path("bin", e.Name), cmds)
		return 1
	}
	if len(args) == 0 {
		return usage()
	}
	switch args[0] {
	case "status":
		return e.controlStatus(jsonOut)
	case "info":
		return e.controlInfo(jsonOut, args[1:], usage)
	case "check":
		if !hasCheck {
			return usage()
		}
		return e.controlCheck(jsonOut)
	case "start":
		return e.controlStart(ctx, jsonOut)
	case "stop":
		return e.controlStop(ctx, jsonOut)
	case "restart":
		if rc := e.controlStop(ctx, jsonOut); rc != 0 {
			return rc
		}
		return e.controlStart(ctx, jsonOut)
	}
	return usage()
}

func (e *ToolEnv) controlStatus(jsonOut bool) int {
	rc := 0
	var items []any
	for _, d := range controlDaemons {
		pid, path := pidfile(e.Home, d)
		running := false
		if pid != 0 {
			if processAlive(pid) {
				running = true
			} else if !jsonOut {
				fmt.Fprintf(e.Stdout, "%s: Process %d not used by Wazuh, removing...\n", d, pid)
				_ = os.Remove(path)
			}
		}
		st := "running"
		if !running {
			rc, st = 1, "stopped"
		}
		if jsonOut {
			items = append(items, orderedObject{{"daemon", d}, {"status", st}})
			continue
		}
		if running {
			fmt.Fprintf(e.Stdout, "%s is running...\n", d)
		} else {
			fmt.Fprintf(e.Stdout, "%s not running...\n", d)
		}
	}
	if jsonOut {
		b, _ := marshalNoEscape(orderedObject{{"error", 0}, {"data", items}})
		fmt.Fprintln(e.Stdout, string(b))
	}
	return rc
}

func (e *ToolEnv) controlInfo(jsonOut bool, args []string, usage func() int) int {
	v, err := e.Home.ReadVersion()
	if err != nil {
		fmt.Fprintf(e.Stderr, "siem-control: %v\n", err)
		return 1
	}
	vals := [][2]string{{"WAZUH_VERSION", v.Tag}, {"WAZUH_REVISION", strconv.Itoa(v.Revision)}, {"WAZUH_TYPE", "server"}}
	if len(args) > 0 {
		i := map[string]int{"-v": 0, "-r": 1, "-t": 2}
		n, ok := i[args[0]]
		if !ok {
			return usage()
		}
		vals = vals[n : n+1]
		if !jsonOut {
			fmt.Fprintln(e.Stdout, vals[0][1])
			return 0
		}
	}
	if jsonOut {
		var items []any
		for _, kv := range vals {
			items = append(items, orderedObject{{kv[0], kv[1]}})
		}
		b, _ := marshalNoEscape(orderedObject{{"error", 0}, {"data", items}})
		fmt.Fprintln(e.Stdout, string(b))
		return 0
	}
	for _, kv := range vals {
		fmt.Fprintf(e.Stdout, "%s=%q\n", kv[0], kv[1])
	}
	return 0
}

// configError prints a failed configuration test like wazuh-control start does.
func (e *ToolEnv) configError(err error, jsonOut bool) int {
	var ce *ConfigError
	lines := []string{err.Error()}
	if errors.As(err, &ce) {
		lines = ce.Lines
	}
	ts := e.Now().Format("2006/01/02 15:04:05")
	for _, l := range lines {
		fmt.Fprintf(e.Stderr, "%s %s\n", ts, l)
	}
	markFailed(e.Home, confDaemon)
	if jsonOut {
		b, _ := marshalNoEscape(orderedObject{{"error", 20}, {"message", confDaemon + ": Configuration error."}})
		fmt.Fprintln(e.Stdout, string(b))
	} else {
		fmt.Fprintf(e.Stdout, "%s: Configuration error. Exiting\n", confDaemon)
	}
	return 1
}

func (e *ToolEnv) controlCheck(jsonOut bool) int {
	if err := ValidateInstall(e.Home); err != nil {
		return e.configError(err, jsonOut)
	}
	_ = os.Remove(filepath.Join(e.Home.RunDir(), confDaemon+".failed"))
	if jsonOut {
		fmt.Fprintln(e.Stdout, `{"error":0,"data":"Configuration OK"}`)
	}
	return 0
}

func (e *ToolEnv) runningPID() int {
	for _, d := range controlDaemons {
		if pid, _ := pidfile(e.Home, d); pid != 0 && processAlive(pid) {
			return pid
		}
	}
	return 0
}

func (e *ToolEnv) controlStart(ctx context.Context, jsonOut bool) int {
	v := e.version()
	conf := (*Config)(nil)
	if b, err := os.ReadFile(e.Home.OssecConf()); err == nil {
		conf, _ = ParseConfig(b)
	}
	if e.runningPID() != 0 {
		if !jsonOut {
			fmt.Fprintf(e.Stdout, "Starting Wazuh %s...\n", v.Tag)
			for _, d := range startOrder(conf) {
				fmt.Fprintf(e.Stdout, "%s already running...\n", d)
			}
			fmt.Fprintln(e.Stdout, "Completed.")
		}
		return 0
	}
	if err := ValidateInstall(e.Home); err != nil {
		return e.configError(err, jsonOut)
	}
	if !jsonOut {
		fmt.Fprintf(e.Stdout, "Starting Wazuh %s...\n", v.Tag)
	}
	if err := os.MkdirAll(e.Home.Path("logs"), 0o750); err != nil {
		fmt.Fprintf(e.Stderr, "siem-control: %v\n", err)
		return 1
	}
	logf, err := os.OpenFile(e.Home.Path("logs", "siem-managerd.out"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		fmt.Fprintf(e.Stderr, "siem-control: %v\n", err)
		return 1
	}
	defer logf.Close()
	cmd := exec.Command(e.Home.Path("bin", "siem-managerd"), "--home", e.Home.Dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = append(os.Environ(), faults.EnvDir+"="+e.FaultsDir)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.Stdout, "wazuh-analysisd did not start correctly.\n")
		return 1
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(e.Poll)
	defer tick.Stop()
	for {
		if p, _ := pidfile(e.Home, "wazuh-apid"); p == pid {
			break
		}
		select {
		case <-ctx.Done():
			return 1
		case <-exited:
			fmt.Fprintln(e.Stdout, "wazuh-analysisd did not start correctly.")
			return 1
		case <-deadline.C:
			fmt.Fprintln(e.Stdout, "wazuh-apid did not start correctly.")
			return 1
		case <-tick.C:
		}
	}
	if !jsonOut {
		for _, d := range startOrder(conf) {
			fmt.Fprintf(e.Stdout, "Started %s...\n", d)
		}
		fmt.Fprintln(e.Stdout, "Completed.")
	}
	return 0
}

// startOrder is the order wazuh-control starts the running daemons in.
func startOrder(conf *Config) []string {
	order := []string{"wazuh-apid", "wazuh-db", "wazuh-authd", "wazuh-execd", "wazuh-analysisd", "wazuh-syscheckd",
		"wazuh-remoted", "wazuh-logcollector", "wazuh-monitord", "wazuh-modulesd"}
	run := runningDaemons(conf)
	var out []string
	for _, d := range order {
		if slices.Contains(run, d) {
			out = append(out, d)
		}
	}
	return out
}

func (e *ToolEnv) controlStop(ctx context.Context, jsonOut bool) int {
	v := e.version()
	pid := e.runningPID()
	for _, d := range controlDaemons {
		p, _ := pidfile(e.Home, d)
		if jsonOut {
			continue
		}
		if p != 0 && processAlive(p) {
			fmt.Fprintf(e.Stdout, "Killing %s...\n", d)
		} else {
			fmt.Fprintf(e.Stdout, "%s not running...\n", d)
		}
	}
	if pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		tick := time.NewTicker(e.Poll)
		defer tick.Stop()
		for i := 0; processAlive(pid) && i < int(10*time.Second/e.Poll); i++ {
			select {
			case <-ctx.Done():
				return 1
			case <-tick.C:
			}
		}
		if processAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		removePidfiles(e.Home, pid)
	}
	if !jsonOut {
		fmt.Fprintf(e.Stdout, "Wazuh %s Stopped\n", v.Tag)
	}
	return 0
}

// ---- agent_control ----

func statusText(st string) string {
	switch st {
	case StatusActive:
		return "Active"
	case StatusDisconnected:
		return "Disconnected"
	case StatusNeverConnected:
		return "Never connected"
	case StatusPending:
		return "Pending"
	}
	return "Unknown"
}

// agentControlHelp prints agent_control's helpmsg() (src/util/agent_control.c), which exits 1.
func (e *ToolEnv) agentControlHelp() {
	_, _ = io.WriteString(e.Stdout, `
Wazuh agent_control: Control remote agents.
Available options:
	-h                This help message.
	-l                List available (active or not) agents.
	-lc               List active agents only.
	-ln               List disconnected agents only.
	-i <id>           Extracts information from an agent.
	-R -a             Restart all agents.
	-R -u <id>        Restart the specified agent.
	-r -a             Runs the integrity/rootkit checking on all agents now.
	-r -u <id>        Runs the integrity/rootkit checking on one agent now.

	-s                Changes the output to CSV (comma delimited).
	-j                Changes the output to JSON .
Available options for active response:
	-b <ip>           Blocks the specified ip address.
	-f <ar> -a        Used with -b, specifies which response to run. Apply AR on all agents.
	-f <ar> -u <id>   Used with -b, specifies which response to run. Apply AR on specified agent.
	-L                List available active responses.
	-s                Changes the output to CSV (comma delimited).
	-j                Changes the output to JSON .
	-d                Debug mode.

`)
}

func (e *ToolEnv) jsonErr(code int, msg string) int {
	b, _ := marshalNoEscape(orderedObject{{"error", code}, {"message", msg}})
	fmt.Fprintln(e.Stdout, string(b))
	return 1
}

// AgentControl runs agent_control.
func AgentControl(ctx context.Context, e ToolEnv, args []string) int {
	e.defaults()
	var list, listActive, listDisc, restart, all, csv, jsonOut bool
	var info, unit string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-l":
			list = true
		case "-lc":
			listActive = true
		case "-ln":
			listDisc = true
		case "-R":
			restart = true
		case "-a":
			all = true
		case "-s":
			csv = true
		case "-j":
			jsonOut = true
		case "-i", "-u":
			if i+1 >= len(args) {
				e.agentControlHelp()
				return 1
			}
			if args[i] == "-i" {
				info = args[i+1]
			} else {
				unit = args[i+1]
			}
			i++
		case "-h":
			e.agentControlHelp()
			return 1
		default:
			e.agentControlHelp()
			return 1
		}
	}
	store := NewAgentStore(e.Home)
	agents, err := store.Agents()
	if err != nil && !errors.Is(err, ErrNoDatabase) {
		fmt.Fprintf(e.Stderr, "agent_control: %v\n", err)
		return 1
	}
	if errors.Is(err, ErrNoDatabase) {
		agents = []*Agent{{ID: 0, RegisterIP: "127.0.0.1", Conn: StatusActive}}
	}
	c := e.viewCtx(agents)
	byID := indexAgents(agents)
	findAgent := func(s string) (*Agent, bool) {
		if !allDigits(s) {
			return nil, false
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, false
		}
		a, ok := byID[n]
		return a, ok
	}
	switch {
	case list || listActive || listDisc:
		return e.listAgents(agents, c, listActive, listDisc, csv, jsonOut)
	case info != "":
		a, ok := findAgent(info)
		if !ok {
			if jsonOut {
				return e.jsonErr(40, fmt.Sprintf("Invalid agent id '%s'.", info))
			}
			fmt.Fprintf(e.Stdout, "\n** Invalid agent id '%s'.\n", info)
			e.agentControlHelp()
			return 1
		}
		return e.agentInfo(a, c, jsonOut)
	case restart && (all || unit != ""):
		if e.runningPID() == 0 {
			e.logLine("agent_control", "ERROR", "(1301): Unable to connect to active response queue.")
			if jsonOut {
				return e.jsonErr(43, "Unable to connect to remoted.")
			}
			fmt.Fprintln(e.Stdout, "\n** Unable to connect to remoted.")
			return 1
		}
		if all {
			if jsonOut {
				fmt.Fprintln(e.Stdout, `{"error":0,"data":"Restarting all agents"}`)
				return 0
			}
			fmt.Fprintln(e.Stdout, "\nWazuh agent_control: Restarting agent: (all)")
			return 0
		}
		a, ok := findAgent(unit)
		if !ok || a.ID == 0 {
			if jsonOut {
				return e.jsonErr(40, fmt.Sprintf("Invalid agent id '%s'.", unit))
			}
			fmt.Fprintf(e.Stdout, "\n** Invalid agent id '%s'.\n", unit)
			e.agentControlHelp()
			return 1
		}
		if c.status(a) != StatusActive {
			if jsonOut {
				return e.jsonErr(46, fmt.Sprintf("Unable to restart agent: %s", a.IDString()))
			}
			fmt.Fprintf(e.Stdout, "\n** Unable to restart agent: %s\n", a.IDString())
			return 1
		}
		if jsonOut {
			fmt.Fprintln(e.Stdout, `{"error":0,"data":"Restarting agent"}`)
			return 0
		}
		fmt.Fprintf(e.Stdout, "\nWazuh agent_control: Restarting agent: %s\n", a.IDString())
		return 0
	}
	e.agentControlHelp()
	return 1
}

func (e *ToolEnv) listAgents(agents []*Agent, c *viewCtx, activeOnly, discOnly, csv, jsonOut bool) int {
	type row struct{ id, name, ip, status string }
	var rows []row
	for _, a := range agents {
		st := c.status(a)
		if a.ID == 0 {
			if discOnly {
				continue
			}
			rows = append(rows, row{"000", c.hostname + " (server)", "127.0.0.1", "Active/Local"})
			continue
		}
		if activeOnly && st != StatusActive {
			continue
		}
		if discOnly && st != StatusDisconnected {
			continue
		}
		rows = append(rows, row{a.IDString(), a.Name, a.RegisterIP, statusText(st)})
	}
	switch {
	case jsonOut:
		items := make([]any, 0, len(rows))
		for _, r := range rows {
			name := strings.TrimSuffix(r.name, " (server)")
			st := r.status
			if st == "Active/Local" {
				st = "Active"
			}
			items = append(items, orderedObject{{"id", r.id}, {"name", name}, {"ip", r.ip}, {"status", st}})
		}
		b, _ := marshalNoEscape(orderedObject{{"error", 0}, {"data", items}})
		fmt.Fprintln(e.Stdout, string(b))
	case csv:
		for _, r := range rows {
			fmt.Fprintf(e.Stdout, "%s,%s,%s,%s,\n", r.id, r.name, r.ip, r.status)
		}
		if !activeOnly { // print_agents(): the (empty) agentless part
			fmt.Fprintln(e.Stdout)
		}
	default:
		var b strings.Builder
		b.WriteString("\nWazuh agent_control. List of available agents:\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "   ID: %s, Name: %s, IP: %s, %s\n", r.id, r.name, r.ip, r.status)
		}
		b.WriteString("\n")
		if !activeOnly { // print_agents() lists agentless devices except for -lc
			b.WriteString("List of agentless devices:\n\n")
		}
		_, _ = io.WriteString(e.Stdout, b.String())
	}
	return 0
}

// agentInfo prints `agent_control -i` (src/util/agent_control.c). Columns that are NULL in global.db
// (never-connected agents; the manager's hashes) are printed by glibc's printf as "(null)"; syscheck
// times come from ctime_r, whose trailing newline makes the blank line after each date.
func (e *ToolEnv) agentInfo(a *Agent, c *viewCtx, jsonOut bool) int {
	const null = "(null)"
	st := statusText(c.status(a))
	id, ip := a.IDString(), a.RegisterIP
	if a.ID == 0 {
		st, ip = "Active/Local", "127.0.0.1"
	}
	orNull := func(s string) string {
		if s == "" {
			return null
		}
		return s
	}
	osStr, ver, keep := null, orNull(c.version(a)), null
	if o := c.os(a); o != nil && o.Uname != "" {
		osStr = o.Uname
	}
	if t := c.lastKeepAlive(a); t != 0 {
		keep = strconv.FormatInt(t, 10)
	}
	scan := func(t int64) string {
		if t == 0 {
			return "Unknown\n"
		}
		return time.Unix(t, 0).In(e.Loc).Format("Mon Jan _2 15:04:05 2006") + "\n\n"
	}
	if jsonOut {
		// The JSON form is not captured in the real material: absent values stay "Unknown" / "" as before.
		unknown := func(s string) string {
			if s == null {
				return "Unknown"
			}
			return s
		}
		scanJSON := func(t int64) string { return strings.TrimSpace(scan(t)) }
		b, _ := marshalNoEscape(orderedObject{{"error", 0}, {"data", orderedObject{
			{"id", id}, {"name", c.name(a)}, {"ip", ip}, {"status", strings.TrimSuffix(st, "/Local")},
			{"os", unknown(osStr)}, {"version", unknown(ver)}, {"configSum", a.ConfigSum}, {"mergedSum", a.MergedSum},
			{"lastKeepAlive", unknown(keep)}, {"syscheckTime", scanJSON(a.SyscheckStart)}, {"syscheckEndTime", scanJSON(a.SyscheckEnd)}}}})
		fmt.Fprintln(e.Stdout, string(b))
		return 0
	}
	idLine := id
	if a.ID == 0 {
		idLine += " (local instance)"
	}
	fmt.Fprintf(e.Stdout, "\nWazuh agent_control. Agent information:\n   Agent ID:   %s\n   Agent Name: %s\n   IP address: %s\n   Status:     %s\n\n",
		idLine, c.name(a), ip, st)
	fmt.Fprintf(e.Stdout, "   Operating system:    %s\n   Client version:      %s\n   Configuration hash:  %s\n   Shared file hash:    %s\n   Last keep alive:     %s\n\n",
		osStr, ver, orNull(a.ConfigSum), orNull(a.MergedSum), keep)
	fmt.Fprintf(e.Stdout, "   Syscheck last started at:  %s   Syscheck last ended at:    %s", scan(a.SyscheckStart), scan(a.SyscheckEnd))
	return 0
}

// ---- manage_agents ----

// ManageAgents runs manage_agents (-l, -r <id>).
func ManageAgents(ctx context.Context, e ToolEnv, args []string) int {
	e.defaults()
	store := NewAgentStore(e.Home)
	listOut := func(agents []*Agent) {
		var b strings.Builder
		n := 0
		for _, a := range agents {
			if a.ID == 0 {
				continue
			}
			if n == 0 {
				b.WriteString("\nAvailable agents: \n")
			}
			n++
			fmt.Fprintf(&b, "   ID: %s, Name: %s, IP: %s\n", a.IDString(), a.Name, a.RegisterIP)
		}
		if n == 0 {
			b.WriteString("\n** No agent available.\n")
		}
		_, _ = io.WriteString(e.Stdout, b.String())
	}
	agents, err := store.Agents()
	if errors.Is(err, ErrNoDatabase) {
		agents, err = nil, nil
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "manage_agents: %v\n", err)
		return 1
	}
	if len(args) == 1 && args[0] == "-l" {
		listOut(agents)
		fmt.Fprintln(e.Stdout)
		return 0
	}
	if len(args) == 2 && args[0] == "-r" {
		return e.removeAgent(store, agents, args[1], listOut)
	}
	v := e.version()
	fmt.Fprintf(e.Stdout, `
Wazuh %s - Wazuh Inc.

  manage_agents -[Vhlj] [-a <ip> -n <name>] [-r <id>]
    -V          Version and license message.
    -h          This help message.
    -j          Use JSON output.
    -l          List available agents.
    -r <id>     Remove an agent.
`, v.Tag)
	return 1
}

// removeAgent is `manage_agents -r <id>` (src/addagent/main.c, manage_agents.c remove_agent()): the
// banner and menu, the agent list, the prompts answered from OSSEC_AGENT_ID/OSSEC_ACTION_CONFIRMED.
// With authd running the removal goes through authd's local socket, which answers an unknown id with
// error 9011 (logged on stderr; the tool still exits 0); with authd down the id is checked against
// client.keys first (NO_ID, exit 1).
func (e *ToolEnv) removeAgent(store *AgentStore, agents []*Agent, id string, listOut func([]*Agent)) int {
	fmt.Fprintf(e.Stdout, "\n\n****************************************\n* Wazuh %s Agent manager.          *\n"+
		"* The following options are available: *\n****************************************\n"+
		"   (A)dd an agent (A).\n   (E)xtract key for an agent (E).\n   (L)ist already added agents (L).\n"+
		"   (R)emove an agent (R).\n   (Q)uit.\nChoose your action: A,E,L,R or Q: ", e.version().Tag)
	listOut(agents)
	fmt.Fprintf(e.Stdout, "Provide the ID of the agent to be removed (or '\\q' to quit): %s\n", id)
	n, convErr := strconv.Atoi(id)
	known := convErr == nil && allDigits(id) && n != 0 && indexAgents(agents)[n] != nil
	authd, _ := pidfile(e.Home, "wazuh-authd")
	viaAuthd := authd != 0 && processAlive(authd)
	if !known && !viaAuthd {
		fmt.Fprintf(e.Stdout, "\n** Invalid ID '%s' given. ID is not present.\n", id)
		return 1
	}
	fmt.Fprintln(e.Stdout, "Confirm deleting it?(y/n): y")
	if !known {
		e.logLine("manage_agents", "ERROR", "9011: Agent ID not found")
		fmt.Fprint(e.Stdout, "\nmanage_agents: Exiting.\n")
		return 0
	}
	err := store.Update(func(cur []*Agent) ([]*Agent, bool, error) {
		out := make([]*Agent, 0, len(cur))
		for _, a := range cur {
			if a.ID != n {
				out = append(out, a)
			}
		}
		return out, len(out) != len(cur), nil
	})
	if err != nil {
		fmt.Fprintf(e.Stderr, "manage_agents: %v\n", err)
		return 1
	}
	fmt.Fprintf(e.Stdout, "Agent '%03d' removed.\n\nmanage_agents: Exiting.\n", n)
	return 0
}

// ---- wazuh-analysisd ----

// Analysisd runs `wazuh-analysisd -t` (and -T): read and check ossec.conf and the rules as the daemon
// does at start, then exit (src/analysisd/analysisd.c: `if (test_config) exit(0)`): nothing printed and
// exit 0 when the configuration loads; the daemon's own ERROR and CRITICAL lines on stderr
// ("YYYY/MM/DD HH:MM:SS wazuh-analysisd: ERROR: (1230): …") and exit 1 when it does not. Unlike
// wazuh-control's start it marks nothing failed. The daemon itself (without -t) is siem-managerd.
func Analysisd(_ context.Context, e ToolEnv, args []string) int {
	e.defaults()
	test := false
	for _, a := range args {
		switch a {
		case "-t", "-T":
			test = true
		case "-f", "-d", "-dd":
		case "-h":
			fmt.Fprintf(e.Stdout, "\n%s %s - Wazuh Inc.\n\n  %s: -[Vhdtf] [-u user] [-g group] [-c config] [-D dir]\n    -t          Test configuration\n",
				confDaemon, e.version().Tag, confDaemon)
			return 0
		default:
			e.logLine(confDaemon, "CRITICAL", fmt.Sprintf("(1101): Invalid option '%s'.", a))
			return 1
		}
	}
	if !test {
		e.logLine(confDaemon, "CRITICAL", "(1101): the lab's analysis runs in siem-managerd; this program only tests the configuration (-t).")
		return 1
	}
	if err := ValidateInstall(e.Home); err != nil {
		var ce *ConfigError
		lines := []string{confDaemon + ": CRITICAL: " + err.Error()}
		if errors.As(err, &ce) {
			lines = ce.Lines
		}
		ts := e.Now().In(e.Loc).Format("2006/01/02 15:04:05")
		for _, l := range lines {
			fmt.Fprintf(e.Stderr, "%s %s\n", ts, l)
		}
		return 1
	}
	return 0
}
