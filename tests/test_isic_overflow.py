"""ISIC: tokens whose integer digits overflow 64 bits (50000000000000000000e-20 is 0.5).

pandas, and so the reference scorer, reads such a token as a number or as text depending on
where it sits in its column: text when pandas' integer pass reaches it (every earlier value of
the column an integer or missing), a number after a decimal (evaluation/challenges/isic/predictions.py,
_integer_passes). Seeded files with such tokens in various positions are read by our fast path,
our character-level path, pandas itself (the reference's own checks 7-9 on its table) and, where
its environment exists, the reference scorer: the same values, the same refusals."""

import io
import re
import subprocess
import warnings

import numpy as np
import pytest

from benchmarks.isic_reference import (
    REFERENCE_READER,
    REFERENCE_STEPS,
    REJECTION_CATEGORIES,
    REJECTION_IMAGES,
    reference_cli,
    rejection_truth,
    values_digest,
)
from evaluation.challenges.isic import predictions as isic_csv
from evaluation.challenges.isic import read_predictions_csv
from evaluation.errors import SubmissionError
from tests.test_isic_parity import OUR_STEPS, differences, reference_view, run_ours
from tests.test_isic_plain import both_paths

pd = pytest.importorskip("pandas")

# Integer digits beyond uint64 (the issue's three), beyond int64 only, negative beyond int64,
# padded or signed, and leading zeros that overflow nothing: numbers in [0, 1] when read as floats.
IN_RANGE = ["50000000000000000000e-20", "123456789012345678901e-21", "18446744073709551616e-20",
            "18446744073709551615e-20", "9223372036854775808e-20", "99999999999999999999.5e-21",
            "500000000000000000000.0e-21", " 50000000000000000000e-20", "+50000000000000000000e-20",
            "00000000000000000000000000005e-1"]
OUT_OF_RANGE = ["-9223372036854775809e-20", "-50000000000000000000e-20", "9999999999999999999",
                "50000000000000000000", "18446744073709551615", "-9223372036854775809.5"]
ORDINARY = ["0.25", "0.5", "0.125", "1.0", "0.0", "5e-1", "0", "1", "NA", "", "-0.5", "0.75 "]


def overflow_files(seed: int, count: int) -> list[bytes]:
    """Predictions files of the rejection suite's images whose columns hold decimals and
    overflowing tokens: in half of them each such token follows a decimal (pandas reads them all
    as numbers); in the others they sit anywhere, with integers, missing values, out-of-range
    values among them."""
    rng = np.random.default_rng(seed)
    files = []
    for _ in range(count):
        anywhere = rng.random() < 0.5
        columns = []
        for _ in REJECTION_CATEGORIES:
            column = [f"{rng.random():.3f}" for _ in REJECTION_IMAGES]
            for _ in range(int(rng.integers(0, 3))):
                pool = IN_RANGE + OUT_OF_RANGE if anywhere and rng.random() < 0.3 else IN_RANGE
                column[int(rng.integers(0 if anywhere else 1, len(column)))] = str(rng.choice(pool))
            if anywhere and rng.random() < 0.3:  # an integer, a missing value... before or among them
                column[int(rng.integers(0, len(column)))] = str(rng.choice(ORDINARY))
            columns.append(column)
        lines = [",".join(["image", *REJECTION_CATEGORIES])]
        lines += [",".join([image, *(column[row] for column in columns)]) for row, image in enumerate(REJECTION_IMAGES)]
        files.append(("\n".join(lines) + "\n").encode())
    return files


FILES = overflow_files(19, 400)


def ours(data: bytes) -> str:
    """'ok <digest of the values>' or our message."""
    try:
        _, values = read_predictions_csv(data, REJECTION_CATEGORIES, REJECTION_IMAGES)
    except SubmissionError as error:
        return str(error)
    return "ok " + values_digest(values)


