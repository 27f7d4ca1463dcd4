// Package diagnose explains why a component's unit failed, or fails, to
// start: it reads what the real component leaves behind (the unit's result
// and exit status from systemd, the component's own logs, /proc for who
// holds a port, the filesystem for owners, modes and free space, the JVM's
// options and the host's memory) and turns it into findings: a cause, the
// evidence that shows it and a fix that works. Each cause is one Detector
// (Detectors lists them); a failure no detector knows is reported with the
// exact log lines that say why, never "restart it".
//
// Doors: `siemctl services start|restart|status` (internal/cmd/services
// through the services operation's Explain hook), the health checks units,
// ports and the component API checks (internal/health), and the runbook's
// unit steps (internal/steps).
package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/units"
)

// Kinds of findings.
const (
	KindPortBound      = "port-bound"
	KindPermission     = "permission"
	KindMissingDir     = "missing-directory" // a setting names a directory that does not exist
	KindRefused        = "refused"           // the component answers and refuses (its output's 401): the readiness probe named it
	KindDiskFull       = "disk-full"
	KindHeapSize       = "heap-size"
	KindHeapOrder      = "heap-order"
	KindBootstrap      = "bootstrap-check"
	KindConfigSyntax   = "config-syntax"
	KindStartTimeout   = "start-timeout"
	KindSecurityInit   = "security-not-initialized"
	KindLogLines       = "log-lines" // no detector knew it: the lines that say why
	KindNoEvidence     = "no-evidence"
	KindStillStarting  = "still-starting"
	KindKilled         = "killed" // ended by a signal from outside (a kill, the kernel's OOM killer)
	defaultLogLines    = 400
	defaultStatusLines = 40
)

// Finding is one cause of a unit's failure.
type Finding struct {
	Kind  string `json:"kind"`
	Cause string `json:"cause"`
	// Evidence are the facts and log lines that show the cause.
	Evidence []string `json:"evidence"`
	Fix      string   `json:"fix"`
	// at is the index of the latest log line the finding rests on: the
	// latest cause comes first.
	at int
	// denied: a file the service user cannot read (not one that is
	// missing) is the cause (Class).
	denied bool
}

// Report is the diagnosis of one component.
type Report struct {
	Component string    `json:"component"`
	Unit      string    `json:"unit"`
	State     string    `json:"state"`
	Result    string    `json:"result,omitempty"` // systemd's Result and exit status
	Findings  []Finding `json:"findings"`
	// Sources are the logs and files read.
	Sources []string `json:"sources"`
}

// Cause is the first finding (the latest in the logs), or the zero value.
func (r Report) Cause() Finding {
	if len(r.Findings) == 0 {
		return Finding{}
	}
	return r.Findings[0]
}

// Summary is "<cause>" of the first finding, or "" without one.
func (r Report) Summary() string { return r.Cause().Cause }

// Fix is the first finding's fix.
func (r Report) Fix() string { return r.Cause().Fix }

// Lines are the report as indented text lines (cause, evidence, fix): what
// the table output of services and health print.
func (r Report) Lines() []string {
	var out []string
	for i, f := range r.Findings {
		if i > 0 {
			out = append(out, "also:")
		}
		out = append(out, "cause: "+f.Cause)
		for _, e := range f.Evidence {
			out = append(out, "  "+e)
		}
		if f.Fix != "" {
			out = append(out, "fix: "+f.Fix)
		}
	}
	return out
}

// Input is what the caller knows of the component.
type Input struct {
	Component string // indexer | manager | dashboard | shipper
	Unit      units.UnitStatus
	Config    *config.Config
	// ConfigCheck, when set, runs the manager's configuration check (the
	// manager.config verdict: API validation or the control tool) and
	// returns its problems ("file:line: element …"); ok when valid.
	ConfigCheck func(ctx context.Context) (problems []string, ok bool, err error)
	// LogLines reads the unit's own output (default units.LastLogLines).
	LogLines func(ctx context.Context, st units.UnitStatus, n int) ([]string, error)
	// Processes, when set, lists the PIDs of the unit's control group: a
	// port held by none of them is held by a foreign process.
	Processes func(ctx context.Context) ([]int, error)
}

