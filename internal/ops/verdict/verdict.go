// Package verdict is the one shape of a judgement in every ops area
// (internal/ops/cluster, mgrcluster, versions, hostfacts' ports, fleet's
// agents newer than the manager): a Level, a one-line summary, the facts
// behind it and the fix. Each caller maps the level: a health check to OK/WARN/CRIT/UNKNOWN, an upgrade gate to
// go/pending/no-go. An area whose verdict carries more (the versions found,
// each port's state) embeds Verdict and adds its facts.
package verdict

import (
	"slices"
	"strings"
)

// Level is how a verdict judges a fact.
type Level int

// The levels, from fine to broken.
const (
	// OK: nothing to do.
	OK Level = iota
	// Warn: it works, an operator should look (a gate goes on).
	Warn
	// Wait: not yet; it may settle by itself (a gate keeps polling).
	Wait
	// NoGo: broken or unsafe to change now.
	NoGo
	// Unknown: the facts do not say.
	Unknown
)

// Verdict is one judgement.
type Verdict struct {
	Level Level
	// Summary says what is wrong (or fine) in a line.
	Summary string
	// Items are the facts behind it, one short phrase each.
	Items []string
	// Fix is what to do ("" when nothing).
	Fix string
}

// OK reports a verdict of level OK.
func (v Verdict) OK() bool { return v.Level == OK }

// JoinFixes is several fixes as one Fix: each once, in the order first given, joined by "; ".
func JoinFixes(fixes []string) string {
	var once []string
	for _, f := range fixes {
		if !slices.Contains(once, f) {
			once = append(once, f)
		}
	}
	return strings.Join(once, "; ")
}
