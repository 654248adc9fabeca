"""The ISIC reference scorer, `isic-challenge-scoring` 5.8.0, as a command line in its own
environment (Python >= 3.13; scripts/isic_reference_env.sh makes it), and the deterministic
inputs on which ours is compared with it.

Used by scripts/isic_reference_fixtures.py (records the reference's outputs into
tests/fixtures/isic/), tests/test_isic_parity.py (compares ours with the recorded outputs, and
with the live reference when its environment is present) and benchmarks/isic_speed.py.
Nothing here is a runtime dependency: the reference runs as a separate process.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.challenges.isic import Isic2018, Isic2019
from evaluation.challenges.isic.examples import synthetic_data

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_VERSION = "5.8.0"
FIXTURES = ROOT / "tests" / "fixtures" / "isic" / "reference_outputs.json"
EDITIONS = {"isic2018": Isic2018, "isic2019": Isic2019}


def reference_cli() -> Path | None:
    """The reference's command, or None when its environment has not been made."""
    venv = Path(os.environ.get("ISIC_REFERENCE_VENV", ROOT / ".venv-isic-reference"))
    cli = venv / "bin" / "isic-challenge-scoring"
    return cli if cli.is_file() else None


def run_reference(truth: Path, predictions: Path, metric: str = "balanced_accuracy") -> dict[str, Any]:
    """{"output": its JSON} or {"error": its one-line message}; the exit code checked."""
    cli = reference_cli()
    if cli is None:
        raise RuntimeError("the reference environment is missing: run scripts/isic_reference_env.sh")
    result = subprocess.run([str(cli), "-o", "json", "classification", str(truth), str(predictions), "-m", metric],
                            capture_output=True, text=True)
    if result.returncode == 0:
        return {"output": json.loads(result.stdout)}
    at = result.stderr.find("Error: ")
    if result.returncode == 1 and at >= 0 and "Traceback" not in result.stderr:
        return {"error": " ".join(result.stderr[at + len("Error: "):].split())}
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return {"crash": lines[-1] if lines else f"exit {result.returncode}"}  # e.g. a category without positives


# ---- parity inputs --------------------------------------------------------------------------

# Each: edition, seed, images, target metric, how the weights and values are written.
PARITY_CASES: dict[str, dict[str, Any]] = {
    "2018-balanced-binary-weights": dict(edition="isic2018", seed=11, images=400, metric="balanced_accuracy",
                                         weights="binary", values="2dp", special_image=True),
    "2018-dice-full-precision": dict(edition="isic2018", seed=12, images=300, metric="dice", weights="binary",
                                     values="full"),
    "2018-auc-no-weight-columns": dict(edition="isic2018", seed=13, images=250, metric="auc", weights="none",
                                       values="1dp"),
    "2019-balanced-fractional-weights": dict(edition="isic2019", seed=21, images=500, metric="balanced_accuracy",
                                             weights="fractional", values="full"),
    "2019-auc-exponents": dict(edition="isic2019", seed=22, images=400, metric="auc", weights="binary",
                               values="exponent"),
    "2019-ap-validation-gap": dict(edition="isic2019", seed=23, images=350, metric="ap", weights="validation-gap",
                                   values="2dp"),
    "2019-dice-ties": dict(edition="isic2019", seed=24, images=300, metric="dice", weights="fractional",
                           values="1dp"),
    "2019-balanced-17-digits": dict(edition="isic2019", seed=25, images=600, metric="balanced_accuracy",
                                    weights="binary", values="digits17"),
    # The reference crashes here (UNK has no positive, as in a training split); ours scores the rest.
    "2019-no-unk-positives": dict(edition="isic2019", seed=26, images=300, metric="balanced_accuracy",
                                  weights="binary", values="2dp", no_positive="UNK"),
}


