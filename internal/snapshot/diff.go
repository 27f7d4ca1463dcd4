package snapshot

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/output"
)

// allocationAll reports whether an effective
// cluster.routing.allocation.enable ("" when unset) lets every shard be
// allocated: the verdict of cluster.AllocationSettingBack.
func allocationAll(v string) bool {
	return cluster.AllocationSettingBack(indexer.Setting{Key: indexer.KeyAllocationEnable, Value: v}).Level == cluster.OK
}

// Severity of a change; higher is worse.
type Severity int

const (
	Info Severity = iota
	Warning
	Critical
)

func (s Severity) String() string {
	switch s {
	case Critical:
		return "critical"
	case Warning:
		return "warning"
	default:
		return "info"
	}
}

// MarshalText renders the severity word in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a severity word.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "critical":
		*s = Critical
	case "warning":
		*s = Warning
	case "info":
		*s = Info
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// Categories of changes (the second sort key).
const (
	CatAgents    = "agents"
	CatAlerts    = "alerts"
	CatAPIUsers  = "api_users"
	CatCluster   = "cluster"
	CatComponent = "component"
	CatDaemon    = "daemon"
	CatDisk      = "disk"
	CatDocs      = "docs"
	CatHealth    = "health"
	CatIndex     = "index"
	CatPipeline  = "pipeline"
	CatSettings  = "settings"
	CatTemplate  = "template"
	CatUnit      = "unit"
	CatVersion   = "version"
)

// Change is one difference between two snapshots.
type Change struct {
	Severity Severity `json:"severity"`
	Category string   `json:"category"`
	Key      string   `json:"key"`
	Message  string   `json:"message"`
	Before   string   `json:"before"`
	After    string   `json:"after"`
}

// Ref identifies a snapshot in a report.
type Ref struct {
	ID      string `json:"id"`
	Label   string `json:"label"`
	TakenAt string `json:"taken_at"`
}

// Report is the result of Diff.
type Report struct {
	From    Ref      `json:"from"`
	To      Ref      `json:"to"`
	Changes []Change `json:"changes"`
}

// Critical reports whether any change is critical.
func (r Report) Critical() bool { return r.Worst() == Critical }

// Worst is the highest severity in the report (Info when empty).
func (r Report) Worst() Severity {
	w := Info
	for _, c := range r.Changes {
		w = max(w, c.Severity)
	}
	return w
}

// Counts returns the number of changes per severity word.
func (r Report) Counts() map[string]int {
	m := map[string]int{"critical": 0, "warning": 0, "info": 0}
	for _, c := range r.Changes {
		m[c.Severity.String()]++
	}
	return m
}

// DiffOptions tune Diff.
type DiffOptions struct {
	// Expected maps a component to the package version it is expected to
	// have in the second snapshot (an upgrade's target): reaching it is
	// info, a different version is a warning.
	Expected map[string]string
	// AlertsTemplates adds template names whose loss is critical (the
	// snapshots' own alerts_templates are always included).
	AlertsTemplates []string
	// IgnoreIndices are glob patterns of indices whose disappearance is
	// expected (e.g. retention cleanup): reported as info.
	IgnoreIndices []string
	// DiskWarnPercent: a node crossing it is a warning (default 85).
	DiskWarnPercent float64
}

type differ struct {
	opts    DiffOptions
	changes []Change
}

func (df *differ) add(sev Severity, cat, key, before, after, format string, args ...any) {
	df.changes = append(df.changes, Change{Severity: sev, Category: cat, Key: key,
		Before: before, After: after, Message: fmt.Sprintf(format, args...)})
}

// Diff compares snapshot a (before) with b (after). Changes are ordered by
// severity (critical first), then category, then key. Sections that could
// not be read in either snapshot are not compared (one change says so), so a
// component being down is reported once rather than as everything lost.
func Diff(a, b *Document, opts DiffOptions) Report {
	if opts.DiskWarnPercent == 0 {
		opts.DiskWarnPercent = 85
	}
	df := &differ{opts: opts}
	df.components(a, b)
	df.indexer(a, b)
	df.manager(a, b)
	df.alerts(a, b)
	df.health(a, b)
	sort.SliceStable(df.changes, func(i, j int) bool {
		ci, cj := df.changes[i], df.changes[j]
		if ci.Severity != cj.Severity {
			return ci.Severity > cj.Severity
		}
		if ci.Category != cj.Category {
			return ci.Category < cj.Category
		}
		return ci.Key < cj.Key
	})
	if df.changes == nil {
		df.changes = []Change{}
	}
	return Report{From: refOf(a), To: refOf(b), Changes: df.changes}
}

