// Package steps holds siemctl's runbook step kinds: Go code registered by
// name (snapshot.capture, gate.cluster_health, units.stop, packages.install,
// …) that the engine plans and runs. Each kind decodes its parameters
// strictly, describes the exact commands and API calls it makes (for plans
// and --dry-run), and, where it makes sense, verifies an interrupted attempt
// (resume) or skips a step that is already done, with a reason.
//
// Kinds reach the outside world only through Deps (small interfaces that
// internal/factory's Clients.StepDeps fills with the real clients, tests with
// fakes), describe themselves with the planning context the engine hands
// Describe (Planning: the configuration and the run's versions), and exchange run data
// through the engine (Env.Get/Set) under the keys below: the target and the
// versions found before the upgrade, backups, snapshots. Secrets never reach
// a child's argv, a journal line or an error: every message a kind returns
// goes through Deps.Redact.
//
// What a run is beyond its steps (the session that plans it for plan, apply,
// resume and rollback, target resolution, preflight, deadlines, the time
// budget, the evidence) lives in internal/upgrade, which imports this
// package; the file-tree safety the backups rest on (manifests, archives,
// checksums, no-follow restores) lives in internal/filetree. A kind is a door:
// the operations it calls live with their area (internal/ops/watch: the
// watch window's judgement; ops/fleet: the agents that must come back;
// ops/cluster: the recovery settings; ops/secadmin: the security backup's
// swap; ops/versions: the upgrade path; internal/shipper: the Filebeat module
// and Filebeat's registry).
package steps

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/ops/services"
	stackversions "github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/process"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/units"
)

// Components in start order.
var Components = config.Components

// identical are the components whose versions must be identical.
var identical = stackversions.Core

// Backups records where a run put its backups (run data "backups").
type Backups struct {
	Dir             string `json:"dir"`
	Configs         string `json:"configs,omitempty"`
	ConfigsSHA256   string `json:"configs_sha256,omitempty"`
	IndexerSecurity string `json:"indexer_security,omitempty"`
	IndexerData     string `json:"indexer_data,omitempty"`
	IndexerDataSize int64  `json:"indexer_data_bytes,omitempty"`
	IndexerDataN    int    `json:"indexer_data_files,omitempty"`
	// IndexerDataMode is the indexer.data_safety mode the run used.
	IndexerDataMode string `json:"indexer_data_mode,omitempty"`
	// DataSafety is the mode the run chose (indexer.data_safety auto
	// resolved by gate.data_safety or the first step that needs it), and
	// DataSafetyWhy the reason.
	DataSafety    string `json:"data_safety,omitempty"`
	DataSafetyWhy string `json:"data_safety_why,omitempty"`
	// IndexerSnapshot is the snapshot taken in snapshot mode.
	IndexerSnapshot *DataSnapshot `json:"indexer_snapshot,omitempty"`
	// IndexerDataHook is the take hook's run in command mode.
	IndexerDataHook *DataHookRun `json:"indexer_data_hook,omitempty"`
	// IndexerDataAside is where a snapshot-mode rollback set the new
	// version's data directory aside (kept).
	IndexerDataAside string `json:"indexer_data_aside,omitempty"`
	// ManagerDB is the cold copy of the manager's queue/db (managerdb.go).
	ManagerDB string `json:"manager_db,omitempty"`
	// ShipperRegistry is the archive of the shipper's registry (its read
	// position) saved with the indexer data; ShipperRegistryAbsent: the
	// shipper had none then.
	ShipperRegistry       string `json:"shipper_registry,omitempty"`
	ShipperRegistryAbsent bool   `json:"shipper_registry_absent,omitempty"`
}

// Mode is the data safety mode the run used (IndexerDataMode), else the
// one it chose (DataSafety); "" when it recorded neither.
func (b Backups) Mode() string { return cmp.Or(b.IndexerDataMode, b.DataSafety) }