def _format(value: float, style: str, rng: np.random.Generator) -> str:
    if style == "full":
        return repr(float(value))
    if style == "1dp":
        return f"{value:.1f}"
    if style == "exponent":
        return f"{value:.6e}" if rng.random() < 0.5 else repr(float(value))
    if style == "digits17":
        return f"{value:.17f}" if rng.random() < 0.7 else f"{value:.19f}"
    return f"{value:.2f}" if value not in (0.0, 1.0) else f"{value:.1f}"


def parity_inputs(case: dict[str, Any]) -> tuple[str, str]:
    """(truth CSV, predictions CSV) texts of a parity case, the same on every machine."""
    categories = EDITIONS[case["edition"]].categories
    data = synthetic_data(categories, case["seed"], case["images"])
    rng = np.random.default_rng(case["seed"] + 1000)
    n, k = data["truth"].shape
    predictions = data["predictions"].copy()
    if case["values"] in ("full", "exponent", "digits17"):
        noise = rng.random((n, k)) ** 3 * 0.05
        keep = rng.random((n, k)) < 0.3  # some ties and exact 0.5 values stay
        predictions = np.where(keep, predictions, np.clip(predictions + noise, 0, 1))
    if case["values"] == "1dp":
        predictions = np.round(predictions, 1)
    ids = list(data["ids"])
    if case.get("no_positive"):
        gone, nevus = categories.index(case["no_positive"]), categories.index("NV")
        data["truth"][data["truth"][:, gone] == 1, nevus] = 1.0
        data["truth"][:, gone] = 0.0
    if case.get("special_image"):
        ids[0] = "ISIC_0035068"  # the reference zeroes its weights
    order = sorted(range(n), key=ids.__getitem__)  # the reference pairs weights by position: sorted truth
    weights = case["weights"]
    score_weight, validation_weight = data["score_weight"], data["validation_weight"]
    if weights == "fractional":
        score_weight = np.round(rng.uniform(0, 2, n), 3) * (rng.random(n) < 0.9)
        validation_weight = np.round(rng.uniform(0, 1, n), 4) * (rng.random(n) < 0.3)
    if weights == "validation-gap":
        rare = categories.index("DF")
        validation_weight = np.where(data["truth"][:, rare] == 1, 0.0, validation_weight)
    header = ["image", *categories] + (["score_weight", "validation_weight"] if weights != "none" else [])
    truth_lines = [",".join(header)]
    for i in order:
        row = [ids[i], *(f"{v:.1f}" for v in data["truth"][i])]
        if weights != "none":
            row += [repr(float(score_weight[i])), repr(float(validation_weight[i]))]
        truth_lines.append(",".join(row))
    columns = list(range(k))
    rng.shuffle(columns)  # column order is free
    prediction_lines = [",".join(["image", *(categories[c] for c in columns)])]
    for i in rng.permutation(n):  # rows in any order, some ids with .jpg
        image = ids[i] + (".jpg" if rng.random() < 0.2 else "")
        prediction_lines.append(",".join([image, *(_format(predictions[i, c], case["values"], rng) for c in columns)]))
    return "\n".join(truth_lines) + "\n", "\n".join(prediction_lines) + "\n"


def inputs_digest(truth: str, predictions: str) -> str:
    return hashlib.sha256((truth + "\x00" + predictions).encode()).hexdigest()


# ---- rejection inputs -----------------------------------------------------------------------

REJECTION_CATEGORIES = Isic2018.categories
REJECTION_IMAGES = tuple(f"ISIC_{n:07d}" for n in range(1, 9))  # every category has a positive


def rejection_truth() -> str:
    lines = [",".join(["image", *REJECTION_CATEGORIES])]
    k = len(REJECTION_CATEGORIES)
    for n, image in enumerate(REJECTION_IMAGES):
        lines.append(",".join([image, *("1.0" if c == n % k else "0.0" for c in range(k))]))
    return "\n".join(lines) + "\n"


