package fleet

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
)

// The plan of an agent upgrade: which agents the selectors pick, which of them can be upgraded to the
// target and why the others cannot, the waves (a canary, then growing shares of the fleet) and the time
// budget. The same checks as the manager's upgrade module, made before anything is sent, so that what
// the plan calls eligible is what the manager accepts.

// UpgradeSelector picks the agents (every agent when empty).
type UpgradeSelector struct {
	Groups   []string `json:"groups,omitempty"`
	OS       []string `json:"os,omitempty"` // os.platform values (ubuntu, windows, ...)
	Node     string   `json:"node,omitempty"`
	Agents   []string `json:"agents,omitempty"`
	Outdated bool     `json:"outdated,omitempty"` // only agents older than the manager
}

// UpgradeWaveOptions shape the waves and the pace.
type UpgradeWaveOptions struct {
	Canary int       `json:"canary"`
	Waves  []float64 `json:"waves"` // cumulative shares of the eligible agents, the last 1
	// MaxFailed is how many agents of a wave may fail before the run stops: a count, or with
	// MaxFailedPct a percentage of the wave.
	MaxFailed    float64 `json:"max_failed"`
	MaxFailedPct bool    `json:"max_failed_pct,omitempty"`
	// InFlight is how many WPK sends are under way at once (agents restarting after theirs do not
	// count): the manager's max_threads, lowered by --concurrency.
	InFlight int `json:"in_flight"`
	// Send is the estimate of one WPK send by one module thread, Restart the agent's install and
	// reconnection; AgentWait bounds how long one agent may take before it counts as failed.
	Send      time.Duration `json:"send"`
	Restart   time.Duration `json:"restart"`
	AgentWait time.Duration `json:"agent_wait"`
}

// DefaultUpgradeWaves are --waves' default.
var DefaultUpgradeWaves = []float64{0.01, 0.10, 0.50, 1}

// Reasons an agent is not upgraded.
const (
	ReasonManager      = "agent 000 is the manager"
	ReasonNotActive    = "not active (never connected or pending)"
	ReasonNewer        = "already at the target or newer"
	ReasonNoWPK        = "no WPK for its platform"
	ReasonTooOld       = "too old for a remote upgrade (below 3.0.0): upgrade it with its package"
	ReasonBelow414     = "below 4.14.0: a 5.x target needs 4.14.x first"
	ReasonNoVersion    = "reports no version"
	ReasonDisconnected = "disconnected: recorded pending, sent by `resume` once it is back"
)