// DiffSummary is what snapshot.diff records (run data "diff").
type DiffSummary struct {
	From     string            `json:"from"`
	To       string            `json:"to"`
	Worst    string            `json:"worst"`
	Counts   map[string]int    `json:"counts"`
	Changes  []snapshot.Change `json:"changes"`
	DocsFrom int64             `json:"docs_from"`
	DocsTo   int64             `json:"docs_to"`
}

// IndexerAPI is the part of *indexer.Client the kinds use.
type IndexerAPI interface {
	Health(ctx context.Context, hr indexer.HealthRequest) (indexer.Health, error)
	Settings(ctx context.Context, includeDefaults bool) (indexer.Settings, error)
	PutSettings(ctx context.Context, u indexer.SettingsUpdate) (bool, error)
	Flush(ctx context.Context) (indexer.ShardsSummary, error)
	SyncedFlush(ctx context.Context) (indexer.ShardsSummary, bool, error)
	CatShards(ctx context.Context) ([]indexer.Shard, error)
	AllocationExplain(ctx context.Context, er indexer.ExplainRequest) (indexer.Explanation, error)
	SimulateIndex(ctx context.Context, indexName string) (indexer.Simulation, error)
	PutLegacyTemplate(ctx context.Context, name string, body []byte) error
	NodesVersions(ctx context.Context) ([]indexer.NodeVersion, error)
	Count(ctx context.Context, index, q string, since time.Time) (int64, error)
}

// ManagerAPI is the part of *manager.Client the kinds use.
type ManagerAPI interface {
	Info(ctx context.Context) (manager.APIInfo, error)
	ManagerStatus(ctx context.Context) (manager.DaemonStates, error)
	ListAgents(ctx context.Context, q manager.AgentQuery) ([]manager.Agent, error)
}

// UnitsAPI is the part of *units.Manager the kinds use: what the services
// operations need, and daemon-reload.
type UnitsAPI interface {
	services.Units
	DaemonReload(ctx context.Context) error
}

// PackagesAPI is the part of *packages.Manager the kinds use.
type PackagesAPI interface {
	Kind() string
	Installed(ctx context.Context, pkgs ...string) (map[string]string, error)
	Candidates(ctx context.Context, pkg string) (packages.Policy, error)
	Install(ctx context.Context, pkgs map[string]string, opts packages.InstallOptions) error
	InstallCommands(pkgs map[string]string, opts packages.InstallOptions, installed map[string]string) []packages.Command
	Compare(a, b string) int
}

// ShipperAPI is the part of *shipper.Shipper the kinds use.
type ShipperAPI interface {
	Describe(op shipper.Op) []string
	SetupPipelines(ctx context.Context) error
	SetupIndexManagement(ctx context.Context) error
	TestOutput(ctx context.Context) (shipper.Report, error)
}

// Runner runs a program (the indexer's security init tool, the data hooks).
type Runner = process.Runner

// DiskUsage is the usage of the filesystem holding a path.
type DiskUsage struct {
	TotalBytes  uint64
	FreeBytes   uint64
	UsedPercent float64
}

