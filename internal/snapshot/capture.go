package snapshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/flatmap"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/redact"
)

// DefaultComponents are the stack's components, in start order.
var defaultComponents = []string{"indexer", "manager", "dashboard", "shipper"}

// DefaultComponents returns the component names a capture records by default.
func DefaultComponents() []string { return append([]string(nil), defaultComponents...) }

// ImportantSettings are the cluster settings whose effective values a
// snapshot records (the rest only contributes to settings_hash).
var importantSettings = []string{
	"cluster.blocks.read_only",
	"cluster.blocks.read_only_allow_delete",
	"cluster.max_shards_per_node",
	"cluster.routing.allocation.disk.threshold_enabled",
	"cluster.routing.allocation.disk.watermark.flood_stage",
	"cluster.routing.allocation.disk.watermark.high",
	"cluster.routing.allocation.disk.watermark.low",
	"cluster.routing.allocation.enable",
}

// ImportantSettings returns the setting keys recorded by value.
func ImportantSettings() []string { return append([]string(nil), importantSettings...) }

// defaultMaxShardsPerNode is OpenSearch's default cluster.max_shards_per_node.
const defaultMaxShardsPerNode = 1000

// CaptureOptions configure Capture.
type CaptureOptions struct {
	Label          string
	Host           string
	SiemctlVersion string
	// Components to record (default: the source's HostComponents when it has
	// them, as Live does, else DefaultComponents()).
	Components []string
	// AlertsIndexPrefix (e.g. "siem-alerts-4.x-") finds the templates that
	// apply to today's alerts index.
	AlertsIndexPrefix string
	// Redactor knows the secrets (passwords, tokens) that must never appear
	// in the document; nil redacts credential fields and URL user info only.
	Redactor *redact.Redactor
	// Timeout bounds the whole capture (0: only ctx's deadline).
	Timeout time.Duration
	Now     func() time.Time // default time.Now
	Rand    io.Reader        // for the ID suffix; default crypto/rand
}

// ErrInvalidLabel is returned for a label that cannot be stored.
var ErrInvalidLabel = errors.New("invalid snapshot label")

var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}$`)

// ValidateLabel accepts "" or 1–64 characters of [A-Za-z0-9._:+-], starting
// with a letter or digit.
func ValidateLabel(l string) error {
	if l == "" || labelRE.MatchString(l) {
		return nil
	}
	return fmt.Errorf("%w %q: use up to 64 letters, digits and ._:+- starting with a letter or digit", ErrInvalidLabel, l)
}

// Layouts of a snapshot's time: the ID's and taken_at's. Both carry
// microseconds, so two captures in the same second sort in capture order
// (IDs compare as strings, taken_at as times).
const (
	idTimeLayout     = "20060102T150405.000000Z"
	takenAtLayout    = "2006-01-02T15:04:05.000000Z07:00"
	takenAtPrecision = time.Microsecond
)

// NewID returns a sortable snapshot ID: the UTC time to the microsecond and a
// short random suffix, e.g. 20250102T150405.123456Z-3f9a1c.
func NewID(t time.Time, rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var b [3]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("snapshot id: %w", err)
	}
	return t.UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(b[:]), nil
}

// idRE matches IDs from NewID and those of older siemctl versions, which had
// whole seconds (20250102T150405Z-3f9a1c).
var idRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}(\.[0-9]{6})?Z-[0-9a-f]{6}$`)

// validID reports whether s is shaped like an ID from NewID.
func validID(s string) bool { return idRE.MatchString(s) }

type partResult[T any] struct {
	v   T
	err error
}

// runPart calls f in its own goroutine; the result arrives on the returned
// channel (buffered, so a late answer never blocks). A panic becomes an error.
func runPart[T any](ctx context.Context, f func(context.Context) (T, error)) <-chan partResult[T] {
	ch := make(chan partResult[T], 1)
	go func() {
		var r partResult[T]
		defer func() {
			if p := recover(); p != nil {
				r = partResult[T]{err: fmt.Errorf("internal error: %v", p)}
			}
			ch <- r
		}()
		r.v, r.err = f(ctx)
	}()
	return ch
}