def _rows(values=None, ids=REJECTION_IMAGES, header=None, sep=",", end="\n") -> str:
    header = header or ["image", *REJECTION_CATEGORIES]
    lines = [sep.join(header)]
    for n, image in enumerate(ids):
        row = (values or {}).get(n, ["0.1", "0.2", "0.3", "0.05", "0.15", "0.1", "0.1"])
        lines.append(sep.join([image, *row]))
    return end.join(lines) + end


_OK = ["0.1", "0.2", "0.3", "0.05", "0.15", "0.1", "0.1"]

# name -> bytes of a predictions file (the truth is rejection_truth()); the first ones are
# refused, the "accepted-*" ones are accepted by the reference (so must be by ours).
REJECTION_CASES: dict[str, bytes] = {
    "no-newline": _rows().replace("\n", " ").encode(),
    "one-newline": _rows().rstrip("\n").replace("\n", " ", len(REJECTION_IMAGES) - 1).encode(),
    "not-utf8": _rows(values={1: ["0.1", "0.2", "0.3", "0.05", "0.15", "0.1", "0.1"]}).replace(
        "ISIC_0000002", "ISIC_000000\xe9").encode("latin-1"),
    "utf16": _rows().encode("utf-16"),
    "unclosed-quote": _rows().replace("ISIC_0000004", '"ISIC_0000004').encode(),
    "row-too-long": _rows(values={2: _OK + ["0.1", "0.2"]}).encode(),
    "no-header-only-blank-lines": b"\n\n\n\n",
    "no-image-column": _rows(header=["img", *REJECTION_CATEGORIES]).encode(),
    "semicolons": _rows(sep=";").encode(),
    "duplicate-rows": (_rows() + "ISIC_0000002,0.1,0.2,0.3,0.05,0.15,0.1,0.1\n").encode(),
    "duplicate-after-jpg": (_rows() + "ISIC_0000003.JPG,0.1,0.2,0.3,0.05,0.15,0.1,0.1\n").encode(),
    "missing-column": _rows(header=["image", *REJECTION_CATEGORIES[:-1], "VASCX"]).encode(),
    "extra-column": _rows(header=["image", *REJECTION_CATEGORIES, "extra"], values={
        n: _OK + ["0.5"] for n in range(8)}).encode(),
    "duplicate-column": _rows(header=["image", *REJECTION_CATEGORIES, "MEL"], values={
        n: _OK + ["0.5"] for n in range(8)}).encode(),
    "trailing-comma-everywhere": _rows(header=["image", *REJECTION_CATEGORIES, ""], values={
        n: _OK + [""] for n in range(8)}).encode(),
    "lesion-id-and-image": _rows(header=["image", "lesion_id", *REJECTION_CATEGORIES], values={
        n: ["L1"] + _OK for n in range(8)}).encode(),
    "empty-value": _rows(values={1: ["0.1", "", "0.3", "0.05", "0.15", "0.1", "0.1"]}).encode(),
    "na-token": _rows(values={2: ["0.1", "0.2", "NA", "0.05", "0.15", "0.1", "0.1"]}).encode(),
    "short-row": _rows(values={0: _OK[:-2]}).encode(),
    "integer-column": _rows(values={n: ["1" if n == 0 else "0", *_OK[1:]] for n in range(8)}).encode(),
    "quoted-integers": _rows(values={n: ['"1"' if n == 0 else '"0"', *_OK[1:]] for n in range(8)}).encode(),
    "text-value": _rows(values={3: ["0.1", "high", "0.3", "0.05", "0.15", "0.1", "0.1"]}).encode(),
    "bool-column": _rows(values={n: ["True" if n == 0 else "False", *_OK[1:]] for n in range(8)}).encode(),
    "space-only-value": _rows(values={3: ["0.1", " ", "0.3", "0.05", "0.15", "0.1", "0.1"]}).encode(),
    "overflowing-exponent": _rows(values={3: ["0.1", "1e400", "0.3", "0.05", "0.15", "0.1", "0.1"]}).encode(),
    "above-one": _rows(values={1: ["1.5", *_OK[1:]]}).encode(),
    "negative": _rows(values={2: ["-0.1", *_OK[1:]]}).encode(),
    "infinity": _rows(values={2: ["inf", *_OK[1:]]}).encode(),
    "missing-image": "".join(_rows().splitlines(keepends=True)[:-1]).encode(),
    "extra-image": (_rows() + "ISIC_9999999,0.1,0.2,0.3,0.05,0.15,0.1,0.1\n").encode(),
    "empty-id-extra": (_rows() + ",0.1,0.2,0.3,0.05,0.15,0.1,0.1\n").encode(),
    "header-only": _rows(ids=()).encode() + b"\n",
    "accepted-crlf-bom-quotes": ("\ufeff" + _rows(end="\r\n").replace("ISIC_0000001", '"ISIC_0000001"')).encode(),
    "accepted-cr-only": _rows(end="\r").encode(),
    "accepted-blank-and-space-lines": _rows().replace("\nISIC_0000003", "\n\n   \nISIC_0000003").encode(),
    "accepted-first-row-longer": _rows(values={0: _OK + ["9"], 1: _OK + ["8"]}).encode(),
    "accepted-varied-values": _rows(values={n: [f"{(n * 7 + c) % 10 / 10 + 0.05:.2f}" for c in range(7)]
                                            for n in range(8)}).encode(),
    "accepted-lesion-id": _rows(header=["lesion_id", *REJECTION_CATEGORIES]).encode(),
    "accepted-jpg-and-spaces": _rows(values={0: [" 0.1 ", *_OK[1:]]}).replace(
        "ISIC_0000004", "ISIC_0000004.Jpg").encode(),
    "accepted-ties-and-exact-halves": _rows(values={n: ["0.5", "0.5", *_OK[2:]] if n % 2 else ["0.4", "0.4", "0.1",
                                                                                            "0.5", "0.0", "0.0", "1.0"]
                                                    for n in range(8)}).encode(),
    "accepted-nul-cut": _rows(values={0: ["0.1\x00junk", *_OK[1:]]}).encode(),
    "accepted-mixed-int-and-float": _rows(values={n: ["1" if n == 0 else "0.0", *_OK[1:]] for n in range(8)}).encode(),
}