// Deps is everything the kinds need from the outside world (engine
// Runner.Deps). A missing client carries the reason it is missing.
type Deps struct {
	Config *config.Config
	Logger *slog.Logger
	Now    func() time.Time

	Indexer  clientset.Client[IndexerAPI]
	Manager  clientset.Client[ManagerAPI]
	Units    func(ctx context.Context) (UnitsAPI, error)
	Packages clientset.Client[PackagesAPI]
	Shipper  clientset.Client[ShipperAPI]
	// Exec runs the security init tool.
	Exec Runner
	// Dashboard answers GET / with its HTTP status.
	Dashboard func(ctx context.Context) (int, error)
	// Ports lists the listening TCP ports.
	Ports func(ctx context.Context) (map[int]bool, error)
	// Disk measures the filesystem holding path.
	Disk func(path string) (DiskUsage, error)
	// Snapshot captures the stack's state under label (not saved).
	Snapshot func(ctx context.Context, label string) (*snapshot.Document, error)
	// Snapshots stores the captured snapshots.
	Snapshots *snapshot.Store
	// Probe runs the end-to-end data-flow probe; nil: the kinds' own
	// fallback (a tagged syslog event counted in the alerts indices).
	Probe func(ctx context.Context) (probe.Report, error)
	// ProbeSend sends the probe's event ahead (probe.send) and ProbeFollow
	// follows such an event until it is searchable (gate.probe); nil:
	// probe.send is skipped and gate.probe sends its own.
	ProbeSend   func(ctx context.Context) (probe.Sent, error)
	ProbeFollow func(ctx context.Context, sent probe.Sent) (probe.Report, error)
	// Fetch reads a URL (shipper template); nil: net/http with TLS defaults.
	Fetch func(ctx context.Context, url string) ([]byte, error)
	// Redact removes secrets from a message.
	Redact func(string) string
	// Ready are the components' readiness probes: a unit step's start
	// returns when the component answers (nil: once active). Diagnose
	// explains a unit that fails to start (internal/ops/diagnose).
	Ready    services.Probes
	Diagnose func(ctx context.Context, c services.Component, st units.UnitStatus) diagnose.Report
	// Poll is the interval of the kinds' own waits (default 1s).
	Poll time.Duration
}

func (d *Deps) poll() time.Duration {
	if d.Poll <= 0 {
		return time.Second
	}
	return d.Poll
}

// The engine's generic types as this package uses them: every kind here
// runs with *Deps, so a runner built with other dependencies does not compile.
type (
	Env                   = engine.Env[*Deps]
	Kind                  = engine.Kind[*Deps]
	Registry              = engine.Registry[*Deps]
	Plan                  = engine.Plan[*Deps]
	PlannedStep           = engine.PlannedStep[*Deps]
	Spec[P engine.Params] = engine.Spec[P, *Deps]
)

func depsOf(env Env) (*Deps, error) {
	d := env.Deps()
	if d == nil {
		return nil, errors.New("steps: the runner has no dependencies (engine.Runner.Deps is nil)")
	}
	return d, nil
}

func (d *Deps) now() time.Time {
	if d.Now == nil {
		return time.Now()
	}
	return d.Now()
}

func (d *Deps) redact(s string) string {
	if d.Redact == nil {
		return s
	}
	return d.Redact(s)
}

func (d *Deps) indexer() (IndexerAPI, error) { return d.Indexer.Need("indexer") }

func (d *Deps) manager() (ManagerAPI, error) { return d.Manager.Need("manager API") }

func (d *Deps) packages() (PackagesAPI, error) { return d.Packages.Need("packages") }

func (d *Deps) shipper() (ShipperAPI, error) { return d.Shipper.Need("shipper") }

func (d *Deps) units(ctx context.Context) (UnitsAPI, error) {
	if d.Units == nil {
		return nil, errors.New("systemd: no connection configured")
	}
	return d.Units(ctx)
}

// Planning is what the kinds know at plan time, for their Describe lines:
// the configuration and the versions involved (component → exact version).
// Nil maps describe the versions symbolically (<target>). It is the
// planning context (engine.PlanContext) the session hands the engine, which
// passes it to every Describe; a kind reads it with planningOf.
type Planning struct {
	Config   *config.Config
	Target   map[string]string
	Previous map[string]string
}

// planningOf is the *Planning the engine handed a Describe (nil for any
// other context: every line then reads symbolically).
func planningOf(pc engine.PlanContext) *Planning {
	pl, _ := pc.(*Planning)
	return pl
}

func (pl *Planning) cfg() *config.Config {
	if pl == nil || pl.Config == nil {
		return nil
	}
	return pl.Config
}

// unit returns the component's unit, from the config or a placeholder.
func (pl *Planning) unit(comp string) string {
	if c := pl.cfg(); c != nil {
		if u := c.Units()[comp]; u != "" {
			return u
		}
	}
	return "<" + comp + " unit>"
}

// dataDir is the indexer's data directory, from the config or a placeholder.
func (pl *Planning) dataDir() string {
	if c := pl.cfg(); c != nil {
		return c.Indexer.DataDir
	}
	return "<indexer data_dir>"
}

