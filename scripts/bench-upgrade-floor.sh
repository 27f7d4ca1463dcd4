#!/usr/bin/env bash
# bench-upgrade-floor.sh RES BARE RETRY FIRST NMODES: bench-upgrade.sh's comparison of siemctl's
# upgrade with the bare upgrade (the spec's steps by hand's minimum, same data safety), from its
# tables: RES (results.tsv: volume, MODE#N, …, upgrade_s in column 5), BARE (bare.tsv: volume,
# MODE#N, bare_s), RETRY (retries.tsv: run, sec_retry 0|1); FIRST is the smallest volume's name,
# NMODES the number of data-safety modes measured. Prints per volume (and mode, with more than one)
#   floor: <volume> siemctl <s>s bare <s>s ratio <r>×      (means over the cycles)
#   growth: <volume> siemctl +<s>s bare +<s>s ratio <r>×   (from FIRST)
# then the same two lines over the upgrades where the security plugin's first load was not retried
# (a 10-15 s event that comes or not from one start to the next: a few cycles with it cannot measure
# a growth of a few seconds),
#   floor without retry: <volume> siemctl <s>s (<n> of <n>) bare <s>s (<n> of <n>) ratio <r>×
#   growth without retry: <volume> siemctl +<s>s bare +<s>s ratio <r>×
# and in how many upgrades (which) the security plugin's first load was retried.
set -uo pipefail
RES=$1 BARE=$2 RETRY=$3 FIRST=$4 NMODES=$5
echo "the bare upgrade (the spec's steps by hand, same data safety) against siemctl's, mean over the cycles:"
awk -F'\t' -v first="$FIRST" -v nmodes="$NMODES" '
	function ratio(a, b) { return b > 0 ? sprintf("%.2f×", a / b) : "n/a" }
	function growth(a, b) { return b > 0 ? sprintf("%.2f×", a / b) : sprintf("n/a (the bare upgrade did not grow; siemctl %+.1fs beyond it)", a - b) }
	function name(k,   p) { split(k, p, SUBSEP); return (nmodes > 1) ? p[1] "/" p[2] : p[1] }
	FNR == 1 { next }
	# retries.tsv: "siemctl <volume>/<mode>#<n>" 0|1 (the bare runs: bare.tsv says the same)
	FILENAME == ARGV[1] { if ($1 ~ /^siemctl /) retried[substr($1, 9)] = $2; next }
	FILENAME == ARGV[2] {
		split($2, m, "#"); k = $1 SUBSEP m[1]
		s[k] += $5; sn[k]++
		if (!retried[$1 "/" $2]) { s0[k] += $5; s0n[k]++ }
		if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		next
	}
	{ split($2, m, "#"); k = $1 SUBSEP m[1]; b[k] += $3; bn[k]++; if (!$5) { b0[k] += $3; b0n[k]++ } }
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]
			S[k] = s[k] / sn[k]; B[k] = (bn[k] ? b[k] / bn[k] : 0)
			printf "floor: %s siemctl %.1fs bare %.1fs ratio %s\n", name(k), S[k], B[k], ratio(S[k], B[k])
		}
		for (i = 1; i <= n; i++) {
			k = order[i]; split(k, p, SUBSEP); f = first SUBSEP p[2]
			if (p[1] == first || !(f in S)) continue
			printf "growth: %s siemctl %+.1fs bare %+.1fs ratio %s\n", name(k), S[k] - S[f], B[k] - B[f], growth(S[k] - S[f], B[k] - B[f])
		}
		print ""
		print "the same over the upgrades where the security plugin'"'"'s first load was not retried:"
		for (i = 1; i <= n; i++) {
			k = order[i]
			if (s0n[k]) S0[k] = s0[k] / s0n[k]
			if (b0n[k]) B0[k] = b0[k] / b0n[k]
			printf "floor without retry: %s siemctl %s (%d of %d) bare %s (%d of %d) ratio %s\n", name(k),
				(k in S0) ? sprintf("%.1fs", S0[k]) : "n/a", s0n[k], sn[k], (k in B0) ? sprintf("%.1fs", B0[k]) : "n/a", b0n[k], bn[k],
				((k in S0) && (k in B0)) ? ratio(S0[k], B0[k]) : "n/a (every upgrade retried)"
		}
		for (i = 1; i <= n; i++) {
			k = order[i]; split(k, p, SUBSEP); f = first SUBSEP p[2]
			if (p[1] == first || !(f in S)) continue
			if (!((k in S0) && (f in S0) && (k in B0) && (f in B0))) {
				printf "growth without retry: %s n/a (a volume without an upgrade free of the retry)\n", name(k)
				continue
			}
			printf "growth without retry: %s siemctl %+.1fs bare %+.1fs ratio %s\n", name(k), S0[k] - S0[f], B0[k] - B0[f], growth(S0[k] - S0[f], B0[k] - B0[f])
		}
	}' "$RETRY" "$RES" "$BARE"
echo
total=$(($(wc -l <"$RETRY") - 1))
retried=$(awk -F'\t' 'NR > 1 && $2 == 1 { printf "%s%s", sep, $1; sep = ", " }' "$RETRY")
echo "security plugin first-load retry: $(awk -F'\t' 'NR > 1 && $2 == 1' "$RETRY" | wc -l) of $total upgrades${retried:+ ($retried)}"
