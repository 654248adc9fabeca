"""Regenerate a challenge's bundled example: ground-truth/<challenge>/, test/<challenge>/input/,
test/<challenge>/expected_metrics.json and the invalid submissions under test/<challenge>/invalid/.

    python scripts/make_example.py rare26

expected_metrics.json is what this version writes; tests/test_examples.py checks it against an
independent computation, and ./test.sh checks the image reproduces it byte for byte.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation import examples  # noqa: E402


def main(challenge: str) -> None:
    example = ROOT / "test" / challenge
    ground_truth = ROOT / "ground-truth" / challenge
    for folder in (example, ground_truth):
        shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        examples.synthesize(challenge, Path(scratch), seed=0)
        shutil.copytree(Path(scratch) / "ground-truth", ground_truth)
        shutil.copytree(Path(scratch) / "input", example / "input")
    run = [sys.executable, "-m", "evaluation", challenge, "--input", str(example / "input"),
           "--ground-truth", str(ground_truth)]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(run + ["--output", out], check=True, cwd=ROOT)
        shutil.copy(Path(out) / "metrics.json", example / "expected_metrics.json")
    for name, changes in examples.invalid_examples(challenge, example / "input").items():
        case = example / "invalid" / name
        shutil.copytree(example / "input", case / "input")
        for relative, content in changes.items():
            target = case / "input" / relative
            if content is None:
                target.unlink()
                # git keeps no empty folder: remove them here too, so a clone fails the same way
                for folder in target.parents:
                    if folder == case / "input" or any(folder.iterdir()):
                        break
                    folder.rmdir()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
        with tempfile.TemporaryDirectory() as out:
            result = subprocess.run(run[:5] + [str(case / "input")] + run[6:] + ["--output", out],
                                    capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 1, result.stderr
        (case / "expected_error.txt").write_text(result.stderr.strip().splitlines()[-1] + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
