"""Record the ISIC reference scorer's outputs into tests/fixtures/isic/reference_outputs.json.

    scripts/isic_reference_env.sh                       # once: the reference's environment
    .venv/bin/python scripts/isic_reference_fixtures.py

For every parity case of benchmarks/isic_reference.py it writes the inputs to a scratch folder,
runs `isic-challenge-scoring` 5.8.0 on them and keeps its JSON (or its error line) with a digest
of the inputs; for every rejection case, its error line (or its JSON when it accepts the file).
The tests regenerate the same inputs, check the digest, and compare ours with these recorded
outputs: an independent computation, kept small (no input files are stored).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.isic_reference import (  # noqa: E402
    FIXTURES, PARITY_CASES, REFERENCE_STEPS, REFERENCE_VERSION, REJECTION_CASES, fuzzed_submissions, inputs_digest,
    parity_inputs, reference_cli, rejection_truth, run_reference,
)


FUZZ_SEED, FUZZ_COUNT = 1, 600

# Runs inside the reference's environment: its own reading and checks of a submission (what its
# command line does before scoring), on every fuzzed file; prints one outcome per line.
REFERENCE_READER = """
import io, sys, warnings, hashlib
import numpy as np
warnings.filterwarnings("ignore")
from isic_challenge_scoring.load_csv import parse_csv, parse_truth_csv, validate_rows
truth_text = open(sys.argv[1]).read()
for path in sys.argv[2:]:
    truth, _ = parse_truth_csv(io.StringIO(truth_text))
    try:
        with open(path) as stream:
            predictions = parse_csv(stream, truth.columns)
        validate_rows(truth, predictions)
        values = predictions.sort_index().to_numpy(dtype=np.float64)
        print("ok " + hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()[:16])
    except Exception as error:
        print("error " + " ".join(str(error).split()))
"""


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


def main() -> None:
    if reference_cli() is None:
        sys.exit("The reference environment is missing: run scripts/isic_reference_env.sh first.")
    recorded = {"reference": f"isic-challenge-scoring {REFERENCE_VERSION}", "parity": {}, "rejections": {}}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for name, case in PARITY_CASES.items():
            truth, predictions = parity_inputs(case)
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
