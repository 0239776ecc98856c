"""Atheris harness for ccshim.export's reader: any bytes given to
ccshim.export.read, and every custom call of what reads described.  An input
is either read or refused with ArtifactError (one line that says what was
expected); any other exception, a hang or a crash of the native reader is a
finding.  Run by dev/run_fuzzers.sh with libFuzzer's flags:

    python tests/fuzz/fuzz_export_reader.py CORPUS_DIR -max_total_time=60
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import atheris  # noqa: E402
import jax  # noqa: E402,F401  (imported uninstrumented: only ccshim's code is)

with atheris.instrument_imports(include=["ccshim"]):
    import ccshim.export as ce


def one_input(data: bytes) -> None:
    try:
        art = ce.read(bytes(data))
    except ce.ArtifactError as e:
        assert str(e) and "\n" not in str(e).strip(), f"not one line: {e!r}"
        return
    for call in art.calls():
        assert call.kind in ("legacy", "typed", "builtin", "ccshim"), call


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