// Host is how the diagnosis reads the host; tests point it at fixtures.
type Host struct {
	// Root is prepended to paths systemd and the services see (their mount
	// namespace): "" is the host's own view; /proc/<pid>/root of a running
	// unit's process reads the services' view (RootOf).
	Root string
	// ProcRoot is /proc.
	ProcRoot string
	// Now is the clock.
	Now func() time.Time
}

// RootOf is the filesystem root the services see: /proc/<pid>/root of the
// first running main PID (all units of the stack share systemd's mount
// namespace), "" when none runs or it cannot be read.
func RootOf(procRoot string, sts []units.UnitStatus) string {
	for _, st := range sts {
		if st.MainPID == 0 {
			continue
		}
		p := fmt.Sprintf("%s/%d/root", cmp.Or(procRoot, "/proc"), st.MainPID)
		if _, err := readDirNames(p); err == nil {
			return p
		}
	}
	return ""
}

// Evidence is what the detectors read.
type Evidence struct {
	Input
	Host Host
	// Lines are the component's log lines since its last start (unit
	// output and the component's own log), oldest first.
	Lines []string
	// Sources name what was read.
	Sources []string
	ctx     context.Context
}

// Detector turns evidence into a finding for one cause.
type Detector struct {
	Kind string
	// Components it applies to (none: all).
	Components []string
	Detect     func(ctx context.Context, ev *Evidence) (Finding, bool)
}

// Detectors are the known causes, in no particular order (the latest
// evidence wins). Add a cause here.
func Detectors() []Detector {
	return []Detector{
		{Kind: KindPortBound, Detect: detectPortBound},
		{Kind: KindPermission, Detect: detectPermission},
		{Kind: KindDiskFull, Detect: detectDiskFull},
		{Kind: KindHeapOrder, Components: []string{"indexer"}, Detect: detectHeapOrder},
		{Kind: KindHeapSize, Components: []string{"indexer"}, Detect: detectHeapSize},
		{Kind: KindBootstrap, Components: []string{"indexer"}, Detect: detectBootstrap},
		{Kind: KindStartTimeout, Detect: detectStartTimeout},
		{Kind: KindConfigSyntax, Components: []string{"manager"}, Detect: detectManagerConfig},
		{Kind: KindSecurityInit, Components: []string{"indexer"}, Detect: detectSecurityInit},
		{Kind: KindCertificate, Components: []string{"indexer"}, Detect: detectCertificate},
		{Kind: KindDashboardIndexer, Components: []string{"dashboard"}, Detect: detectDashboardIndexer},
		{Kind: KindClusterJoin, Components: []string{"indexer"}, Detect: detectClusterJoin},
		{Kind: KindUnknownSetting, Components: []string{"indexer"}, Detect: detectUnknownSetting},
		{Kind: KindJVMOption, Components: []string{"indexer"}, Detect: detectJVMOption},
		{Kind: KindExecFailed, Detect: detectExecFailed},
		{Kind: KindAPIConfig, Components: []string{"manager"}, Detect: detectAPIConfig},
		{Kind: KindConfigFile, Components: []string{"shipper"}, Detect: detectShipperConfig},
		{Kind: KindConfigFile, Components: []string{"dashboard"}, Detect: detectDashboardConfig},
		{Kind: KindDashboardTLS, Components: []string{"dashboard"}, Detect: detectDashboardTLS},
		{Kind: KindNodeLock, Components: []string{"indexer"}, Detect: detectNodeLock},
		{Kind: KindKeystore, Components: []string{"indexer"}, Detect: detectKeystore},
		{Kind: KindTLSFile, Components: []string{"indexer"}, Detect: detectIndexerTLSFile},
		{Kind: KindHTTPPort, Components: []string{"indexer"}, Detect: detectHTTPPort},
		{Kind: KindDashboardPort, Components: []string{"dashboard"}, Detect: detectDashboardPort},
		{Kind: KindRunAsRoot, Components: []string{"indexer"}, Detect: detectRunAsRoot},
		{Kind: KindPlainHTTP, Components: []string{"indexer"}, Detect: detectPlainHTTP},
		{Kind: KindMissingFile, Components: []string{"indexer"}, Detect: detectMissingFile},
		{Kind: KindMissingFile, Components: []string{"shipper"}, Detect: detectShipperMissingFile},
		{Kind: KindBindAddress, Components: []string{"indexer"}, Detect: detectBindAddress},
	}
}

