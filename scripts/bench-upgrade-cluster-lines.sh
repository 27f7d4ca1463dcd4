#!/usr/bin/env bash
# bench-upgrade-cluster-lines.sh TSV: the cluster volume's lines (bench-upgrade-cluster.sh), from its
# table (what, name, value; a header line): floor HOST s (the plain restart to ready), turn HOST s
# (the roll's turn of the entry that host took), roll - s (the roll's wall time), own - s
# (siemctl's own work over the roll's runs), events/lost/dup - n (the flow), probe_tries/probe_all
# - n and probe_gap - s (the search probe; absent when not measured). Prints
#   cluster: <host> floor <s>s turn <s>s ratio <r>×                       (per host, in floor order)
#   cluster: roll <s>s floors <s>s ratio <r>× siemctl own <s>s (<p>% of the roll)
#   cluster: events <n> lost <n> dup <n>
#   cluster: searches answered with every shard <p>% (<n> of <n>, longest gap <s>s)
# or, without the probe's rows, "cluster: searches answered not measured (...)".
set -uo pipefail
awk -F'\t' '
	NR == 1 { next }
	$1 == "floor" { if (!($2 in floor)) order[++n] = $2; floor[$2] = $3; sum += $3; next }
	$1 == "turn" { turn[$2] += $3; next }
	{ v[$1] = $3 }
	END {
		for (i = 1; i <= n; i++) {
			h = order[i]
			if (h in turn)
				printf "cluster: %s floor %.1fs turn %.1fs ratio %.2f×\n", h, floor[h], turn[h], (floor[h] > 0 ? turn[h] / floor[h] : 0)
			else
				printf "cluster: %s floor %.1fs turn n/a (no turn in the record)\n", h, floor[h]
		}
		if ("roll" in v)
			printf "cluster: roll %.1fs floors %.1fs ratio %.2f× siemctl own %.1fs (%.1f%% of the roll)\n", v["roll"], sum, (sum > 0 ? v["roll"] / sum : 0), v["own"], (v["roll"] > 0 ? 100 * v["own"] / v["roll"] : 0)
		if ("events" in v)
			printf "cluster: events %d lost %d dup %d\n", v["events"], v["lost"], v["dup"]
		if ("probe_tries" in v)
			printf "cluster: searches answered with every shard %.2f%% (%d of %d, longest gap %.1fs)\n", (v["probe_tries"] > 0 ? 100 * v["probe_all"] / v["probe_tries"] : 100), v["probe_all"], v["probe_tries"], v["probe_gap"]
		else
			print "cluster: searches answered not measured (this siemlab has no flow probe)"
	}' "$1"
