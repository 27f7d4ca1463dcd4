#!/usr/bin/env bash
# bench-upgrade-floor.sh RES BARE RETRY FIRST NMODES: bench-upgrade.sh's comparison of siemctl's
# upgrade with the bare upgrade (the spec's steps by hand's minimum, same data safety), from its
# tables: RES (results.tsv: volume, MODE#N, …, upgrade_s in column 5), BARE (bare.tsv: volume,
# MODE#N, bare_s), RETRY (retries.tsv: run, sec_retry 0|1); FIRST is the smallest volume's name,
# NMODES the number of data-safety modes measured. Prints per volume (and mode, with more than one)
#   floor: <volume> siemctl <s>s bare <s>s ratio <r>×      (means over the cycles)
#   growth: <volume> siemctl +<s>s bare +<s>s ratio <r>×   (from FIRST)
# and in how many upgrades (which) the security plugin's first load was retried.
set -uo pipefail
RES=$1 BARE=$2 RETRY=$3 FIRST=$4 NMODES=$5
echo "the bare upgrade (the spec's steps by hand, same data safety) against siemctl's, mean over the cycles:"
awk -F'\t' -v first="$FIRST" -v nmodes="$NMODES" '
	FNR == 1 { next }
	FILENAME == ARGV[1] { split($2, m, "#"); k = $1 SUBSEP m[1]; s[k] += $5; sn[k]++; if (!(k in seen)) { seen[k] = 1; order[++n] = k }; next }
	{ split($2, m, "#"); k = $1 SUBSEP m[1]; b[k] += $3; bn[k]++ }
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]; split(k, p, SUBSEP)
			vs = s[k] / sn[k]; vb = (bn[k] ? b[k] / bn[k] : 0)
			name = (nmodes > 1) ? p[1] "/" p[2] : p[1]
			printf "floor: %s siemctl %.1fs bare %.1fs ratio %.2f×\n", name, vs, vb, (vb > 0 ? vs / vb : 0)
			S[k] = vs; B[k] = vb
		}
		for (i = 1; i <= n; i++) {
			k = order[i]; split(k, p, SUBSEP); f = first SUBSEP p[2]
			if (p[1] == first || !(f in S)) continue
			ds = S[k] - S[f]; db = B[k] - B[f]
			name = (nmodes > 1) ? p[1] "/" p[2] : p[1]
			printf "growth: %s siemctl %+.1fs bare %+.1fs ratio %s\n", name, ds, db, (db != 0 ? sprintf("%.2f×", ds / db) : "n/a (the bare upgrade did not grow)")
		}
	}' "$RES" "$BARE"
echo
total=$(($(wc -l <"$RETRY") - 1))
retried=$(awk -F'\t' 'NR > 1 && $2 == 1 { printf "%s%s", sep, $1; sep = ", " }' "$RETRY")
echo "security plugin first-load retry: $(awk -F'\t' 'NR > 1 && $2 == 1' "$RETRY" | wc -l) of $total upgrades${retried:+ ($retried)}"
