package bench

import (
	"fmt"
	"strings"
)

// FloorInput is what bench-upgrade.sh measured: its three tables and how to
// read them.
type FloorInput struct {
	// Results is results.tsv: volume, MODE#N, data_MiB, indices, upgrade_s (column 5), rollback_s.
	Results string
	// Bare is bare.tsv: volume, MODE#N, bare_s (column 3), back_copy_s, sec_retry (column 5, 0|1).
	Bare string
	// Retries is retries.tsv: run ("siemctl <volume>/<MODE#N>" or "bare …"), sec_retry 0|1.
	Retries string
	// First is the smallest volume's name: the growth lines are counted from it.
	First string
	// Modes is the number of data-safety modes measured: with more than one, each
	// line names the volume and the mode.
	Modes int
}

// key is one volume and data-safety mode.
type key struct{ volume, mode string }

// splitRun is a table's volume and MODE#N columns as a key and the run's name
// in retries.tsv ("<volume>/<MODE#N>").
func splitRun(row []string) (key, string) {
	mode, _, _ := strings.Cut(field(row, 1), "#")
	return key{field(row, 0), mode}, field(row, 0) + "/" + field(row, 1)
}

// Floor prints the comparison of siemctl's upgrade with the bare upgrade (the
// spec's steps by hand, same data safety), per volume (and mode):
//
//	floor: <volume> siemctl <s>s bare <s>s ratio <r>×      (means over the cycles)
//	growth: <volume> siemctl +<s>s bare +<s>s ratio <r>×   (from the first volume)
//
// then the same two over the upgrades where the security plugin's first load
// was not retried (a 10-15 s event that comes or not from one start to the
// next), and in how many upgrades (which) it was retried.
func Floor(in FloorInput) (string, error) {
	results, err := tableFile(in.Results)
	if err != nil {
		return "", err
	}
	bares, err := tableFile(in.Bare)
	if err != nil {
		return "", err
	}
	retries, err := tableFile(in.Retries)
	if err != nil {
		return "", err
	}
	retried := map[string]bool{} // siemctl's runs: "<volume>/<MODE#N>"
	var retriedRuns []string
	for _, r := range retries {
		if field(r, 1) == "1" {
			retriedRuns = append(retriedRuns, field(r, 0))
		}
		if run, ok := strings.CutPrefix(field(r, 0), "siemctl "); ok {
			retried[run] = field(r, 1) == "1"
		}
	}
	var order []key
	s, s0, b, b0 := map[key]*mean{}, map[key]*mean{}, map[key]*mean{}, map[key]*mean{}
	get := func(m map[key]*mean, k key) *mean {
		if m[k] == nil {
			m[k] = &mean{}
		}
		return m[k]
	}
	for _, r := range results {
		k, run := splitRun(r)
		v, err := num(in.Results, r, 4)
		if err != nil {
			return "", err
		}
		if _, seen := s[k]; !seen {
			order = append(order, k)
		}
		get(s, k).add(v)
		if !retried[run] {
			get(s0, k).add(v)
		}
	}
	for _, r := range bares {
		k, _ := splitRun(r)
		v, err := num(in.Bare, r, 2)
		if err != nil {
			return "", err
		}
		get(b, k).add(v)
		if strings.TrimSpace(field(r, 4)) != "1" {
			get(b0, k).add(v)
		}
	}
	name := func(k key) string {
		if in.Modes > 1 {
			return k.volume + "/" + k.mode
		}
		return k.volume
	}
	growth := func(a, b float64) string {
		if b > 0 {
			return fmt.Sprintf("%.2f×", a/b)
		}
		return fmt.Sprintf("n/a (the bare upgrade did not grow; siemctl %+.1fs beyond it)", a-b)
	}
	val := func(m map[key]*mean, k key) mean {
		if m[k] == nil {
			return mean{}
		}
		return *m[k]
	}
	// growths calls line for every volume but the first whose first volume (same mode) was measured.
	growths := func(line func(k, f key)) {
		for _, k := range order {
			f := key{in.First, k.mode}
			if k.volume == in.First || s[f] == nil {
				continue
			}
			line(k, f)
		}
	}
	var out strings.Builder
	out.WriteString("the bare upgrade (the spec's steps by hand, same data safety) against siemctl's, mean over the cycles:\n")
	for _, k := range order {
		S, B := val(s, k).value(), val(b, k).value()
		fmt.Fprintf(&out, "floor: %s siemctl %.1fs bare %.1fs ratio %s\n", name(k), S, B, ratio(S, B))
	}
	growths(func(k, f key) {
		a := val(s, k).value() - val(s, f).value()
		d := val(b, k).value() - val(b, f).value()
		fmt.Fprintf(&out, "growth: %s siemctl %+.1fs bare %+.1fs ratio %s\n", name(k), a, d, growth(a, d))
	})
	out.WriteString("\nthe same over the upgrades where the security plugin's first load was not retried:\n")
	for _, k := range order {
		S0, B0 := val(s0, k), val(b0, k)
		r := "n/a (every upgrade retried)"
		if S0.ok() && B0.ok() {
			r = ratio(S0.value(), B0.value())
		}
		fmt.Fprintf(&out, "floor without retry: %s siemctl %s (%d of %d) bare %s (%d of %d) ratio %s\n", name(k),
			S0.or("n/a"), S0.n, val(s, k).n, B0.or("n/a"), B0.n, val(b, k).n, r)
	}
	growths(func(k, f key) {
		if !val(s0, k).ok() || !val(s0, f).ok() || !val(b0, k).ok() || !val(b0, f).ok() {
			fmt.Fprintf(&out, "growth without retry: %s n/a (a volume without an upgrade free of the retry)\n", name(k))
			return
		}
		a := val(s0, k).value() - val(s0, f).value()
		d := val(b0, k).value() - val(b0, f).value()
		fmt.Fprintf(&out, "growth without retry: %s siemctl %+.1fs bare %+.1fs ratio %s\n", name(k), a, d, growth(a, d))
	})
	list := ""
	if len(retriedRuns) > 0 {
		list = " (" + strings.Join(retriedRuns, ", ") + ")"
	}
	fmt.Fprintf(&out, "\nsecurity plugin first-load retry: %d of %d upgrades%s\n", len(retriedRuns), len(retries), list)
	return out.String(), nil
}
