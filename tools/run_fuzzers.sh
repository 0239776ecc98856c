#!/usr/bin/env bash
# Runs every libFuzzer harness of a CCSHIM_FUZZ build for a bounded time,
# each from its committed corpus (seeds and regressions, copied so that the
# tree is not written to), and reports executions and findings.  A finding
# fails the run and says where the input is: once the bug is fixed, copy it
# into tests/fuzz/corpus/<harness>/ as a regression.
#
# usage: tools/run_fuzzers.sh BUILD_DIR SECONDS_EACH
set -u
build=$1
seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)
work="$build/fuzz-runs"
mkdir -p "$work"
status=0
for h in fuzz_adapter_frames fuzz_signature fuzz_frame_builder fuzz_scan; do
  rm -rf "$work/$h" && mkdir -p "$work/$h/corpus" "$work/$h/findings"
  cp "$root/tests/fuzz/corpus/$h/"* "$work/$h/corpus/"
  log="$work/$h/log"
  "$build/tests/fuzz/$h" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/$h/findings/" "$work/$h/corpus" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
  found=$(ls "$work/$h/findings" | wc -l)
  printf 'fuzz %-22s %9s executions in %ss, %s findings\n' "$h" "${execs:-?}" "$seconds" "$found"
  if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
    grep -E 'ERROR|SUMMARY' "$log" | head -n 5
    echo "  input: $work/$h/findings/"
    status=1
  fi
done
exit $status
