"""`ccshim conform` on kernels whose outcomes are known (tests/conform/kernels.c)
and on the examples: equal for every element type, and each kind of
difference reported as what it is.  Standard library only; run by ctest:

    test_conform.py CCSHIM KERNELS_LIB EXAMPLES_LIB
"""
import json
import os
import subprocess
import sys
import tempfile

CCSHIM, KERNELS, EXAMPLES = (os.path.abspath(a) for a in sys.argv[1:4])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def conform(*args, timeout=120):
    p = subprocess.run([CCSHIM, "conform", *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def one_json(*args):
    rc, out, err = conform(*args, "--json")
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        check(False, f"conform {args}: not JSON: {out!r} {err!r}")
        return rc, None
    return rc, report["targets"][0]


# --- Every element type the signature syntax accepts, byte for byte ----------
BITS = {"pred": 8, "s8": 8, "s16": 16, "s32": 32, "s64": 64, "u8": 8, "u16": 16,
        "u32": 32, "u64": 64, "f16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
        "bf16": 16, "f8e5m2": 8, "f8e4m3fn": 8, "s4": 4, "u4": 4, "f8e4m3b11fnuz": 8,
        "f8e5m2fnuz": 8, "f8e4m3fnuz": 8, "s2": 2, "u2": 2, "f8e4m3": 8, "f8e3m4": 8,
        "s1": 1, "u1": 1, "f4e2m1fn": 4, "f8e8m0fnu": 8}
with tempfile.TemporaryDirectory() as tmp:
    manifest = os.path.join(tmp, "all_types.manifest")
    with open(manifest, "w") as f:
        f.write("# one line per element type; LIB relative to this file is allowed too\n")
        for dtype, bits in BITS.items():
            n = 24
            nbytes = (n * bits + 7) // 8
            f.write(f"{KERNELS} copy_bytes_v3 --api 3 --signature '({dtype}[{n}]) -> "
                    f"{dtype}[{n}]' --opaque-hex {str(nbytes).encode().hex()} --runs 4\n")
        # a zero-sized buffer and a scalar
        f.write(f"{KERNELS} copy_bytes_v3 --api 3 --signature '(f32[0]) -> f32[0]' "
                f"--opaque-hex {b'0'.hex()}\n")
        f.write(f"{KERNELS} copy_bytes_v3 --api 3 --signature '(f64[]) -> f64[]' "
                f"--opaque-hex {b'8'.hex()}\n")
    rc, out, err = conform("--manifest", manifest, "--json")
    report = json.loads(out)
    check(rc == 0, f"all element types: exit {rc}, {err}")
    check(len(report["targets"]) == len(BITS) + 2,
          f"all element types: {len(report['targets'])} reports")
    for t in report["targets"]:
        check(t["status"] == "equal" and t["equal"] == t["runs"],
              f"{t['signature']}: {t['status']} {t['detail']}")
    check(report["all_equal"] is True, "all_equal")

    # The same manifest as a table.
    rc, out, err = conform("--manifest", manifest)
    check(rc == 0 and f"{len(BITS) + 2} of {len(BITS) + 2} targets equal" in out,
          f"table summary: {out[-200:]}")

# --- The examples: v1, v2, v3 and a tuple with a temp buffer ----------------
SIG = "(f32[128], f32[2048]) -> f32[2048]"
for symbol, api, extra in [("add_v1", "1", []), ("add_v2", "2", []),
                           ("add_v3", "3", ["--opaque-hex", "0000c03f00080000"])]:
    rc, t = one_json(EXAMPLES, symbol, "--api", api, "--signature", SIG, "--runs", "6", *extra)
    check(rc == 0 and t and t["status"] == "equal" and t["equal"] == 6,
          f"{symbol}: {rc} {t}")
    if symbol == "add_v2":
        # add_v2 refuses non-finite input: the runs with NaN and Inf fail alike,
        # the others compare their results.
        check(t and 0 < t["both_failed"] < 6, f"add_v2 both_failed: {t}")
rc, t = one_json(EXAMPLES, "tuple_tmp_v2", "--api", "2", "--signature",
                 "(f32[128], f32[2048]) -> (f32[2048], f32[2048])")
check(rc == 0 and t and t["status"] == "equal", f"tuple_tmp_v2: {t}")
rc, t = one_json(KERNELS, "split_v1", "--api", "1", "--signature",
                 "(f64[16]) -> (f64[16], s32[16])")
check(rc == 0 and t and t["status"] == "equal", f"split_v1: {t}")

# --- Differences, each reported as what it is --------------------------------
rc, t = one_json(KERNELS, "noisy_v2", "--api", "2", "--signature", "(f32[64]) -> f32[64]")
check(rc == 1 and t["status"] == "differ" and t["first_difference"]["result"] == 0,
      f"noisy_v2: {rc} {t}")

rc, t = one_json(KERNELS, "rounding_v1", "--api", "1", "--signature", "(f64[64]) -> f64[64]")
check(rc == 1 and t["status"] == "differ", f"rounding_v1 byte for byte: {rc} {t}")
rc, t = one_json(KERNELS, "rounding_v1", "--api", "1", "--signature", "(f64[64]) -> f64[64]",
                 "--rtol", "1e-9")
check(rc == 0 and t["status"] == "equal", f"rounding_v1 within rtol: {rc} {t}")

rc, t = one_json(KERNELS, "refuse_v2", "--api", "2", "--signature", "(f32[4]) -> f32[4]")
check(rc == 0 and t["status"] == "equal" and t["both_failed"] == t["runs"],
      f"refuse_v2 fails alike: {rc} {t}")
# ... and the report keeps what the kernel said (it was dropped).
check(t.get("failure_message") == "refuse_v2: this kernel always refuses",
      f"refuse_v2's message kept in --json: {t}")
rc, out, _ = conform(KERNELS, "refuse_v2", "--api", "2", "--signature", "(f32[4]) -> f32[4]")
check(rc == 0 and "(both failed alike: refuse_v2: this kernel always refuses)" in out,
      f"refuse_v2's message kept in the table: {out!r}")
rc, t = one_json(KERNELS, "refuse_differently_v2", "--api", "2", "--signature",
                 "(f32[4]) -> f32[4]")
check(rc == 1 and t["status"] == "differ" and "refused in process" in t["detail"],
      f"refuse_differently_v2: {rc} {t}")

rc, out, err = conform(KERNELS, "crash_v1", "--api", "1", "--signature", "(f32[4]) -> f32[4]")
check(rc == 1 and "CRASHED" in out and "legacy crashed" in out.replace("exited", "crashed"),
      f"crash_v1 is reported, ccshim survives: {rc} {out!r}")
check("0 of 1 targets equal" in out, f"crash_v1 summary: {out!r}")

rc, t = one_json(KERNELS, "spin_v1", "--api", "1", "--signature", "(f32[4]) -> f32[4]",
                 "--timeout", "1", "--runs", "1")
check(rc == 1 and t["status"] == "crashed" and "timed out after 1 s" in t["detail"],
      f"spin_v1 times out: {rc} {t}")

rc, t = one_json(KERNELS, "exit_v2", "--api", "2", "--signature", "(f32[4]) -> f32[4]")
check(rc == 1 and t["status"] == "crashed" and "exited with status 3" in t["detail"],
      f"exit_v2: {rc} {t}")

rc, t = one_json(KERNELS, "overrun_v1", "--api", "1", "--signature", "(f32[15]) -> f32[15]")
check(rc == 1 and t["status"] == "overran" and "byte 60 of result 0" in t["detail"],
      f"overrun_v1: {rc} {t}")

# A signature larger than the kernel's buffers: the guard page catches it.
rc, t = one_json(EXAMPLES, "add_v1", "--api", "1", "--signature", "(f32[12], f32[20]) -> f32[20]")
check(rc == 1 and t["status"] in ("crashed", "overran"), f"too small a signature: {rc} {t}")

# A kernel written to XLA's classic nested tuple-operand convention: equal
# with --tuple-operands nested on both sides; with the default (flat leaves,
# XLA's CPU runtime since 0.4.32) it reads floats as pointers and crashes.
NESTED = ("--api", "1", "--signature", "((f32[4], f32[4]), f32[4]) -> f32[4]")
rc, t = one_json(KERNELS, "nested_sum_v1", *NESTED, "--tuple-operands", "nested")
check(rc == 0 and t["status"] == "equal" and t["form"] == "CPU v1, nested",
      f"nested_sum_v1 nested: {rc} {t}")
rc, t = one_json(KERNELS, "nested_sum_v1", *NESTED, "--timeout", "5")
check(rc == 1 and t["status"] == "crashed" and t["form"] == "CPU v1",
      f"nested_sum_v1 flat: {rc} {t}")
rc, out, err = conform(KERNELS, "nested_sum_v1", *NESTED, "--tuple-operands", "deep")
check(rc == 2 and "--tuple-operands deep: expected flat or nested" in err,
      f"--tuple-operands deep: {rc} {err!r}")

# A manifest mixing outcomes: one report, exit 1, every line present.
with tempfile.TemporaryDirectory() as tmp:
    os.symlink(KERNELS, os.path.join(tmp, "libk.so"))
    manifest = os.path.join(tmp, "mixed.manifest")
    with open(manifest, "w") as f:
        f.write("libk.so refuse_v2 --api 2 --signature '(f32[4]) -> f32[4]'  # relative LIB\n")
        f.write("\n# a comment line\n")
        f.write("libk.so crash_v1 --api 1 --signature \"(f32[4]) -> f32[4]\"\n")
        f.write("libk.so no_such_symbol --api 1 --signature '(f32[4]) -> f32[4]'\n")
        f.write("libk.so refuse_v2 --api 2 --signature '(f32[4) -> f32[4]'\n")
        f.write("libk.so refuse_v2 --api 2 --signature '(f32[4]) -> f32[4]\n")
    rc, out, err = conform("--manifest", manifest, "--json")
    report = json.loads(out)
    statuses = [t["status"] for t in report["targets"]]
    check(rc == 1 and statuses == ["equal", "crashed", "error", "error", "error"],
          f"mixed manifest: {rc} {statuses}")
    details = [t["detail"] for t in report["targets"]]
    check("no symbol 'no_such_symbol'" in details[2], details[2])
    check("column" in details[3], details[3])
    check("unclosed quote" in details[4], details[4])

# --- Fixed operands and native ports (the staged migration's libraries) --------
MIGRATION = os.path.join(os.path.dirname(EXAMPLES), "libmigration_legacy.so")
PORTED = os.path.join(os.path.dirname(EXAMPLES), "libmigration_ported.so")
RMS = ["--api", "2", "--signature", "(u8[16], f32[8,64]) -> f32[8,64]"]
rc, t = one_json(MIGRATION, "rms_norm", *RMS, "--arg-hex", "0=0800000040000000acc5273700000000")
check(rc == 0 and t["status"] == "equal" and t["both_failed"] == 0, f"rms_norm fixed: {t}")
rc, t = one_json(MIGRATION, "rms_norm", *RMS, "--arg-hex", "0=08000000400000000000000000000000")
check(rc == 0 and t["both_failed"] == t["runs"], f"rms_norm eps 0 fails alike: {t}")
rc, t = one_json(MIGRATION, "rms_norm", *RMS, "--arg-hex", "0=00")
check(rc == 2 and "--arg-hex 0: 1 bytes given, but argument 0 has 16 bytes" in t["detail"], t)
rc, t = one_json(MIGRATION, "rms_norm", *RMS, "--arg-hex", "7=00")
check(rc == 2 and "--arg-hex 7: 1 bytes given, but no such argument" in t["detail"], t)
CLIP = ["--api", "3", "--signature", "(f32[1000]) -> f32[1000]", "--opaque-hex",
        "0000c0bf00002040e803000000000000"]
if os.path.exists(PORTED):
    against = ["--against", f"{PORTED}:clip_ffi", "--attr", "lo=f32:-1.5"]
    rc, t = one_json(MIGRATION, "clip", *CLIP, *against, "--attr", "hi=f32:2.5")
    check(rc == 0 and t["status"] == "equal" and t["form"] == "CPU v3 vs typed", f"port: {t}")
    rc, t = one_json(MIGRATION, "clip", *CLIP, *against, "--attr", "hi=f32:2.0")
    check(rc == 1 and t["status"] == "differ", f"a port with another bound differs: {t}")
    rc, t = one_json(MIGRATION, "clip", *CLIP, *against)
    check(rc == 1 and "Wrong number of attributes" in t["detail"], f"missing attribute: {t}")
else:
    print(f"note: {PORTED} not built (no jaxlib headers); --against checked by "
          "example_migration_conform_ported where it is")

# --- Bad input: one line on stderr, exit 2, never a trace ---------------------
for args, expect in [
    (["/no/such/lib.so", "k", "--api", "1", "--signature", "() -> f32[1]"], "cannot load"),
    ([KERNELS, "nope", "--api", "1", "--signature", "() -> f32[1]"], "no symbol 'nope'"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "(f32[4"], "signature"),
    ([KERNELS, "crash_v1", "--api", "7", "--signature", "() -> f32[1]"],
     "--api 7: expected an integer from 1 to 3"),
    ([KERNELS, "crash_v1", "--api", "2", "--signature", "() -> f32[1]", "--runs", "0"],
     "--runs 0: expected an integer from 1 to 100000"),
    ([KERNELS, "crash_v1", "--api", "2", "--signature", "() -> f32[1]", "--seed", "x1"],
     "--seed x1: expected an unsigned integer"),
    ([KERNELS, "crash_v1", "--api", "2", "--signature", "() -> f32[1]", "--rtol", "-1"],
     "--rtol -1: expected a number >= 0"),
    ([KERNELS, "crash_v1", "--api", "2", "--signature", "() -> f32[1]", "--timeout"],
     "--timeout needs a value"),
    ([KERNELS, "crash_v1", "--signature", "() -> f32[1]"], "--api N is required"),
    ([KERNELS, "crash_v1", "--api", "1"], "--signature is required"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--opaque-hex", "abc"],
     "even number"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--opaque-hex", "zz"],
     "not hex"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--opaque-file",
      "/no/such/file"], "--opaque-file"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--platform", "cuda"],
     "conform runs CPU kernels"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--bogus"],
     "unknown option --bogus"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--attr", "a=f32:1"],
     "--attr goes with --against"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--against", "x.so"],
     "expected LIB:HANDLER_SYMBOL"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "(f32[1]) -> f32[1]", "--against",
      "/no/such.so:h"], "--against: cannot load /no/such.so"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--against", "x.so:h",
      "--attr", "lo"], "expected NAME=TYPE:VALUE"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--against", "x.so:h",
      "--attr", "lo=q8:1"], "type 'q8' is not an attribute type"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--against", "x.so:h",
      "--attr", "lo=f32:one"], "'one' is not a f32 value"),
    ([KERNELS, "crash_v1", "--api", "1", "--signature", "() -> f32[1]", "--arg-hex", "x=00"],
     "expected I=HEX"),
    (["--manifest", "/no/such/manifest"], "cannot read manifest"),
    ([], "expected LIB SYMBOL"),
]:
    rc, out, err = conform(*args)
    lines = err.strip().splitlines()
    check(rc == 2 and len(lines) == 1 and expect in lines[0] and "Traceback" not in err,
          f"bad input {args}: rc={rc} stderr={err!r}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("ccshim conform: every check passed")