// PlanAgent is one agent in the plan.
type PlanAgent struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Platform string `json:"platform,omitempty"`
	Node     string `json:"node,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// UpgradePlan is what `agents upgrade plan` shows and `apply` runs.
type UpgradePlan struct {
	Target      string             `json:"target"`
	Manager     string             `json:"manager"`
	Selector    UpgradeSelector    `json:"selector"`
	Options     UpgradeWaveOptions `json:"options"`
	Selected    int                `json:"selected"`
	Eligible    []PlanAgent        `json:"eligible"`
	Pending     []PlanAgent        `json:"pending"` // disconnected: not sent now
	NotEligible []PlanAgent        `json:"not_eligible"`
	Waves       [][]string         `json:"waves"`
	// Requests is how many upgrade requests the waves take (at most 500 agents and the in-flight
	// limit each).
	Requests int           `json:"requests"`
	Budget   time.Duration `json:"budget_ns"`
}

// wpkPlatforms have WPK packages (packages.wazuh.com/4.x/wpk: linux, windows, macos).
var noWPK = []string{"solaris", "sunos", "aix", "hp-ux", "hpux"}

// Eligibility is why an agent cannot be upgraded to target ("" when it can, ReasonDisconnected
// when it can once it is back).
func Eligibility(a manager.Agent, target manager.Version) string {
	if a.IsManager() {
		return ReasonManager
	}
	v, err := a.ParsedVersion()
	switch {
	case a.Status == manager.AgentNeverConnected || a.Status == manager.AgentPending:
		return ReasonNotActive
	case err != nil:
		return ReasonNoVersion
	case !v.Less(target):
		return ReasonNewer
	case slices.Contains(noWPK, strings.ToLower(a.OS.Platform)):
		return ReasonNoWPK
	case v.Less(manager.Version{Major: 3}):
		return ReasonTooOld
	case target.Major >= 5 && v.Less(manager.Version{Major: 4, Minor: 14}):
		return ReasonBelow414
	case a.Status != manager.AgentActive:
		return ReasonDisconnected
	}
	return ""
}

// ParseWaves reads --waves ("1%,10%,50%,100%"): growing shares, the last 100%.
func ParseWaves(s string) ([]float64, error) {
	var out []float64
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		n, err := strconv.ParseFloat(strings.TrimSuffix(p, "%"), 64)
		if err != nil || !strings.HasSuffix(p, "%") || n <= 0 || n > 100 {
			return nil, fmt.Errorf("%w: --waves %q: want growing percentages like 1%%,10%%,50%%,100%%", ErrInvalidInput, s)
		}
		if len(out) > 0 && n/100 <= out[len(out)-1] {
			return nil, fmt.Errorf("%w: --waves %q: each wave must cover more of the fleet than the one before", ErrInvalidInput, s)
		}
		out = append(out, n/100)
	}
	if len(out) == 0 || out[len(out)-1] != 1 {
		return nil, fmt.Errorf("%w: --waves %q: the last wave must be 100%%", ErrInvalidInput, s)
	}
	return out, nil
}

// ParseMaxFailed reads --max-failed ("0", "5", "2%").
func ParseMaxFailed(s string) (float64, bool, error) {
	pct := strings.HasSuffix(s, "%")
	n, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || n < 0 || (pct && n > 100) || (!pct && n != math.Trunc(n)) {
		return 0, false, fmt.Errorf("%w: --max-failed %q: want a count (3) or a percentage of the wave (2%%)", ErrInvalidInput, s)
	}
	return n, pct, nil
}

// Allowed is how many agents of a wave of n may fail.
func (o UpgradeWaveOptions) Allowed(n int) int {
	if o.MaxFailedPct {
		return int(math.Floor(o.MaxFailed / 100 * float64(n)))
	}
	return int(o.MaxFailed)
}

// SplitWaves cuts the eligible agents into the canary and the waves.
func SplitWaves(ids []string, canary int, shares []float64) [][]string {
	var out [][]string
	rest := ids
	if canary > 0 {
		n := min(canary, len(rest))
		if n > 0 {
			out = append(out, slices.Clone(rest[:n]))
			rest = rest[n:]
		}
	}
	done := len(ids) - len(rest)
	for _, s := range shares {
		upto := int(math.Ceil(s * float64(len(ids))))
		if n := upto - done; n > 0 && len(rest) > 0 {
			n = min(n, len(rest))
			out = append(out, slices.Clone(rest[:n]))
			rest, done = rest[n:], done+n
		}
	}
	if len(rest) > 0 {
		out = append(out, slices.Clone(rest))
	}
	return out
}

// requestsFor is how many upgrade requests a wave of n agents takes with inFlight at once.
func requestsFor(n, inFlight int) int {
	per := min(manager.MaxUpgradeRequest, max(inFlight, 1))
	return (n + per - 1) / per
}

// waveBudget estimates a wave: the sends run inFlight at once, then the last agents restart and
// reconnect, then the gate reads the evidence.
func waveBudget(n int, o UpgradeWaveOptions) time.Duration {
	rounds := (n + max(o.InFlight, 1) - 1) / max(o.InFlight, 1)
	return time.Duration(rounds)*o.Send + o.Restart
}

// PlanUpgrade lists the selected agents and plans their upgrade to target.
func PlanUpgrade(ctx context.Context, api API, target, managerVersion manager.Version, sel UpgradeSelector, o UpgradeWaveOptions, pageSize int) (UpgradePlan, error) {
	p := UpgradePlan{Target: target.String(), Manager: managerVersion.String(), Selector: sel, Options: o,
		Eligible: []PlanAgent{}, Pending: []PlanAgent{}, NotEligible: []PlanAgent{}}
	if managerVersion.Less(target) {
		return p, fmt.Errorf("%w: target %s is newer than the manager %s: agents must not be newer than the manager; upgrade the manager first (`siemctl upgrade apply --to %s`)",
			ErrInvalidInput, target, managerVersion, target)
	}
	q := manager.AgentQuery{Limit: pageSize, Select: []string{"name", "status", "version", "node_name", "os.platform", "group", "lastKeepAlive"}}
	if len(sel.Agents) > 0 {
		if err := ValidateIDs(sel.Agents, ""); err != nil {
			return p, err
		}
		q.IDs = sel.Agents
	}
	for a, err := range api.Agents(ctx, q) {
		if err != nil {
			return p, err
		}
		if !selected(a, sel, managerVersion) {
			continue
		}
		p.Selected++
		pa := PlanAgent{ID: a.ID, Name: a.Name, Version: strings.TrimPrefix(a.Version, "Wazuh "), Platform: a.OS.Platform, Node: a.NodeName}
		switch pa.Reason = Eligibility(a, target); pa.Reason {
		case "":
			p.Eligible = append(p.Eligible, pa)
		case ReasonDisconnected:
			p.Pending = append(p.Pending, pa)
		default:
			p.NotEligible = append(p.NotEligible, pa)
		}
	}
	ids := make([]string, len(p.Eligible))
	for i, a := range p.Eligible {
		ids[i] = a.ID
	}
	p.Waves = SplitWaves(ids, o.Canary, o.Waves)
	for _, w := range p.Waves {
		p.Requests += requestsFor(len(w), o.InFlight)
		p.Budget += waveBudget(len(w), o)
	}
	return p, nil
}

func selected(a manager.Agent, s UpgradeSelector, managerVersion manager.Version) bool {
	if len(s.Groups) > 0 && !slices.ContainsFunc(s.Groups, func(g string) bool { return slices.Contains(a.Group, g) }) {
		return false
	}
	if len(s.OS) > 0 && !slices.ContainsFunc(s.OS, func(o string) bool { return strings.EqualFold(o, a.OS.Platform) }) {
		return false
	}
	if s.Node != "" && a.NodeName != s.Node {
		return false
	}
	if s.Outdated {
		v, err := a.ParsedVersion()
		if err != nil || !v.Less(managerVersion) {
			return false
		}
	}
	return true
}