func refOf(d *Document) Ref { return Ref{ID: d.ID, Label: d.Label, TakenAt: d.TakenAt} }

// normVersion reduces "Wazuh v4.10.0", "v4.10.0" and "4.10.0-1" to "4.10.0".
func normVersion(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.LastIndexByte(v, ' '); i >= 0 {
		v = v[i+1:]
	}
	v = strings.TrimPrefix(strings.TrimPrefix(v, "v"), "V")
	if i := strings.IndexByte(v, ':'); i >= 0 { // debian epoch
		v = v[i+1:]
	}
	if i := strings.IndexByte(v, '-'); i >= 0 { // debian revision
		v = v[:i]
	}
	return v
}

func (df *differ) versionChange(comp, kind, before, after, pkgAfter string) {
	if before == after {
		return
	}
	key := comp + "/" + kind
	exp, hasExp := df.opts.Expected[comp]
	switch {
	case hasExp && kind == "api" && pkgAfter == exp:
		df.add(Info, CatVersion, key, before, after, "%s api version %s → %s with the expected package %s", comp, output.Dash(before), output.Dash(after), exp)
	case after == "" && kind == "package":
		df.add(Critical, CatVersion, key, before, after, "%s package no longer installed (was %s)", comp, before)
	case hasExp && (after == exp || (kind == "api" && normVersion(after) == normVersion(exp))):
		df.add(Info, CatVersion, key, before, after, "%s %s version %s → %s, as expected", comp, kind, output.Dash(before), after)
	case hasExp:
		df.add(Warning, CatVersion, key, before, after, "%s %s version %s → %s, expected %s", comp, kind, output.Dash(before), output.Dash(after), exp)
	default:
		df.add(Warning, CatVersion, key, before, after, "%s %s version changed %s → %s", comp, kind, output.Dash(before), output.Dash(after))
	}
}

func (df *differ) components(a, b *Document) {
	for _, name := range sortedKeys(a.Components) {
		ca := a.Components[name]
		cb, ok := b.Components[name]
		if !ok {
			df.add(Warning, CatComponent, name, "recorded", "", "%s no longer recorded", name)
			continue
		}
		if ca.Reachable && !cb.Reachable {
			df.add(Critical, CatComponent, name, "reachable", "unreachable", "%s became unreachable: %s", name, strings.TrimPrefix(cb.Error, "unreachable: "))
		} else if !ca.Reachable && cb.Reachable {
			df.add(Info, CatComponent, name, "unreachable", "reachable", "%s is reachable again", name)
		}
		ua, ub := ca.Unit, cb.Unit
		unitKey := output.Dash(ub.Name)
		if ua.ActiveState == "active" && ub.ActiveState != "active" {
			df.add(Critical, CatUnit, unitKey, ua.ActiveState, ub.ActiveState, "unit %s no longer active (%s/%s)", unitKey, output.Dash(ub.ActiveState), output.Dash(ub.SubState))
		} else if ua.ActiveState != "active" && ub.ActiveState == "active" {
			df.add(Info, CatUnit, unitKey, ua.ActiveState, ub.ActiveState, "unit %s is active again", unitKey)
		}
		if ub.NRestarts > ua.NRestarts {
			df.add(Info, CatUnit, unitKey, strconv.Itoa(int(ua.NRestarts)), strconv.Itoa(int(ub.NRestarts)),
				"unit %s restarted %d time(s) by systemd", unitKey, ub.NRestarts-ua.NRestarts)
		}
		if ca.PackageVersion != "" || cb.PackageVersion != "" {
			df.versionChange(name, "package", ca.PackageVersion, cb.PackageVersion, cb.PackageVersion)
		}
		// An unreachable API has no version: that is reported above.
		if ca.Reachable && cb.Reachable {
			df.versionChange(name, "api", ca.APIVersion, cb.APIVersion, cb.PackageVersion)
		}
	}
	for _, name := range sortedKeys(b.Components) {
		if _, ok := a.Components[name]; !ok {
			df.add(Info, CatComponent, name, "", "recorded", "%s newly recorded", name)
		}
	}
	for comp, exp := range df.opts.Expected {
		cb, ok := b.Components[comp]
		ca := a.Components[comp]
		if ok && cb.PackageVersion == ca.PackageVersion && cb.PackageVersion != exp {
			df.add(Warning, CatVersion, comp+"/package", ca.PackageVersion, cb.PackageVersion,
				"%s package still %s, expected %s", comp, output.Dash(cb.PackageVersion), exp)
		}
	}
}

