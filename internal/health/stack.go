package health

import (
	"context"
	"fmt"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/internal/units"
)

// Source assembles a Stack from the configured clients (internal/factory's
// client set): what `siemctl health`, guided mode's evidence and the
// snapshot's health section narrow the client set to.
type Source interface {
	Health() Stack
}

// Stack is what the checks talk to. internal/factory fills it with the real clients;
// tests fill it with fakes. A missing client carries the reason it could
// not even be built (e.g. the password file is missing): every check that
// needs it reports that reason.
type Stack struct {
	Config *config.Config

	Indexer clientset.Client[IndexerAPI]
	Manager clientset.Client[ManagerAPI]
	Tools   ManagerTools
	Units   func(ctx context.Context) (UnitsAPI, error)
	// Packages reads installed package versions.
	Packages  clientset.Client[packages.Querier]
	Ports     func(ctx context.Context) (map[int]bool, error) // listening TCP ports
	Dashboard func(ctx context.Context) (DashboardAnswer, error)
	Certs     func(ctx context.Context) ([]CertInfo, error)
	// IndexerTLS judges the indexer's node certificate against the CAs
	// the indexer, shipper, dashboard and siemctl trust (nil causes: fine).
	IndexerTLS func(ctx context.Context) ([]hostfacts.TLSCause, error)
	Shipper    ShipperAPI
	Probe      func(ctx context.Context) (probe.Report, error)
	// DefaultCredentials reports which components accept a default password
	// (a login attempt with the well-known defaults, at most daily unless
	// deep) and when they were tried.
	DefaultCredentials func(ctx context.Context, deep bool) (CredentialReport, error)
	// Diagnose explains a component's unit that is failed or not coming
	// up (internal/ops/diagnose); all are the stack's unit states.
	Diagnose func(ctx context.Context, component string, st units.UnitStatus, all []units.UnitStatus) diagnose.Report
	// PortHolders names who listens on TCP ports; UnitProcesses are the
	// PIDs in a unit's control group (the ports check's owner verdict).
	PortHolders   func(ctx context.Context, ports []int) (map[int]hostfacts.Holder, error)
	UnitProcesses func(ctx context.Context, unit string) ([]int, error)
}

// on is fn called on c's client, or the reason c is missing.
func on[C, T any](c clientset.Client[C], fn func(c C, ctx context.Context) (T, error)) func(ctx context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		cl, err := c.Get()
		if err != nil {
			var zero T
			return zero, err
		}
		return fn(cl, ctx)
	}
}

// IndexerAPI is the part of *indexer.Client the checks use.
type IndexerAPI interface {
	Info(ctx context.Context) (indexer.Info, error)
	NodesVersions(ctx context.Context) ([]indexer.NodeVersion, error)
	Health(ctx context.Context, hr indexer.HealthRequest) (indexer.Health, error)
	Settings(ctx context.Context, includeDefaults bool) (indexer.Settings, error)
	CatShards(ctx context.Context) ([]indexer.Shard, error)
	CatIndices(ctx context.Context, pattern string) ([]indexer.Index, error)
	CatAllocation(ctx context.Context) ([]indexer.Allocation, error)
	AllocationExplain(ctx context.Context, er indexer.ExplainRequest) (indexer.Explanation, error)
	IndexBlocks(ctx context.Context, pattern string) ([]indexer.IndexBlock, error)
	LegacyTemplate(ctx context.Context, name string) (indexer.Template, error)
	SimulateIndex(ctx context.Context, indexName string) (indexer.Simulation, error)
	Pipeline(ctx context.Context, id string) (indexer.Pipeline, error)
	Count(ctx context.Context, index, q string, since time.Time) (int64, error)
	Newest(ctx context.Context, pattern, field string) (time.Time, bool, error)
}

// ManagerAPI is the part of *manager.Client the checks use.
type ManagerAPI interface {
	Info(ctx context.Context) (manager.APIInfo, error)
	ManagerStatus(ctx context.Context) (manager.DaemonStates, error)
	ValidateConfig(ctx context.Context) (manager.ConfigValidation, error)
	AgentsSummary(ctx context.Context) (manager.AgentsSummary, error)
	ListAgents(ctx context.Context, q manager.AgentQuery) ([]manager.Agent, error)
}

// ManagerTools is the part of manager.Tools the checks use.
type ManagerTools interface {
	ControlCheck(ctx context.Context) (manager.CheckResult, error)
	ControlStatus(ctx context.Context) (manager.ControlStatus, error)
}

// UnitsAPI is the part of *units.Manager the checks use.
type UnitsAPI interface {
	Status(ctx context.Context, names ...string) ([]units.UnitStatus, error)
}

// ShipperAPI runs the shipper's self-tests.
type ShipperAPI interface {
	TestConfig(ctx context.Context) (ok bool, message string, err error)
	TestOutput(ctx context.Context) (OutputTest, error)
}

// OutputTest is a run of the shipper's `test output`: one line per host
// step, and the host that refused the shipper's credentials, if one did.
type OutputTest struct {
	OK      bool
	Lines   []string
	Refused *shipper.Refusal
}

// DashboardAnswer is the dashboard's answer to GET /.
type DashboardAnswer = hostfacts.DashboardAnswer

// CertInfo is one certificate siemctl looked at.
type CertInfo = hostfacts.ComponentCert

// ShipperChecks runs the shipper's self-tests for the check; sh is built
// lazily (nil error: the shipper binary is configured and found).
type ShipperChecks struct {
	Shipper func() (*shipper.Shipper, error)
}

// TestConfig runs `test config`.
func (c ShipperChecks) TestConfig(ctx context.Context) (bool, string, error) {
	sh, err := c.Shipper()
	if err != nil {
		return false, "", err
	}
	return sh.TestConfig(ctx)
}

// TestOutput runs `test output` and keeps one line per host step.
func (c ShipperChecks) TestOutput(ctx context.Context) (OutputTest, error) {
	sh, err := c.Shipper()
	if err != nil {
		return OutputTest{}, err
	}
	rep, err := sh.TestOutput(ctx)
	if err != nil {
		return OutputTest{}, err
	}
	return outputTest(rep), nil
}

// outputTest turns a parsed `test output` into the check's answer.
func outputTest(rep shipper.Report) OutputTest {
	var lines []string
	for _, h := range rep.Hosts {
		for _, st := range h.Steps {
			line := fmt.Sprintf("%s %s... %s", h.URL, st.Name, st.Status)
			if st.Detail != "" {
				line += " " + st.Detail
			}
			lines = append(lines, line)
		}
	}
	if rep.Exiting != "" {
		lines = append(lines, "Exiting: "+rep.Exiting)
	}
	out := OutputTest{OK: rep.OK, Lines: lines}
	if r, ok := rep.Refused(); ok {
		out.Refused = &r
	}
	return out
}
