package bench

import (
	"fmt"
	"strings"
)

// Cluster prints the cluster volume's lines (bench-upgrade-cluster.sh) from its
// table at path (what, name, value; a header line): floor HOST s (the plain
// restart of that host to ready), turn HOST s (the roll's turn of the entry that
// host took; a host's turns add up), roll - s (the roll's wall time), own - s
// (siemctl's own work over the roll's runs), events/lost/dup - n (the flow),
// probe_tries/probe_all - n and probe_gap - s (the search probe; absent when not
// measured):
//
//	cluster: <host> floor <s>s turn <s>s ratio <r>×                  (per host, in floor order)
//	cluster: roll <s>s floors <s>s ratio <r>× siemctl own <s>s (<p>% of the roll)
//	cluster: events <n> lost <n> dup <n>
//	cluster: searches answered with every shard <p>% (<n> of <n>, longest gap <s>s)
//
// or, without the probe's rows, "cluster: searches answered not measured (…)".
func Cluster(path string) (string, error) {
	rows, err := tableFile(path)
	if err != nil {
		return "", err
	}
	var order []string
	floor, turn, v := map[string]float64{}, map[string]float64{}, map[string]float64{}
	var floors float64
	for _, r := range rows {
		x, err := num(path, r, 2)
		if err != nil {
			return "", err
		}
		switch what, host := field(r, 0), field(r, 1); what {
		case "floor":
			if _, seen := floor[host]; !seen {
				order = append(order, host)
			}
			floor[host] = x
			floors += x
		case "turn":
			turn[host] += x
		default:
			v[what] = x
		}
	}
	frac := func(a, b float64) float64 {
		if b > 0 {
			return a / b
		}
		return 0
	}
	var out strings.Builder
	for _, h := range order {
		if t, ok := turn[h]; ok {
			fmt.Fprintf(&out, "cluster: %s floor %.1fs turn %.1fs ratio %.2f×\n", h, floor[h], t, frac(t, floor[h]))
		} else {
			fmt.Fprintf(&out, "cluster: %s floor %.1fs turn n/a (no turn in the record)\n", h, floor[h])
		}
	}
	if roll, ok := v["roll"]; ok {
		fmt.Fprintf(&out, "cluster: roll %.1fs floors %.1fs ratio %.2f× siemctl own %.1fs (%.1f%% of the roll)\n",
			roll, floors, frac(roll, floors), v["own"], 100*frac(v["own"], roll))
	}
	if _, ok := v["events"]; ok {
		fmt.Fprintf(&out, "cluster: events %d lost %d dup %d\n", int64(v["events"]), int64(v["lost"]), int64(v["dup"]))
	}
	if tries, ok := v["probe_tries"]; ok {
		share := 100.0
		if tries > 0 {
			share = 100 * v["probe_all"] / tries
		}
		fmt.Fprintf(&out, "cluster: searches answered with every shard %.2f%% (%d of %d, longest gap %.1fs)\n",
			share, int64(v["probe_all"]), int64(tries), v["probe_gap"])
	} else {
		out.WriteString("cluster: searches answered not measured (this siemlab has no flow probe)\n")
	}
	return out.String(), nil
}