# ---- fuzzed submissions ---------------------------------------------------------------------

# The reference's checks in order, as its messages start; None: accepted.
REFERENCE_STEPS = ("No newlines detected", "Could not parse CSV: could not decode", "Could not parse CSV",
                   "Missing column in CSV", "Duplicate image rows", "Missing columns in CSV", "Extra columns in CSV",
                   "Missing value(s)", "CSV contains non-floating-point", "Values in CSV are outside",
                   "Missing images in CSV", "Extra images in CSV")

_FUZZ_PIECES = [",", "\n", "\r", '"', " ", "\t", "0", "1", ".", "e", "-", "+", "x", "\x00", "NA", "", ".jpg",
                "\ufeff", ";", "inf", "\xe9"]


def fuzzed_submissions(seed: int, count: int) -> list[bytes]:
    """Accepted rejection-suite files with 1 to 8 random edits each (characters inserted or
    deleted, lines repeated): a cheap search for files the two readers would treat apart."""
    rng = random.Random(seed)
    bases = [data for name, data in REJECTION_CASES.items() if name.startswith("accepted")]
    files = []
    for _ in range(count):
        data = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 8)):
            action, at = rng.random(), rng.randrange(len(data) + 1)
            if action < 0.5:
                data[at:at] = rng.choice(_FUZZ_PIECES).encode()
            elif action < 0.8 and len(data) > 1:
                del data[at:at + rng.randint(1, 3)]
            else:
                lines = bytes(data).split(b"\n")
                lines.insert(rng.randrange(len(lines)), lines[rng.randrange(len(lines))])
                data = bytearray(b"\n".join(lines))
        files.append(bytes(data))
    return files


def values_digest(values) -> str:
    """Digest of accepted confidences (rows sorted by image, columns in category order)."""
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()).hexdigest()[:16]


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
