#!/usr/bin/env bash
# Runs make targets one after another, times each, and prints a table of
# the times at the end, also when a stage fails (the run stops there and
# exits with that stage's status).  `make test` runs its stages with it.
#
# usage: dev/stages.sh TARGET...
set -u
cd "$(dirname "$0")/.."
names=() times=() results=()
status=0
start_all=$SECONDS

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

for target in "$@"; do
  t0=$SECONDS
  make --no-print-directory "$target"
  rc=$?
  names+=("$target") times+=($((SECONDS - t0)))
  if [ $rc = 0 ]; then results+=(ok); else results+=("FAILED (exit $rc)"); status=$rc; fi
  [ $rc = 0 ] || break
done
table
exit $status