// Diagnose reads the evidence and runs the detectors. Without a finding,
// the log lines that say why (errors, exceptions, fatal lines) are the
// finding; without those, the unit's result and last lines.
func Diagnose(ctx context.Context, in Input, host Host) Report {
	host.ProcRoot = cmp.Or(host.ProcRoot, "/proc")
	if host.Now == nil {
		host.Now = time.Now
	}
	st := in.Unit
	r := Report{Component: in.Component, Unit: st.Name, Findings: []Finding{}}
	if st.ActiveState != "" {
		r.State = st.ActiveState + "/" + st.SubState
	}
	if st.Result != "" && st.Result != "success" {
		r.Result = st.Failure()
	}
	ev := &Evidence{Input: in, Host: host, ctx: ctx}
	ev.collect(ctx)
	r.Sources = append([]string{}, ev.Sources...)
	for _, d := range Detectors() {
		if len(d.Components) > 0 && !slices.Contains(d.Components, in.Component) {
			continue
		}
		if f, ok := d.Detect(ctx, ev); ok {
			f.Kind = cmp.Or(f.Kind, d.Kind)
			if f.Evidence == nil {
				f.Evidence = []string{}
			}
			r.Findings = append(r.Findings, f)
		}
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int { return b.at - a.at })
	// a dedicated cause resting on the same line as the generic permission one
	// (a TLS key the service user cannot read) says it better
	dedicated := map[int]bool{}
	for _, f := range r.Findings {
		if f.Kind != KindPermission {
			dedicated[f.at] = true
		}
	}
	r.Findings = slices.DeleteFunc(r.Findings, func(f Finding) bool { return f.Kind == KindPermission && dedicated[f.at] })
	// causes from an earlier run of the same log (before the start that
	// preceded the latest cause) are not this start's
	if len(r.Findings) > 1 {
		from := ev.runStart(r.Findings[0].at)
		r.Findings = slices.DeleteFunc(r.Findings, func(f Finding) bool { return f.at < from })
	}
	if len(r.Findings) == 0 {
		r.Findings = append(r.Findings, fallback(ev, r))
	}
	return r
}

// runMarker marks a start of the component in its output: OpenSearch's
// launcher warning and its node's version line.
var runMarker = regexp.MustCompile(`^warning: no-jdk distributions|\] version\[[^\]]+\], pid\[\d+\]`)

// runStart is the index of the last start marker at or before line i (0
// when none).
func (ev *Evidence) runStart(i int) int {
	for j := min(i, len(ev.Lines)-1); j >= 0; j-- {
		if runMarker.MatchString(ev.Lines[j]) {
			// the launcher prints its warning twice: the run begins at the first
			for j > 0 && runMarker.MatchString(ev.Lines[j-1]) {
				j--
			}
			return j
		}
	}
	return 0
}

