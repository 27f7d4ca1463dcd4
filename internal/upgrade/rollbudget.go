package upgrade

import (
	"slices"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/steps"
)

// The time budget of a rolling upgrade of a distributed deployment, from the same defaults as the
// single-host budget (each kind's own estimate without a history: defaultOf; the start wait
// limits of config.DefaultStartWaits): no host keeps a history of the other hosts' turns, so every figure
// is a default, and the plan says so.

// RollTurn is one turn of the roll to estimate: its entry name and the components it upgrades.
type RollTurn struct {
	Name       string
	Components []string
}

// TurnBudget is one turn's estimate.
type TurnBudget struct {
	Name     string  `json:"name"`
	Estimate Seconds `json:"estimate_s"`
}

// RollBudget is the whole roll's time budget.
type RollBudget struct {
	Apply  Seconds      `json:"apply_s"`
	Turns  []TurnBudget `json:"turns"`
	Finish Seconds      `json:"finish_s"`
	Total  Seconds      `json:"total_s"`
	// WindowMin/Max: the maintenance window with the usual 50–100% buffer.
	WindowMin Seconds `json:"window_min_s"`
	WindowMax Seconds `json:"window_max_s"`
	Source    string  `json:"source"`
}

// TurnEstimate is one node's turn: per component its stop, the package install, its start (the
// start wait limit) and its gates; an indexer node adds the cluster health gate of its rejoin,
// a manager node the master's listing, the shipper its test output.
func TurnEstimate(components []string) time.Duration {
	var d time.Duration
	for _, c := range components {
		d += defaultOf("units.stop") + defaultOf("packages.install") + config.DefaultStartWaits[c] + defaultGate
		switch c {
		case "indexer":
			d += defaultOf("gate.cluster_health")
		case "manager":
			d += defaultOf("gate.manager_api")
		case "shipper":
			d += defaultOf("shipper.test_output")
		case "dashboard":
			d += defaultOf("gate.dashboard")
		}
	}
	return d
}

// EstimateRoll estimates the roll: the first host's apply (preflight gates, backups of configs and
// the indexer security, a snapshot, allocation and flush), each turn, and the finish (security
// once, template and pipelines once, validation, the watch window).
func EstimateRoll(turns []RollTurn, watch time.Duration) RollBudget {
	apply := 4*defaultGate + defaultOf("backup.configs") + defaultOf("backup.indexer_security") +
		30*time.Second /* snapshot of a small cluster; its volume is not known from here */ +
		defaultOf("indexer.allocation") + defaultOf("indexer.flush")
	finish := defaultOf("indexer.security_apply") + defaultOf("shipper.template") + defaultOf("shipper.setup") +
		defaultOf("indexer.allocation") + defaultOf("gate.cluster_health") + watch
	b := RollBudget{Apply: secsOf(apply), Finish: secsOf(finish), Turns: []TurnBudget{}, Source: "default (start wait limits, package install 1m, no history of other hosts)"}
	total := apply + finish
	for _, t := range turns {
		d := TurnEstimate(slices.Clone(t.Components))
		total += d
		b.Turns = append(b.Turns, TurnBudget{Name: t.Name, Estimate: secsOf(d)})
	}
	b.Total = secsOf(total)
	b.WindowMin = secsOf(time.Duration(float64(total) * bufferMin))
	b.WindowMax = secsOf(time.Duration(float64(total) * bufferMax))
	return b
}

// kinds are the step kinds by name, for their default estimates.
var kinds = sync.OnceValue(func() map[string]steps.Kind {
	m := map[string]steps.Kind{}
	for _, k := range steps.Kinds() {
		m[k.Name()] = k
	}
	return m
})

// defaultOf is what the kind named kind costs on a healthy single host
// without a history: its own estimate, else the generic default.
func defaultOf(kind string) time.Duration {
	d, _ := estimateAction(kinds()[kind], nil, kind, nil, DataVolume{}, rates{})
	return d
}