// await waits for a part or the deadline; an answer already there wins. A
// failed part's value is not trusted: with an error, the value is T's zero.
func await[T any](ctx context.Context, ch <-chan partResult[T]) (T, error) {
	var r partResult[T]
	select {
	case r = <-ch:
	default:
		select {
		case r = <-ch:
		case <-ctx.Done():
			r.err = fmt.Errorf("no answer before the deadline: %w", ctx.Err())
		}
	}
	if r.err != nil {
		var zero T
		return zero, r.err
	}
	return r.v, nil
}

// awaitState is await for a part that answers a state: a nil state without
// an error is a Source bug, recorded as the part's error rather than a panic.
func awaitState[T any](ctx context.Context, ch <-chan partResult[*T], what string) (*T, error) {
	v, err := await(ctx, ch)
	if err == nil && v == nil {
		err = errors.New("no " + what)
	}
	return v, err
}

// Capture reads the stack through src and returns a document. A part that
// fails or does not answer before the deadline is recorded as down; Capture
// itself fails only when ctx is cancelled (not timed out) or on bad options.
func Capture(ctx context.Context, src Source, opts CaptureOptions) (*Document, error) {
	if err := ValidateLabel(opts.Label); err != nil {
		return nil, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	taken := now().UTC().Truncate(takenAtPrecision)
	id, err := NewID(taken, opts.Rand)
	if err != nil {
		return nil, err
	}
	parent := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}

	unitsCh := runPart(ctx, src.Units)
	pkgCh := runPart(ctx, src.PackageVersions)
	ixCh := runPart(ctx, src.IndexerState)
	mgrCh := runPart(ctx, src.ManagerState)
	dashCh := runPart(ctx, src.DashboardState)
	alertCh := runPart(ctx, src.AlertStats)
	healthCh := runPart(ctx, src.Health)

	units, unitsErr := await(ctx, unitsCh)
	pkgs, pkgErr := await(ctx, pkgCh)
	ix, ixErr := awaitState(ctx, ixCh, "indexer state")
	mgr, mgrErr := awaitState(ctx, mgrCh, "manager state")
	dash, dashErr := awaitState(ctx, dashCh, "dashboard state")
	alerts, alertErr := awaitState(ctx, alertCh, "alert stats")
	health, healthErr := await(ctx, healthCh)

	if err := parent.Err(); errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("snapshot capture interrupted: %w", err)
	}

	d := &Document{
		SchemaVersion:  SchemaVersion,
		ID:             id,
		Label:          opts.Label,
		TakenAt:        taken.Format(takenAtLayout),
		Host:           opts.Host,
		SiemctlVersion: opts.SiemctlVersion,
		Components:     map[string]Component{},
	}
	for part, err := range map[string]error{
		"units": unitsErr, "packages": pkgErr, "indexer": ixErr, "manager": mgrErr,
		"dashboard": dashErr, "alerts": alertErr, "health": healthErr,
	} {
		if err != nil {
			d.Errors = append(d.Errors, PartError{Part: part, Error: err.Error()})
		}
	}

	d.Indexer = buildIndexer(ix, ixErr, taken, opts.AlertsIndexPrefix)
	d.Manager = buildManager(mgr, mgrErr)
	if alertErr != nil {
		d.Alerts = Alerts{Error: "unreachable: " + alertErr.Error()}
	} else {
		d.Alerts = Alerts{Reachable: true, Last5m: alerts.Last5m, Newest: rfc3339(alerts.Newest)}
	}
	if healthErr == nil {
		d.Health = append([]HealthResult(nil), health...)
	}

	names := opts.Components
	if hc, ok := src.(interface{ HostComponents() []string }); ok && len(names) == 0 {
		names = hc.HostComponents()
	}
	if len(names) == 0 {
		names = defaultComponents
	}
	for _, name := range names {
		c := Component{PackageVersion: pkgs[name]}
		if u, ok := units[name]; ok {
			c.Unit = Unit{Name: u.Name, LoadState: u.LoadState, ActiveState: u.ActiveState,
				SubState: u.SubState, Since: rfc3339(u.Since), NRestarts: u.NRestarts}
		} else if unitsErr != nil {
			c.Unit.ActiveState = "unknown"
		}
		var apiErr error
		switch name {
		case "indexer":
			apiErr = ixErr
			if ix != nil {
				c.APIVersion = ix.Version
			}
		case "manager":
			apiErr = mgrErr
			if mgr != nil {
				c.APIVersion = mgr.Version
			}
		case "dashboard":
			apiErr = dashErr
			if dash != nil {
				c.APIVersion = dash.Version
			}
		default: // no API: up when its unit is active
			switch {
			case unitsErr != nil:
				apiErr = fmt.Errorf("unit state unknown: %w", unitsErr)
			case c.Unit.ActiveState != "active":
				apiErr = fmt.Errorf("unit %s is %s", output.Dash(c.Unit.Name), output.Dash(c.Unit.ActiveState))
			}
		}
		c.Reachable = apiErr == nil
		if apiErr != nil {
			c.Error = "unreachable: " + apiErr.Error()
		}
		d.Components[name] = c
	}

	redactDocument(opts.Redactor, d)
	d.normalize()
	d.summarize()
	return d, nil
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func buildIndexer(st *IndexerState, err error, now time.Time, alertsPrefix string) Indexer {
	if err != nil {
		return Indexer{Error: "unreachable: " + err.Error()}
	}
	ix := Indexer{
		Reachable:          true,
		ClusterName:        st.ClusterName,
		ClusterUUID:        st.ClusterUUID,
		PathData:           st.PathData,
		Status:             st.Status,
		NumberOfNodes:      st.NumberOfNodes,
		ActiveShards:       st.ActiveShards,
		UnassignedShards:   st.UnassignedShards,
		Relocating:         st.RelocatingShards,
		Initializing:       st.InitializingShards,
		Templates:          make(map[string]string, len(st.Templates)),
		Pipelines:          make(map[string]string, len(st.Pipelines)),
		Indices:            append([]Index(nil), st.Indices...),
		Disk:               append([]Disk(nil), st.Disk...),
		ShardsByState:      map[string]int{},
		UnassignedByReason: map[string]int{},
		Errors:             map[string]string{},
	}
	for k, e := range st.Errors {
		if e != nil {
			ix.Errors[k] = e.Error()
		}
	}
	if _, failed := ix.Errors["settings"]; !failed {
		settings, hash, err := digestSettings(st.Settings)
		if err != nil {
			ix.Errors["settings"] = err.Error()
		} else {
			ix.Settings, ix.SettingsHash = settings, hash
			ix.MaxShardsPerNode = defaultMaxShardsPerNode
			if v := settings["cluster.max_shards_per_node"]; v != "" {
				if n, err := strconv.Atoi(v); err == nil && n > 0 {
					ix.MaxShardsPerNode = n
				}
			}
		}
	}
	today := alertsPrefix + now.UTC().Format("2006.01.02")
	for name, body := range st.Templates {
		ix.Templates[name] = HashJSON(body)
		if alertsPrefix != "" && templateMatches(body, today) {
			ix.AlertsTemplates = append(ix.AlertsTemplates, name)
		}
	}
	for id, body := range st.Pipelines {
		ix.Pipelines[id] = HashJSON(body)
	}
	for _, s := range st.Shards {
		state := strings.ToUpper(s.State)
		if state == "" {
			state = "UNKNOWN"
		}
		ix.ShardsByState[state]++
		if state == "UNASSIGNED" {
			reason := s.UnassignedReason
			if reason == "" {
				reason = "UNKNOWN"
			}
			ix.UnassignedByReason[reason]++
		}
	}
	return ix
}