func (pl *Planning) pkg(comp string) string {
	if c := pl.cfg(); c != nil {
		if p := c.PackageNames()[comp]; p != "" {
			return p
		}
	}
	return "<" + comp + " package>"
}

func (pl *Planning) version(which, comp string) string {
	var m map[string]string
	if pl != nil {
		m = pl.Target
		if which == "previous" {
			m = pl.Previous
		}
	}
	if v := m[comp]; v != "" {
		return v
	}
	return "<" + which + ">"
}

// componentsOf expands "all" to every component (start order).
func componentsOf(c string) []string {
	if c == "all" {
		return slices.Clone(Components)
	}
	return []string{c}
}

func validComponent(c string, all bool) error {
	if slices.Contains(Components, c) || all && c == "all" {
		return nil
	}
	want := strings.Join(Components, ", ")
	if all {
		want += " or all"
	}
	if c == "" {
		return fmt.Errorf("component is required (%s)", want)
	}
	return fmt.Errorf("component %q: want %s", c, want)
}

func validWhich(v string) error {
	switch v {
	case "", "target", "previous":
		return nil
	}
	return fmt.Errorf("version %q: want target or previous", v)
}

// componentsParam is the `components` parameter of the kinds that act on
// some of their components (none given: all). Kinds embed it inline.
type componentsParam struct {
	Components []string `yaml:"components"`
}

// or is the components given, or all.
func (p componentsParam) or(all []string) []string {
	if len(p.Components) == 0 {
		return all
	}
	return p.Components
}

// validate accepts the components of all only.
func (p componentsParam) validate(all []string) error {
	for _, c := range p.Components {
		if !slices.Contains(all, c) {
			return fmt.Errorf("component %q: want %s", c, strings.Join(all, ", "))
		}
	}
	return nil
}

// versionParam is the `version` parameter of the kinds that act on the
// run's target versions or on the versions recorded before the first
// install ("target" or "previous"; empty: target). Kinds embed it inline.
type versionParam struct {
	Version string `yaml:"version"`
}

func (p versionParam) which() string {
	if p.Version == "" {
		return "target"
	}
	return p.Version
}

func (p versionParam) previous() bool { return p.Version == "previous" }

func (p versionParam) Validate() error { return validWhich(p.Version) }

// versions reads a component → version map from run data.
// recordedVersions returns the run's target versions, or with previous the
// versions recorded before the first install (component → version).
func recordedVersions(env Env, previous bool) (map[string]string, error) {
	return versions(env, versionsKey(previous))
}

// versionsKey is the run-data key of recordedVersions.
func versionsKey(previous bool) string {
	if previous {
		return rundata.KeyPreviousVersions
	}
	return rundata.KeyTargetVersions
}

