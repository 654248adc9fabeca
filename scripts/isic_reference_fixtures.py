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
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.isic_reference import (  # noqa: E402
    FIXTURES, PARITY_CASES, REFERENCE_VERSION, REJECTION_CASES, inputs_digest, parity_inputs, reference_cli,
    rejection_truth, run_reference,
)


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
    FIXTURES.parent.mkdir(parents=True, exist_ok=True)
    FIXTURES.write_text(json.dumps(recorded, indent=1, sort_keys=False) + "\n")
    print(f"wrote {FIXTURES} ({FIXTURES.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