var statusRank = map[string]int{"green": 0, "yellow": 1, "red": 2}

func (df *differ) indexer(a, b *Document) {
	ia, ib := &a.Indexer, &b.Indexer
	if !df.bothReachable(CatCluster, "indexer", ia.Reachable, ib.Reachable) {
		return
	}
	ra, oka := statusRank[ia.Status]
	rb, okb := statusRank[ib.Status]
	switch {
	case oka && okb && rb > ra:
		sev := Warning
		if ib.Status == "red" {
			sev = Critical
		}
		df.add(sev, CatCluster, "status", ia.Status, ib.Status, "cluster status %s → %s", ia.Status, ib.Status)
	case oka && okb && rb < ra:
		df.add(Info, CatCluster, "status", ia.Status, ib.Status, "cluster status %s → %s", ia.Status, ib.Status)
	case !okb && ib.Status != ia.Status:
		df.add(Warning, CatCluster, "status", ia.Status, ib.Status, "cluster status unknown (%q)", ib.Status)
	}
	if ib.NumberOfNodes < ia.NumberOfNodes {
		df.add(Warning, CatCluster, "nodes", itoa(ia.NumberOfNodes), itoa(ib.NumberOfNodes), "nodes %d → %d", ia.NumberOfNodes, ib.NumberOfNodes)
	}
	if ib.UnassignedShards > ia.UnassignedShards {
		df.add(Warning, CatCluster, "unassigned_shards", itoa(ia.UnassignedShards), itoa(ib.UnassignedShards),
			"unassigned shards %d → %d%s", ia.UnassignedShards, ib.UnassignedShards, reasons(ib.UnassignedByReason))
	}
	if ib.Initializing+ib.Relocating > 0 && ia.Initializing+ia.Relocating == 0 {
		df.add(Info, CatCluster, "moving_shards", "0", itoa(ib.Initializing+ib.Relocating),
			"%d initializing, %d relocating shards", ib.Initializing, ib.Relocating)
	}
	if ib.MaxShardsPerNode != ia.MaxShardsPerNode && ia.MaxShardsPerNode > 0 && ib.MaxShardsPerNode > 0 {
		df.add(Info, CatSettings, "cluster.max_shards_per_node", itoa(ia.MaxShardsPerNode), itoa(ib.MaxShardsPerNode),
			"max shards per node %d → %d", ia.MaxShardsPerNode, ib.MaxShardsPerNode)
	}

	if !failed(ia.Errors, ib.Errors, "settings", df, "settings") {
		keysChanged := false
		for _, k := range sortedKeys(ib.Settings) {
			va, vb := ia.Settings[k], ib.Settings[k]
			if va == vb || k == "cluster.max_shards_per_node" {
				continue
			}
			keysChanged = true
			sev := Info
			msg := "%s changed %s → %s"
			if k == indexer.KeyAllocationEnable && !allocationAll(vb) {
				sev, msg = Warning, "%s changed %s → %s: set it back to all"
			}
			df.add(sev, CatSettings, k, va, vb, msg, k, orQuote(va), orQuote(vb))
		}
		if !keysChanged && ia.SettingsHash != ib.SettingsHash && ia.SettingsHash != "" {
			df.add(Info, CatSettings, "settings_hash", ia.SettingsHash, ib.SettingsHash, "other cluster settings changed")
		}
	}

	if !failed(ia.Errors, ib.Errors, "indices", df, "indices") {
		df.indices(ia.Indices, ib.Indices)
	}
	if !failed(ia.Errors, ib.Errors, "templates", df, "templates") {
		// Losing an alerts template is critical when nothing replaces it
		// (or it is named in the options).
		alerts := map[string]bool{}
		for _, n := range df.opts.AlertsTemplates {
			alerts[n] = true
		}
		if len(ib.AlertsTemplates) == 0 {
			for _, n := range ia.AlertsTemplates {
				alerts[n] = true
			}
		}
		df.hashes(CatTemplate, "template", ia.Templates, ib.Templates, alerts)
		if len(ia.AlertsTemplates) > 0 && len(ib.AlertsTemplates) == 0 {
			df.add(Critical, CatTemplate, "alerts", strings.Join(ia.AlertsTemplates, ","), "",
				"no template applies to today's alerts index any more")
		}
	}
	if !failed(ia.Errors, ib.Errors, "pipelines", df, "pipelines") {
		df.hashes(CatPipeline, "ingest pipeline", ia.Pipelines, ib.Pipelines, nil)
	}
	if !failed(ia.Errors, ib.Errors, "disk", df, "disk") {
		da := map[string]Disk{}
		for _, d := range ia.Disk {
			da[d.Node] = d
		}
		for _, d := range ib.Disk {
			prev, ok := da[d.Node]
			if d.Percent >= df.opts.DiskWarnPercent && (!ok || prev.Percent < df.opts.DiskWarnPercent) {
				df.add(Warning, CatDisk, d.Node, pct(prev.Percent), pct(d.Percent),
					"disk on %s at %s (≥ %s)", d.Node, pct(d.Percent), pct(df.opts.DiskWarnPercent))
			}
		}
	}
}