func versions(env Env, key string) (map[string]string, error) {
	m := map[string]string{}
	if _, err := env.Get(key, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func backups(env Env) (Backups, error) {
	var b Backups
	_, err := env.Get(rundata.KeyBackups, &b)
	return b, err
}

func setBackups(env Env, f func(*Backups)) error {
	b, err := backups(env)
	if err != nil {
		return err
	}
	f(&b)
	return env.Set(rundata.KeyBackups, b)
}

// Kinds returns every step kind (each describes itself with the planning
// context the engine hands its Describe).
func Kinds() []Kind {
	var ks []Kind
	for _, group := range []func() []Kind{snapshotKinds, gateKinds, probeKinds, agentKinds, watchKinds, backupKinds, managerDBKinds,
		dataSafetyKinds, unitKinds, indexerKinds, packageKinds, shipperKinds, shipperRegistryKinds, clusterKinds, rolloutKinds, rolloutBackKinds} {
		ks = append(ks, group()...)
	}
	out := make([]Kind, len(ks))
	for i, k := range ks {
		out[i] = &redacting{Kind: k}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// NewRegistry registers every kind.
func NewRegistry() (*Registry, error) {
	return engine.NewRegistry(Kinds()...)
}

// Ignorable lists the gate kinds an operator may skip with --ignore-gate:
// advisory checks whose failure does not endanger data.
var Ignorable = []string{"gate.agents", "gate.settings_clean", "gate.templates"}

// redacting wraps every kind of this package: it refuses to run one
// without dependencies (so a kind reads env.Deps() without checking it),
// and removes the configured secrets from every error and message the kind
// returns before the engine journals it.
type redacting struct{ Kind }

func (r *redacting) ReadOnly() bool {
	ro, ok := r.Kind.(engine.ReadOnlyKind)
	return ok && ro.ReadOnly()
}

func (r *redacting) Run(ctx context.Context, env Env, p engine.Params) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	out, err := r.Kind.Run(ctx, env, p)
	out.Message = d.redact(out.Message)
	return out, redactErr(d, err)
}

func (r *redacting) Verify(ctx context.Context, env Env, p engine.Params) (bool, error) {
	v, ok := r.Kind.(engine.Verifier[*Deps])
	if !ok {
		return false, engine.ErrCannotVerify
	}
	d, err := depsOf(env)
	if err != nil {
		return false, err
	}
	done, err := v.Verify(ctx, env, p)
	if !errors.Is(err, engine.ErrCannotVerify) {
		err = redactErr(d, err)
	}
	return done, err
}

func (r *redacting) Skip(ctx context.Context, env Env, p engine.Params) (string, bool, error) {
	s, ok := r.Kind.(engine.Skipper[*Deps])
	if !ok {
		return "", false, nil
	}
	d, err := depsOf(env)
	if err != nil {
		return "", false, err
	}
	reason, skip, err := s.Skip(ctx, env, p)
	return d.redact(reason), skip, redactErr(d, err)
}

func (r *redacting) Budget(ctx context.Context, env Env, p engine.Params) (time.Duration, string, error) {
	b, ok := r.Kind.(engine.Budgeter[*Deps])
	if !ok {
		return 0, "", nil
	}
	extra, why, err := b.Budget(ctx, env, p)
	if d, derr := depsOf(env); derr == nil {
		why, err = d.redact(why), redactErr(d, err)
	}
	return extra, why, err
}

func (r *redacting) Estimate(p engine.Params, facts any) (time.Duration, string, bool) {
	e, ok := r.Kind.(engine.Estimator)
	if !ok {
		return 0, "", false
	}
	return e.Estimate(p, facts)
}

func (r *redacting) Traits() any {
	t, ok := r.Kind.(engine.Traited)
	if !ok {
		return nil
	}
	return t.Traits()
}

func redactErr(d *Deps, err error) error {
	if err == nil {
		return nil
	}
	switch v, reason, ok := engine.VerdictOf(err); {
	case ok && v == engine.VerdictNoGo:
		return &engine.NoGoError{Reason: d.redact(reason)}
	case ok:
		return &engine.PendingError{Reason: d.redact(reason)}
	}
	msg := d.redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError shows a redacted message but keeps the chain for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// noParams is the parameter type of kinds without parameters.
type noParams struct {
	describe func(pl *Planning) []string
}

func (p *noParams) Describe(pc engine.PlanContext) []string { return p.describe(planningOf(pc)) }
func (p *noParams) Validate() error                         { return nil }

// simple is the New of a kind without parameters that describes itself
// with describe.
func simple(describe func(pl *Planning) []string) func() *noParams {
	return func() *noParams { return &noParams{describe: describe} }
}

// wait polls f every interval until it returns true, the context ends, or
// f fails; env.Waiting reports what it waits for.
func wait(ctx context.Context, env Env, interval time.Duration, what string, f func() (bool, error)) error {
	var ferr error
	err := netclient.Poll(ctx, interval, func() (bool, error) {
		done, err := f()
		if err == nil && !done {
			env.Waiting("%s", what)
		}
		ferr = err
		return done, err
	})
	if err != nil && ferr == nil { // ctx ended during a pause
		return fmt.Errorf("still %s: %w", what, err)
	}
	return err
}