def pandas_outcome(data: bytes) -> str:
    """What the reference's checks 7-9 make of pandas' table (load_csv.parse_csv): 'ok <digest>'
    or the number of the check that refuses it (REFERENCE_STEPS)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pd.read_csv(io.BytesIO(data), header=0, index_col=False)
    table = table.set_index("image")[list(REJECTION_CATEGORIES)].sort_index()
    if table.isnull().any(axis=None):
        return "7"
    if (table.dtypes != np.float64).any():
        return "8"
    if ((table < 0) | (table > 1)).any(axis=None):
        return "9"
    return "ok " + values_digest(table.to_numpy(dtype=np.float64))


def same(outcome: str, message: str) -> bool:
    if outcome.startswith("ok"):
        return message == outcome
    return re.match(OUR_STEPS[int(outcome)], message) is not None


def test_the_issue_tokens_after_a_decimal_are_numbers_and_after_an_integer_text():
    for token, value in [("50000000000000000000e-20", 0.5), ("123456789012345678901e-21", 0.12345678901234568),
                         ("18446744073709551616e-20", 0.18446744073709553)]:
        values, kinds = isic_csv.parse_numbers(["0.25", token, "1"])
        assert kinds.tolist() == [isic_csv.FLOAT, isic_csv.FLOAT, isic_csv.INTEGER] and values[1] == value
        for before in (["1"], ["NA", "0"], []):  # the integer pass reaches it
            values, kinds = isic_csv.parse_numbers([*before, token, "0.5"])
            assert kinds[len(before)] == isic_csv.TEXT, (before, token)


def test_a_decimal_column_with_them_is_scored_and_an_integer_one_refused():
    def predictions(first: str) -> bytes:
        rows = [first, "50000000000000000000e-20"] + ["0.25"] * (len(REJECTION_IMAGES) - 2)
        return ("image," + ",".join(REJECTION_CATEGORIES) + "\n" + "".join(
            f"{image}," + ",".join([value] * len(REJECTION_CATEGORIES)) + "\n"
            for image, value in zip(REJECTION_IMAGES, rows, strict=True))).encode()

    _, values = read_predictions_csv(predictions("0.25"), REJECTION_CATEGORIES, REJECTION_IMAGES)
    assert (values[1] == 0.5).all()
    with pytest.raises(SubmissionError, match=r"not all numbers: image ISIC_0000002 has '50000000000000000000e-20'"):
        read_predictions_csv(predictions("1"), REJECTION_CATEGORIES, REJECTION_IMAGES)


def test_the_generated_files_cover_both_outcomes():
    outcomes = [pandas_outcome(data) for data in FILES]
    accepted = sum(o.startswith("ok") for o in outcomes)
    text = sum(o == "8" for o in outcomes)
    assert accepted > 150 and text > 60, (accepted, text)
    # ... and accepted files with an overflowing token past a decimal: the case pandas reads as a number
    assert sum(o.startswith("ok") and b"0000000000e-2" in data for o, data in zip(outcomes, FILES, strict=True)) > 150


def test_fast_path_and_tokenizer_agree_with_pandas(monkeypatch):
    disagreements = []
    for n, data in enumerate(FILES):
        fast, slow = both_paths(monkeypatch, read_predictions_csv, data, REJECTION_CATEGORIES, REJECTION_IMAGES)
        assert fast == slow, data
        expected, got = pandas_outcome(data), ours(data)
        if not same(expected, got):
            disagreements.append((n, expected, got[:160]))
    assert disagreements == []


def test_a_column_is_typed_per_block_of_rows_as_pandas_does():
    """pandas' C reader types 2**16 rows at a time (8 columns): the token is a number when a
    decimal precedes it in its block, text when it starts a block."""
    width = len(REJECTION_CATEGORIES) + 1
    block = isic_csv.pandas_block_rows(width)
    assert block == 2**16
    for at in (block - 1, block, block + 1):
        column = ["0.5"] + ["1"] * (block + 4)
        column[at] = "50000000000000000000e-20"
        text = ",".join(f"c{i}" for i in range(width)) + "\n" + "".join(",".join([v] * width) + "\n" for v in column)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mixed types in blocks
            frame = pd.read_csv(io.StringIO(text))
        _, kinds = isic_csv.parse_numbers(column, width)
        assert (frame["c0"].dtype == object) == (isic_csv.TEXT in kinds) == (at >= block), at
    assert isic_csv.TEXT not in isic_csv.parse_numbers(["0.5"] + ["1"] * (block - 2) + ["50000000000000000000e-20"],
                                                       width)[1]


LIVE = pytest.mark.skipif(reference_cli() is None, reason="the reference environment is missing (make it with "
                                                            "scripts/isic_reference_env.sh; needs Python >= 3.13)")


@LIVE
def test_the_reference_reads_the_generated_files_as_we_do(tmp_path):
    truth = tmp_path / "truth.csv"
    truth.write_text(rejection_truth())
    paths = []
    for n, data in enumerate(FILES):
        paths.append(tmp_path / f"p{n:03d}.csv")
        paths[-1].write_bytes(data)
    python = reference_cli().parent / "python"
    lines = subprocess.run([str(python), "-c", REFERENCE_READER, str(truth), *map(str, paths)], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    assert len(lines) == len(FILES)
    disagreements = []
    for n, (line, data) in enumerate(zip(lines, FILES, strict=True)):
        if line.startswith("ok "):
            reference = line
        else:
            message = line[len("error "):]
            reference = str(next(k for k, start in enumerate(REFERENCE_STEPS) if message.startswith(start)))
        if reference != pandas_outcome(data) or not same(reference, ours(data)):
            disagreements.append((n, reference, ours(data)[:160]))
    assert disagreements == []


@LIVE
def test_the_reference_scores_them_as_we_do(evaluate, tmp_path):
    from benchmarks.isic_reference import run_reference

    accepted = [data for data in FILES if pandas_outcome(data).startswith("ok")
                and b"0000000000e-2" in data][:3]
    refused = [data for data in FILES if pandas_outcome(data) == "8"][:2]
    (tmp_path / "t.csv").write_text(rejection_truth())
    for n, data in enumerate(accepted + refused):
        (tmp_path / "p.csv").write_bytes(data)
        reference = run_reference(tmp_path / "t.csv", tmp_path / "p.csv")
        run = run_ours(evaluate, tmp_path, "isic2018", rejection_truth(), data, name=f"f{n}")
        if n < len(accepted):
            assert run.code == 0, run.stderr
            assert differences(reference_view(run.metrics), reference["output"]) == []
        else:
            assert "error" in reference and run.code == 1 and not run.wrote_metrics
            assert "not all numbers" in run.last_error_line
