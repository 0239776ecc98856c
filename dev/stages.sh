#!/usr/bin/env bash
# Runs make targets one after another, times each, and prints a table of
# the times at the end, also when a stage fails (the run stops there and
# exits with that stage's status).  `make test` runs its stages with it.
#
# A stage may be two chains that run side by side, A1,A2+B1,B2: A1 then
# A2, and alongside them B1 then B2, each chain stopping at its first
# failure.  A's output comes as it is made; B's, kept in a log, is printed
# once both chains have ended.  make test pairs the Python suites, which
# leave about a seventh of two cores idle, with the C suite and the stages
# that leave a third idle (the wheel's, plain CMake's, the sanitizers'),
# then the fuzzers, none of which writes what the other chain reads.
#
# A stage's prerequisites that an earlier stage made (test-setup, build)
# are not made again (make -o): nor twice at once by two chains.
#
# usage: dev/stages.sh STAGE...   (STAGE: TARGET, or TARGET[,TARGET...]+TARGET[,TARGET...])
set -u
cd "$(dirname "$0")/.."
names=() times=() results=() made=()
status=0
start_all=$SECONDS
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

table() {
  local i total=$((SECONDS - start_all))
  printf '\n== stage times (%d cores)\n' "$(nproc 2>/dev/null || echo '?')"
  printf '%-16s %8s  %s\n' stage time result
  for i in "${!names[@]}"; do
    printf '%-16s %5dm%02ds  %s\n' "${names[$i]}" $((times[i] / 60)) $((times[i] % 60)) \
      "${results[$i]}"
  done
  printf '%-16s %5dm%02ds\n' total $((total / 60)) $((total % 60))
}

# run_chain TAG TARGET...: the targets in turn, stopping at the first that
# fails; each one's time and result go to $logs/TAG.times, a line each.
run_chain() {
  local tag=$1 target t0 rc m old
  shift
  for target in "$@"; do
    old=()
    for m in "${made[@]}"; do [ "$m" = "$target" ] || old+=(-o "$m"); done
    t0=$SECONDS
    make --no-print-directory "${old[@]}" "$target"
    rc=$?
    echo "$target $((SECONDS - t0)) $rc" >>"$logs/$tag.times"
    [ $rc = 0 ] || return $rc
  done
}

# record TAG NOTE: the chain's lines into the table; its last status kept.
record() {
  local target time rc
  while read -r target time rc; do
    names+=("$target") times+=("$time")
    if [ "$rc" = 0 ]; then
      results+=("ok$2") made+=("$target")
    else
      results+=("FAILED (exit $rc)$2") status=$rc
    fi
  done <"$logs/$1.times"
}

for stage in "$@"; do
  IFS=, read -r -a first <<<"${stage%%+*}"
  if [ "$stage" = "${stage#*+}" ]; then
    run_chain one "${first[@]}"
    record one ""
  else
    IFS=, read -r -a second <<<"${stage#*+}"
    run_chain beside "${second[@]}" >"$logs/beside.log" 2>&1 &
    pid=$!
    run_chain along "${first[@]}"
    wait $pid
    echo "== what ran alongside (${second[*]}), as it printed it"
    cat "$logs/beside.log"
    alongside=", alongside ${first[*]}"
    record along ""
    record beside "$alongside"
  fi
  rm -f "$logs"/*.times
  [ $status = 0 ] || break
done
table
exit $status