// fallback is the finding for a failure no detector knows: the lines that
// say why. A unit still starting (active or activating) has no reason yet:
// it is slow, and its last lines show where it is.
func fallback(ev *Evidence, r Report) Finding {
	why := whyLines(ev.Lines, 8)
	where := strings.Join(ev.Sources, ", ")
	st := ev.Unit
	if st.IsActive() || st.ActiveState == units.Activating {
		last := lastN(dedupe(ev.Lines), 3)
		cause := fmt.Sprintf("%s is still starting (%s) and does not answer yet", ev.Unit.Name, r.State)
		if len(last) > 0 {
			cause += "; its log's last line: " + clip(last[len(last)-1])
		}
		return Finding{Kind: KindStillStarting, Cause: cause, Evidence: clipAll(last),
			Fix: fmt.Sprintf("wait for it (siemctl health again in a minute; the host's load slows a start); if it fails meanwhile, siemctl services status %s says why; a host where it is always this slow: raise %s.start_wait in siemctl's config", ev.Component, ev.Component)}
	}
	if st.Result == "signal" && st.ExecMainCode == 2 {
		// killed (CLD_KILLED, not a crash with a core dump) and no line of its own says why: a kill
		// from outside, which a start undoes; the kernel's OOM killer leaves its own line
		return Finding{Kind: KindKilled,
			Cause:    fmt.Sprintf("%s was killed by signal %d (%s) from outside, a kill or the kernel's OOM killer; its log names no reason of its own", st.Name, st.ExecMainStatus, syscall.Signal(st.ExecMainStatus)),
			Evidence: clipAll(lastN(dedupe(ev.Lines), 3)),
			Fix:      fmt.Sprintf("siemctl services restart %s; if it is killed again, see whether the OOM killer did it (journalctl -k | grep -i 'killed process') and give the host memory or lower the component's heap", ev.Component)}
	}
	cause := "the log does not name a known cause"
	if r.Result != "" {
		cause = "systemd: " + r.Result + "; " + cause
	}
	if len(why) == 0 {
		why = lastN(dedupe(ev.Lines), 5)
	}
	if len(why) == 0 {
		return Finding{Kind: KindNoEvidence, Cause: cause + " (no log lines found)", Evidence: []string{"read: " + cmp.Or(where, "nothing")},
			Fix: fmt.Sprintf("read the unit's full log (journalctl -u %s) and the component's own log for the error before starting it again", ev.Unit.Name)}
	}
	said := why[len(why)-1]
	fix := fmt.Sprintf("act on the lines above (from %s); starting it again without a change fails the same way", cmp.Or(where, "its log"))
	if _, root := rootCause(ev.Lines); root != "" {
		// the chain's root, not the wrapper's "Exception" line
		said = root
		why = append(why, "root cause: "+root)
		fix = fmt.Sprintf("mend what the root cause names (%s; from %s), then %s; starting it again without a change fails the same way", clip(root), cmp.Or(where, "its log"), start(ev.Component))
	}
	return Finding{Kind: KindLogLines, Cause: cause + "; its log says: " + clip(said), Evidence: clipAll(why), Fix: fix}
}

// whyRe matches the lines that say why: an error or fatal level, an
// exception, OpenSearch's root cause and bootstrap lines.
var whyRe = regexp.MustCompile(`\b(ERROR|FATAL|CRITICAL|SEVERE|Error)\b|[A-Za-z]Exception\b|^Caused by|^Likely root cause|bootstrap check failure|\bfailed\b|\bdenied\b`)

// whyLines are the lines that say why, the last max of them, without
// repeats (the unit's output and the component's log hold the same lines).
func whyLines(lines []string, max int) []string {
	var out []string
	for _, l := range dedupe(lines) {
		if t := strings.TrimSpace(l); whyRe.MatchString(t) && !strings.HasPrefix(t, "at ") {
			out = append(out, t)
		}
	}
	return lastN(out, max)
}

func dedupe(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, l)
	}
	return out
}

// clip shortens a log line for a message (OpenSearch prints the JVM's
// whole argument list on one line).
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[:297] + "..."
	}
	return s
}

func clipAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = clip(l)
	}
	return out
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// find returns the index and text of the last line matching any of the
// substrings, -1 when none.
func (ev *Evidence) find(subs ...string) (int, string) {
	for i := len(ev.Lines) - 1; i >= 0; i-- {
		for _, s := range subs {
			if strings.Contains(ev.Lines[i], s) {
				return i, clip(ev.Lines[i])
			}
		}
	}
	return -1, ""
}

// unroot names the paths in s as the operator sees them: without the services' root (Host.Root)
// that a read through it put in front of them.
func (ev *Evidence) unroot(s string) string {
	if ev.Host.Root == "" {
		return s
	}
	return strings.ReplaceAll(s, strings.TrimSuffix(ev.Host.Root, "/")+"/", "/")
}

// path is p as the services see it (Host.Root prepended).
func (ev *Evidence) path(p string) string {
	if ev.Host.Root == "" || p == "" {
		return p
	}
	return ev.Host.Root + p
}

// start is the component's start command for a fix.
func start(component string) string { return "siemctl services start " + component }

// listening reads the host's listening sockets and who holds them.
func (ev *Evidence) holders(ctx context.Context, port int) (hostfacts.Holder, error) {
	l, err := hostfacts.ReadListening(ctx, ev.Host.ProcRoot)
	if err != nil {
		return hostfacts.Holder{}, err
	}
	if !l.TCP(port) {
		return hostfacts.Holder{Proto: "tcp", Port: port}, nil
	}
	hs, err := l.Holders(ctx, ev.Host.ProcRoot, "tcp", port)
	return hs[port], err
}
