#!/usr/bin/env bash
# Runs every libFuzzer harness of a CCSHIM_FUZZ build for a bounded time,
# each from its committed corpus (seeds and regressions, copied so that the
# tree is not written to), and reports executions and findings.  A finding
# fails the run and says where the input is: once the bug is fixed, copy it
# into tests/fuzz/corpus/<harness>/ as a regression.
#
# usage: dev/run_fuzzers.sh BUILD_DIR SECONDS_EACH [PYTHON]
# CCSHIM_FUZZ_JOBS harnesses run at once (default: one a core).
# PYTHON (with JAX and atheris) runs fuzz_export_reader, the Atheris harness
# of ccshim.export's reader, and (with libcst and atheris) fuzz_scan_reader,
# ccshim.scan's; without it, or without those, each skips with the reason.
set -u
build=$1
seconds=$2
python=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
work="$build/fuzz-runs"
mkdir -p "$work"
# fuzz_scan_tree builds its trees here: tmpfs when there is one, and
# removed afterwards whatever way the fuzzer ended.
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=${TMPDIR:-/tmp}
CCSHIM_FUZZ_TREE_BASE=$(mktemp -d "$shm/ccshim-fuzz.XXXXXX")
export CCSHIM_FUZZ_TREE_BASE
trap 'rm -rf "$CCSHIM_FUZZ_TREE_BASE"' EXIT
status=0

# One harness's line: executions and findings; a finding, or a run that
# ended otherwise than by its time limit, fails the whole run.
report() {
  local h=$1 rc=$2 log="$work/$1/log" execs found
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
  found=$(ls "$work/$h/findings" | wc -l)
  printf 'fuzz %-22s %9s executions in %ss, %s findings\n' "$h" "${execs:-?}" "$seconds" "$found"
  if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
    grep -E 'ERROR|SUMMARY|Error|Traceback' "$log" | head -n 5
    echo "  input: $work/$h/findings/"
    status=1
  fi
}

# One libFuzzer harness, from a copy of its committed corpus; its exit
# status is left in its folder for report.
run_libfuzzer() {
  local h=$1 max_len=()
  # Text inputs long enough to pass every size a buffer once had (2047-byte
  # signatures, 8191-byte manifest lines).
  case $h in fuzz_signature | fuzz_manifest) max_len=(-max_len=65536) ;; esac
  # The signature syntax's tokens (names, layouts, [...]) spliced in.
  [ $h = fuzz_signature ] && max_len+=(-dict="$root/tests/fuzz/signature.dict")
  # -timeout: an input that takes 25 s is a finding (a hang), not a stall.
  "$build/tests/fuzz/$h" -max_total_time="$seconds" -timeout=25 -print_final_stats=1 "${max_len[@]}" \
    -artifact_prefix="$work/$h/findings/" "$work/$h/corpus" >"$work/$h/log" 2>&1
  echo $? >"$work/$h/rc"
}

# ccshim.export's reader (Python, Atheris): a crash or hang of MLIR's native
# reader must come back as ArtifactError, never take the process down.
# ccshim.scan's: a file libcst cannot parse is said not read, never more.  A
# regression input that MLIR's reader does not finish costs the read's
# limit each time it is replayed: 5 s here.
run_atheris() {
  local h=$1
  CCSHIM_READ_TIMEOUT=5 PYTHONPATH="$root/python" "$python" "$root/tests/fuzz/$h.py" \
    -max_total_time="$seconds" -timeout=25 -print_final_stats=1 -max_len=8192 \
    -artifact_prefix="$work/$h/findings/" "$work/$h/corpus" >"$work/$h/log" 2>&1
  echo $? >"$work/$h/rc"
}

# The harnesses run JOBS at a time (one a core: each is single-threaded, so
# each still has SECONDS of a core to itself), and are reported in order.
harnesses=(fuzz_adapter_frames fuzz_signature fuzz_frame_builder fuzz_scan fuzz_scan_tree
           fuzz_manifest fuzz_export_reader fuzz_scan_reader)
jobs=${CCSHIM_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
ran=()
for h in "${harnesses[@]}"; do
  case $h in
    fuzz_export_reader) needs=jax ;;
    fuzz_scan_reader) needs=libcst ;;
    *) needs= ;;
  esac
  if [ -n "$needs" ] &&
     { [ -z "$python" ] || ! "$python" -c "import atheris, $needs" 2>/dev/null; }; then
    echo "fuzz $h: skipped (no Python with atheris and $needs: ${python:-none given})"
    continue
  fi
  rm -rf "$work/$h" && mkdir -p "$work/$h/corpus" "$work/$h/findings"
  cp "$root/tests/fuzz/corpus/$h/"* "$work/$h/corpus/"
  # ccshim.scan's seeds: the scan fixture's .py and .pyx files besides its own
  # (a seed whose first byte is odd is read as Cython, as every .pyx's "#" is).
  [ $h = fuzz_scan_reader ] && cp "$root/tests/scan/fixture/python/"*.py \
    "$root/tests/scan/fixture/cython/"*.pyx "$work/$h/corpus/"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  if [ -n "$needs" ]; then run_atheris $h & else run_libfuzzer $h & fi
  ran+=("$h")
done
wait
for h in "${ran[@]}"; do report "$h" "$(cat "$work/$h/rc" 2>/dev/null || echo 1)"; done
exit $status
