# shellcheck shell=bash disable=SC2154 # the caller's variables, named below
# Sourced by bench/run.sh: instructions per lock cycle under callgrind, the library beside
# the raw ceiling. Each mode runs twice (SMALL and BIG cycles, 1 in flight); the difference
# divided by BIG - SMALL is per cycle, so start-up and shutdown cancel out.
# Uses the caller's $load (redlock_load), $results (the results directory) and $five (the
# config of the 5 masters, which are up).

cg_total_ir() { awk '/^totals:/ {print $2}' "$1"; }

# cg_per_function SMALL.out BIG.out CYCLES INCLUSIVE: instructions per cycle by function.
cg_per_function() {
  local small=$1 big=$2 cycles=$3 inclusive=$4
  annotate() {
    callgrind_annotate --inclusive="$inclusive" --threshold=100 "$1" 2>/dev/null |
      awk '/^ *[0-9,]+ +\(/ {ir=$1; gsub(",", "", ir); line=$0;
           sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", line); print ir "\t" line}'
  }
  awk -F'\t' -v n="$cycles" 'NR == FNR {a[$2] = $1; next}
       {d = ($1 - a[$2]) / n; if (d >= 20) printf "%.0f\t%s\n", d, $2}' \
    <(annotate "$small") <(annotate "$big") | sort -t$'\t' -k1,1 -rn | head -150
}

# Allocations per cycle by call site: callers of the interposed allocation
# functions, with their call counts, again as the difference of the two runs.
cg_alloc_sites() {
  callgrind_annotate --tree=caller --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk '
      /^$/ { n = 0; next }
      / < / { callers[++n] = $0; next }
      /\*  .*:(malloc|calloc|realloc|operator new(\[\])?\(unsigned long\)) \[.*redlock_load\]/ {
        fn = $0; sub(/^.*\*  [^:]*:/, "", fn); sub(/ \[.*$/, "", fn)
        for (i = 1; i <= n; i++) {
          line = callers[i]
          if (!match(line, / \([0-9,]+x\) \[/)) continue
          count = substr(line, RSTART + 2, RLENGTH - 5); gsub(/[,x]/, "", count)
          name = substr(line, 1, RSTART - 1); sub(/^.*< /, "", name)
          print count "\t" name " " substr(line, RSTART + RLENGTH - 1) "\t" fn
        }
      }'
}
cg_per_cycle_allocs() {
  awk -F'\t' -v n="$3" 'NR == FNR {a[$2 "\t" $3] = $1; next}
       {d = ($1 - a[$2 "\t" $3]) / n; if (d >= 0.05) printf "%.2f\t%s\t%s\n", d, $2, $3}' \
    <(cg_alloc_sites "$1") <(cg_alloc_sites "$2") | sort -t$'\t' -k1,1 -rn
}

# callgrind_phase SMALL BIG MODES TABLES: callgrind.json with the totals of each of MODES
# (lib raw [raw_resp]); with TABLES=1 also the per-function and per-call-site TSVs of lib
# and raw that the report shows.
callgrind_phase() {
  local small=$1 big=$2 modes=$3 tables=$4 mode n out inclusive suffix
  local cg_args=(--config "$five" --concurrency 1 --duration-s 600 --warmup-ops 100
                 --warmup-s 600 --sample-ms 0 --progress never)
  local -A ir
  for mode in $modes; do
    # raw_resp: the raw client with the library's RESP encoder instead of hiredis's
    # formatter, a like-for-like reference beside the ceiling as defined.
    local mode_args=(--mode "$mode")
    [[ $mode == raw_resp ]] && mode_args=(--mode raw --raw-encoder library)
    for n in "$small" "$big"; do
      out=$results/callgrind-$mode-$n.out
      valgrind --tool=callgrind --callgrind-out-file="$out" "$load" "${cg_args[@]}" \
        "${mode_args[@]}" --ops "$n" >/dev/null 2>"$results/callgrind-$mode-$n.log"
      ir[$mode-$n]=$(cg_total_ir "$out")
    done
    [[ $tables == 1 && $mode != raw_resp ]] || continue  # the totals are what it is for
    for inclusive in no yes; do
      suffix=; [[ $inclusive == yes ]] && suffix=-inclusive
      cg_per_function "$results/callgrind-$mode-$small.out" "$results/callgrind-$mode-$big.out" \
        $((big - small)) "$inclusive" >"$results/callgrind-$mode$suffix.tsv"
    done
    cg_per_cycle_allocs "$results/callgrind-$mode-$small.out" "$results/callgrind-$mode-$big.out" \
      $((big - small)) >"$results/callgrind-$mode-allocs.tsv"
  done
  local command="valgrind --tool=callgrind $load ${cg_args[*]} --mode lib|raw --ops $small|$big"
  local entries="" sep=""
  for mode in $modes; do
    entries+="$sep  \"$mode\": {\"ir_small\": ${ir[$mode-$small]}, \"ir_big\": ${ir[$mode-$big]},"
    entries+=" \"per_cycle\": $(( (ir[$mode-$big] - ir[$mode-$small]) / (big - small) ))}"
    sep=$',\n'
  done
  cat >"$results/callgrind.json" <<EOF
{
  "small": $small, "big": $big,
  "command": "$command",
$entries
}
EOF
}