// bothReachable reports whether a component's state was read in both
// snapshots. When only one has it, one info change says the state is not
// compared: the component change reports the outage, and comparing an empty
// side would report everything (every index, every agent) as lost.
func (df *differ) bothReachable(cat, comp string, ra, rb bool) bool {
	if ra && rb {
		return true
	}
	if ra != rb {
		df.add(Info, cat, comp, "", "", "%s state not compared: unreachable in %s", comp, which(ra))
	}
	return false
}

func which(aReachable bool) string {
	if aReachable {
		return "the second snapshot"
	}
	return "the first snapshot"
}

// failed reports whether sub-part key failed in either snapshot (and says so
// once, as info).
func failed(ea, eb map[string]string, key string, df *differ, what string) bool {
	msgA, inA := ea[key]
	msgB, inB := eb[key]
	if !inA && !inB {
		return false
	}
	msg := msgB
	if inA {
		msg = msgA
	}
	df.add(Info, CatCluster, key, "", "", "%s not compared: not read in %s (%s)", what, which(!inA), msg)
	return true
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func (df *differ) ignoredIndex(name string) bool {
	for _, p := range df.opts.IgnoreIndices {
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

func (df *differ) indices(la, lb []Index) {
	mb := make(map[string]*Index, len(lb))
	for i := range lb {
		mb[lb[i].Name] = &lb[i]
	}
	ma := make(map[string]bool, len(la))
	for i := range la {
		xa := &la[i]
		ma[xa.Name] = true
		xb, ok := mb[xa.Name]
		if !ok {
			sev := Critical
			msg := "index disappeared (%d docs, %s)"
			if df.ignoredIndex(xa.Name) {
				sev, msg = Info, "index removed as expected (%d docs, %s)"
			}
			df.add(sev, CatIndex, xa.Name, i64(xa.DocsCount), "", msg, xa.DocsCount, output.Bytes(xa.StoreBytes))
			continue
		}
		if xa.Status != "close" && xb.Status == "close" {
			df.add(Warning, CatIndex, xa.Name, xa.Status, xb.Status, "index closed (its %d docs are no longer searchable)", xa.DocsCount)
			continue
		}
		if xb.Health == "red" && xa.Health != "red" {
			df.add(Critical, CatIndex, xa.Name, xa.Health, xb.Health, "index health %s → red", output.Dash(xa.Health))
		}
		if xb.DocsCount < xa.DocsCount && xb.Status != "close" {
			sev := Critical
			note := ""
			if strings.HasPrefix(xa.Name, ".") {
				sev, note = Warning, " (system index)"
			}
			df.add(sev, CatDocs, xa.Name, i64(xa.DocsCount), i64(xb.DocsCount),
				"documents decreased by %d (%d → %d)%s", xa.DocsCount-xb.DocsCount, xa.DocsCount, xb.DocsCount, note)
		}
	}
	for i := range lb {
		if !ma[lb[i].Name] {
			df.add(Info, CatIndex, lb[i].Name, "", i64(lb[i].DocsCount), "new index (%d docs)", lb[i].DocsCount)
		}
	}
}

func (df *differ) hashes(cat, what string, a, b map[string]string, criticalOnLoss map[string]bool) {
	for _, name := range sortedKeys(a) {
		hb, ok := b[name]
		switch {
		case !ok && criticalOnLoss[name]:
			df.add(Critical, cat, name, short(a[name]), "", "alerts %s %s disappeared", what, name)
		case !ok:
			df.add(Warning, cat, name, short(a[name]), "", "%s %s disappeared", what, name)
		case hb != a[name]:
			df.add(Warning, cat, name, short(a[name]), short(hb), "%s %s changed", what, name)
		}
	}
	for _, name := range sortedKeys(b) {
		if _, ok := a[name]; !ok {
			df.add(Info, cat, name, "", short(b[name]), "new %s %s", what, name)
		}
	}
}

// short abbreviates a "sha256:<hex>" hash for display.
func short(h string) string {
	if i := strings.IndexByte(h, ':'); i >= 0 && len(h) > i+13 {
		return h[:i+13]
	}
	return h
}

func (df *differ) manager(a, b *Document) {
	ma, mb := &a.Manager, &b.Manager
	if !df.bothReachable(CatAgents, "manager", ma.Reachable, mb.Reachable) {
		return
	}
	if !failed(ma.Errors, mb.Errors, "daemons", df, "daemons") {
		for _, d := range sortedKeys(ma.Daemons) {
			if ma.Daemons[d] == "running" && mb.Daemons[d] != "running" {
				df.add(Warning, CatDaemon, d, "running", mb.Daemons[d], "daemon %s no longer running (%s)", d, output.Dash(mb.Daemons[d]))
			}
		}
	}
	if !failed(ma.Errors, mb.Errors, "agents", df, "agents") {
		aa, ab := ma.Agents, mb.Agents
		if act, bct := aa.ByStatus["active"], ab.ByStatus["active"]; bct < act {
			df.add(Warning, CatAgents, "active", itoa(act), itoa(bct), "active agents %d → %d (%d lost)", act, bct, act-bct)
		}
		if ab.Total < aa.Total {
			df.add(Warning, CatAgents, "total", itoa(aa.Total), itoa(ab.Total), "registered agents %d → %d (%d removed)", aa.Total, ab.Total, aa.Total-ab.Total)
		}
		for _, v := range sortedSet(append(sortedKeys(aa.ByVersion), sortedKeys(ab.ByVersion)...)) {
			if aa.ByVersion[v] != ab.ByVersion[v] {
				df.add(Info, CatAgents, "version/"+v, itoa(aa.ByVersion[v]), itoa(ab.ByVersion[v]),
					"agents on %s: %d → %d", v, aa.ByVersion[v], ab.ByVersion[v])
			}
		}
	}
	if !failed(ma.Errors, mb.Errors, "api_users", df, "API users") {
		have := map[string]bool{}
		for _, u := range mb.APIUsers {
			have[u] = true
		}
		for _, u := range ma.APIUsers {
			if !have[u] {
				df.add(Warning, CatAPIUsers, u, u, "", "API user %s disappeared (known upgrade failure: re-create it)", u)
			}
		}
	}
}

func (df *differ) alerts(a, b *Document) {
	if !a.Alerts.Reachable || !b.Alerts.Reachable {
		return
	}
	if a.Alerts.Last5m > 0 && b.Alerts.Last5m == 0 {
		df.add(Warning, CatAlerts, "last_5m", i64(a.Alerts.Last5m), "0",
			"alert rate dropped to zero (newest alert %s)", output.Dash(b.Alerts.Newest))
	}
}

var healthRank = map[string]int{"OK": 0, "UNKNOWN": 1, "WARN": 2, "CRIT": 3}

func (df *differ) health(a, b *Document) {
	before := map[string]string{}
	for _, h := range a.Health {
		before[h.ID] = h.Status
	}
	for _, h := range b.Health {
		prev, ok := before[h.ID]
		if !ok || prev == h.Status {
			continue
		}
		sev := Info
		if h.Status == "CRIT" && healthRank[prev] < healthRank["CRIT"] {
			sev = Warning
		}
		df.add(sev, CatHealth, h.ID, prev, h.Status, "health check %s %s → %s: %s", h.ID, prev, h.Status, h.Summary)
	}
}

func itoa(n int) string    { return strconv.Itoa(n) }
func i64(n int64) string   { return strconv.FormatInt(n, 10) }
func pct(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) + "%" }
func orQuote(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}
