"""Record the ISIC reference scorer's outputs into tests/fixtures/isic/reference_outputs.json.

The parity cases' inputs are those committed in tests/fixtures/isic/parity_inputs.json.gz.

    .venv/bin/python scripts/isic_reference_fixtures.py --inputs   # only when the parity cases change
    scripts/isic_reference_env.sh                                  # once: the reference's environment
    .venv/bin/python scripts/isic_reference_fixtures.py            # runs the reference (Python >= 3.13)

`--inputs` (needs no reference) makes the truth and predictions CSV texts of every parity case of
benchmarks/isic_reference.py and writes them to parity_inputs.json.gz. They are made with NumPy
(np.exp, powers), whose last bits depend on the CPU's SIMD path, so they are made on the path
without AVX-512 (NPY_DISABLE_CPU_FEATURES="AVX512_ICL AVX512_SPR X86_V4"; a no-op on a CPU without
it), as they first were; the script says whether they still equal those of the recorded outputs.
The tests never regenerate them: they read the committed file, check its digests against the
recorded ones and compare numbers bit for bit.

Without `--inputs`, for every parity case it writes the committed inputs to a scratch folder,
runs `isic-challenge-scoring` 5.8.0 on them and keeps its JSON (or its error line) with a digest
of the inputs; for every rejection case, its error line (or its JSON when it accepts the file);
for the fuzzed files, the check its own reader refuses each at (or a digest of what it reads).
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.isic_reference import (  # noqa: E402
    FIXTURES,
    PARITY_CASES,
    REFERENCE_READER,
    REFERENCE_STEPS,
    REFERENCE_VERSION,
    REJECTION_CASES,
    fuzzed_submissions,
    inputs_digest,
    parity_inputs,
    reference_cli,
    rejection_truth,
    run_reference,
)

FUZZ_SEED, FUZZ_COUNT = 1, 600
INPUTS = FIXTURES.parent / "parity_inputs.json.gz"  # tests/test_isic_parity.py reads it
NO_AVX512 = "AVX512_ICL AVX512_SPR X86_V4"  # NumPy's names of its AVX-512 code paths (NumPy >= 2.4)



def fuzz_outcomes(scratch: Path) -> list[str]:
    """The reference's outcome on each fuzzed file: "ok <digest of the values>" or the number of
    the check that refused it (REFERENCE_STEPS)."""
    truth = scratch / "fuzz-truth.csv"
    truth.write_text(rejection_truth())
    paths = []
    for n, data in enumerate(fuzzed_submissions(FUZZ_SEED, FUZZ_COUNT)):
        paths.append(scratch / f"fuzz-{n:04d}.csv")
        paths[-1].write_bytes(data)
    python = reference_cli().parent / "python"
    lines = subprocess.run([str(python), "-c", REFERENCE_READER, str(truth), *map(str, paths)], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    outcomes = []
    for line in lines:
        if line.startswith("ok "):
            outcomes.append(line)
        else:
            message = line[len("error "):]
            outcomes.append(str(next(n for n, start in enumerate(REFERENCE_STEPS) if message.startswith(start))))
    return outcomes


def make_inputs() -> None:
    """Write every parity case's (truth, predictions) CSV texts to INPUTS, made on NumPy's path
    without AVX-512; say which differ from the inputs the recorded outputs were made on."""
    if os.environ.get("NPY_DISABLE_CPU_FEATURES") != NO_AVX512:
        # NumPy reads the variable once, when it loads: run again in a fresh process.
        env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": NO_AVX512}
        os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]], env)
    inputs = {}
    for name, case in PARITY_CASES.items():
        truth, predictions = parity_inputs(case)
        inputs[name] = {"truth": truth, "predictions": predictions}
    data = json.dumps({"made_by": "scripts/isic_reference_fixtures.py --inputs", "cases": inputs}) + "\n"
    INPUTS.parent.mkdir(parents=True, exist_ok=True)
    with open(INPUTS, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as stream:
        stream.write(data.encode())  # no name nor time in the header: the same inputs, the same bytes
    print(f"wrote {INPUTS} ({INPUTS.stat().st_size} bytes, {len(data)} uncompressed)")
    recorded = json.loads(FIXTURES.read_text())["parity"] if FIXTURES.exists() else {}
    changed = [name for name, case in inputs.items()
               if recorded.get(name, {}).get("inputs_sha256") != inputs_digest(case["truth"], case["predictions"])]
    if changed:
        print("These cases' inputs differ from those of the recorded outputs: record them again (runs the reference,"
              " whose environment needs Python >= 3.13): " + ", ".join(changed))
    else:
        print(f"All {len(inputs)} cases' inputs equal those of the recorded outputs (same digests).")


def committed_inputs() -> dict[str, dict[str, str]]:
    if not INPUTS.exists():
        sys.exit(f"{INPUTS} is missing: make it first with --inputs.")
    with gzip.open(INPUTS, "rt", encoding="utf-8") as stream:
        return json.load(stream)["cases"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", action="store_true",
                        help=f"(re)make {INPUTS.relative_to(ROOT)} only (no reference needed)")
    if parser.parse_args().inputs:
        make_inputs()
        return
    if reference_cli() is None:
        sys.exit("The reference environment is missing: run scripts/isic_reference_env.sh first "
                 "(it needs Python >= 3.13).")
    inputs = committed_inputs()
    if set(inputs) != set(PARITY_CASES):
        sys.exit(f"{INPUTS} does not hold the parity cases of benchmarks/isic_reference.py: remake it with --inputs.")
    recorded = {"reference": f"isic-challenge-scoring {REFERENCE_VERSION}", "parity": {}, "rejections": {}}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for name, case in PARITY_CASES.items():
            truth, predictions = inputs[name]["truth"], inputs[name]["predictions"]
            (scratch / "truth.csv").write_text(truth)
            (scratch / "predictions.csv").write_text(predictions)
            result = run_reference(scratch / "truth.csv", scratch / "predictions.csv", case["metric"])
            recorded["parity"][name] = {"inputs_sha256": inputs_digest(truth, predictions), **result}
            print(name, result["output"]["overall"] if "output" in result else result)
        (scratch / "truth.csv").write_text(rejection_truth())
        for name, data in REJECTION_CASES.items():
            (scratch / "predictions.csv").write_bytes(data)
            result = run_reference(scratch / "truth.csv", scratch / "predictions.csv")
            recorded["rejections"][name] = result
            print(name, result.get("error", "accepted"))
        recorded["fuzz"] = {"seed": FUZZ_SEED, "count": FUZZ_COUNT, "outcomes": fuzz_outcomes(scratch)}
    FIXTURES.parent.mkdir(parents=True, exist_ok=True)
    FIXTURES.write_text(json.dumps(recorded, indent=1, sort_keys=False) + "\n")
    print(f"wrote {FIXTURES} ({FIXTURES.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