func buildManager(st *ManagerState, err error) Manager {
	if err != nil {
		return Manager{Error: "unreachable: " + err.Error()}
	}
	m := Manager{
		Reachable: true,
		Version:   st.Version,
		Info:      copyMap(st.Info),
		Daemons:   copyMap(st.Daemons),
		APIUsers:  append([]string(nil), st.APIUsers...),
		Errors:    map[string]string{},
	}
	for k, e := range st.Errors {
		if e != nil {
			m.Errors[k] = e.Error()
		}
	}
	switch {
	case st.AgentList != nil:
		m.Agents = aggregateAgents(st.AgentList)
	case st.AgentCounts != nil:
		m.Agents = Agents{ByStatus: copyMap(st.AgentCounts.ByStatus), ByVersion: copyMap(st.AgentCounts.ByVersion), Total: st.AgentCounts.Total}
	}
	return m
}

func aggregateAgents(list []Agent) Agents {
	a := Agents{ByStatus: map[string]int{}, ByVersion: map[string]int{}}
	for _, ag := range list {
		if ag.ID == "000" {
			continue
		}
		a.Total++
		st := ag.Status
		if st == "" {
			st = "unknown"
		}
		a.ByStatus[st]++
		v := ag.Version
		if v == "" {
			v = "unknown"
		}
		a.ByVersion[v]++
	}
	return a
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// HashJSON returns "sha256:<hex>" of the canonical form of a JSON body (keys
// sorted, insignificant whitespace removed, numbers kept as written). A body
// that is not JSON is hashed as raw bytes with the prefix "sha256-raw:".
func HashJSON(body []byte) string {
	canon, err := CanonicalJSON(body)
	if err != nil {
		sum := sha256.Sum256(body)
		return "sha256-raw:" + hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CanonicalJSON re-encodes a JSON value with sorted object keys.
func CanonicalJSON(body []byte) ([]byte, error) {
	v, err := decodeJSON(body)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("decode json: trailing data after the value")
	}
	return v, nil
}

// digestSettings flattens a _cluster/settings body (nested or flat) and
// returns the effective important settings and a hash of the persistent and
// transient scopes (defaults, if present, are not hashed: they change with
// every version).
func digestSettings(body []byte) (map[string]string, string, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte(`{}`)
	}
	v, err := decodeJSON(body)
	if err != nil {
		return nil, "", fmt.Errorf("cluster settings: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, "", errors.New("cluster settings: not a JSON object")
	}
	scopes := map[string]map[string]string{}
	for _, scope := range []string{"defaults", "persistent", "transient"} {
		flat := map[string]string{}
		if sub, ok := root[scope].(map[string]any); ok {
			for k, v := range flatmap.Flatten(sub) {
				flat[k] = settingString(v)
			}
		}
		scopes[scope] = flat
	}
	hashed, err := json.Marshal(map[string]map[string]string{"persistent": scopes["persistent"], "transient": scopes["transient"]})
	if err != nil {
		return nil, "", fmt.Errorf("cluster settings: %w", err)
	}
	sum := sha256.Sum256(hashed)
	out := make(map[string]string, len(importantSettings))
	for _, k := range importantSettings {
		val := ""
		for _, scope := range []string{"defaults", "persistent", "transient"} {
			if s, ok := scopes[scope][k]; ok {
				val = s
			}
		}
		out[k] = val
	}
	return out, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// settingString is a cluster setting's value as text (lists as JSON).
func settingString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// templateMatches reports whether a template body's index patterns match
// index. It understands composable templates (index_patterns, possibly under
// index_template) and legacy ones (index_patterns or template).
func templateMatches(body []byte, index string) bool {
	v, err := decodeJSON(body)
	if err != nil {
		return false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if inner, ok := obj["index_template"].(map[string]any); ok {
		obj = inner
	}
	var patterns []string
	switch p := obj["index_patterns"].(type) {
	case string:
		patterns = append(patterns, strings.Split(p, ",")...)
	case []any:
		for _, e := range p {
			if s, ok := e.(string); ok {
				patterns = append(patterns, s)
			}
		}
	}
	if s, ok := obj["template"].(string); ok {
		patterns = append(patterns, s)
	}
	for _, p := range patterns {
		if ok, err := path.Match(strings.TrimSpace(p), index); err == nil && ok {
			return true
		}
	}
	return false
}

// sortedSet returns the sorted distinct strings of in.
func sortedSet(in []string) []string {
	m := map[string]bool{}
	for _, s := range in {
		m[s] = true
	}
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
