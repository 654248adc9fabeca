"""The ISIC CSV fast path (evaluation/challenges/isic/predictions.py: plain_table, plain_numbers) against pandas'
own reader and against our character-level path (tokenize, parse_numbers): a plain file is split
as the tokenizer splits it, its numbers are pandas' bit for bit, and every file, plain or not,
is accepted with the same bits or refused with the same message whichever path reads it."""

import io

import numpy as np
import pytest

from benchmarks.isic_reference import (
    REJECTION_CASES,
    REJECTION_CATEGORIES,
    REJECTION_IMAGES,
    fuzzed_submissions,
    parity_inputs,
)
from evaluation.challenges.isic import predictions as isic_csv
from evaluation.challenges.isic import read_predictions_csv, read_truth_csv
from evaluation.errors import SetupError, SubmissionError
from evaluation.reading.files import Origin


def random_tokens(rng, count):
    digits = lambda k: "".join(rng.choice(list("0123456789"), int(k)))  # noqa: E731
    forms = [
        lambda: "0." + digits(rng.integers(1, 25)),
        lambda: repr(float(rng.random() ** 5)),
        lambda: repr(float(rng.random() ** 60)),  # e-notation
        lambda: f"{rng.random():.19f}",
        lambda: digits(rng.integers(1, 4)) + "e-" + digits(rng.integers(1, 3)),
        lambda: (digits(rng.integers(1, 4)) + "." + digits(rng.integers(0, 4)) + str(rng.choice(["e", "E"]))
                 + str(rng.choice(["", "+", "-"])) + digits(rng.integers(1, 4))),
        lambda: "0." + "0" * int(rng.integers(10, 20)) + digits(rng.integers(1, 10)),
        lambda: digits(rng.integers(1, 24)),
        lambda: digits(rng.integers(1, 22)) + "." + digits(rng.integers(0, 22)),
        lambda: "." + digits(rng.integers(1, 24)),
        lambda: str(rng.choice(["1", "0", "00", "5.", "1e308", "1e-308", "9e-308", "2e308", "1e-400", "4.9e-324",
                                "1.5e+03", "12345678901234567890", "123456789012345678901.5", "1e0000000001"])),
    ]
    return [forms[int(rng.integers(0, len(forms)))]() for _ in range(count)]


@pytest.mark.parametrize("seed", range(3))
def test_plain_numbers_are_pandas_numbers_bit_for_bit(seed):
    pd = pytest.importorskip("pandas")
    tokens = random_tokens(np.random.default_rng(seed), 3000)
    # One column per token: pandas infers each column's type on its own.
    text = ",".join(f"c{i}" for i in range(len(tokens))) + "\n" + ",".join(tokens) + "\n"
    frame = pd.read_csv(io.StringIO(text), header=0, index_col=False)
    table = isic_csv.plain_table(text)
    data = np.frombuffer(table.data, dtype=np.uint8)
    handled, values, is_integer = isic_csv.plain_numbers(data, table.starts[0], table.ends[0])
    assert handled.mean() > 0.8  # the fast path is what this tests
    for i in np.flatnonzero(handled):
        column = frame[f"c{i}"]
        assert column.dtype.kind in "iuf", tokens[i]
        assert is_integer[i] == (column.dtype.kind in "iu"), tokens[i]
        if column.dtype.kind == "f":  # an integer column is refused (predictions) or small (truth)
            assert values[i] == column.iloc[0], tokens[i]
    # What the fast path leaves alone, the character-level path reads (pandas' reading of those
    # is tested in test_isic.py): on the rest they agree.
    slow_values, kinds = isic_csv.parse_numbers(tokens)
    assert np.array_equal(values[handled], slow_values[handled])
    assert np.array_equal(is_integer[handled], kinds[handled] == isic_csv.INTEGER)


@pytest.mark.parametrize("seed", range(2))
def test_short_repeated_tokens_are_converted_once_with_the_same_bits(seed):
    """Tokens of at most 8 bytes, many times each (a ground truth's 0.0/1.0 and weights): each
    distinct one is converted once, with the values and refusals of a token-by-token reading."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    fixed = {"0.0", "1.0", "1", "0", "0.5", "-1", "1e5", "1e+", "x", "1e-400", "2e308", "12345678"}
    distinct = sorted({token[:8] for token in random_tokens(rng, (4, 60)[seed])} | fixed)  # at most 16; more
    tokens = [distinct[i] for i in rng.integers(0, len(distinct), 3000)]
    text = ",".join(f"c{i}" for i in range(len(tokens))) + "\n" + ",".join(tokens) + "\n"
    table = isic_csv.plain_table(text)
    handled, values, is_integer = isic_csv.plain_numbers(np.frombuffer(table.data, dtype=np.uint8),
                                                         table.starts[0], table.ends[0])
    slow_values, kinds = isic_csv.parse_numbers(tokens)
    assert handled.mean() > 0.5
    assert not (handled & ((kinds == isic_csv.TEXT) | (kinds == isic_csv.NA))).any()
    assert np.array_equal(values[handled], slow_values[handled])
    assert np.array_equal(is_integer[handled], kinds[handled] == isic_csv.INTEGER)
    frame = pd.read_csv(io.StringIO(",".join(distinct) + "\n" + ",".join(distinct) + "\n"), header=None,
                        index_col=False)
    for token, (column, _) in zip(distinct, frame.items(), strict=True):  # one column per distinct token
        if frame[column].dtype.kind == "f":
            at = tokens.index(token) if token in tokens else None
            if at is not None and handled[at]:
                assert values[at] == frame[column].iloc[0], token


def test_tokens_the_fast_path_leaves_to_the_slow_one():
    tokens = [" 0.5", "0.5 ", "-0.5", "+0.5", "0.5.1", "1e", "1e+", "e5", "1e5e5", "1..2", "inf", "NaN", "NA", "",
              "0x1", "1_0", "True", "1e-400", "2e308", "1" * 20, "1e1234567890", "0.5\t", "١"]
    text = ",".join(f"c{i}" for i in range(len(tokens))) + "\n" + ",".join(tokens) + "\n"
    table = isic_csv.plain_table(text)
    handled, _, _ = isic_csv.plain_numbers(np.frombuffer(table.data, dtype=np.uint8), table.starts[0],
                                           table.ends[0])
    assert not handled.any()


PLAIN = "image,A,B\nx1,0.5,0.25\nx2,1,0e0\n"


@pytest.mark.parametrize("text", [
    PLAIN,
    PLAIN.rstrip("\n"),  # no final newline
    "\ufeff" + PLAIN,  # a BOM, dropped as the tokenizer drops it
    "image,A,B\n,,\n é ,\t,x\n",  # empty fields, spaces, tabs, non-ASCII
])
def test_a_plain_file_is_split_as_the_tokenizer_splits_it(text):
    plain, raw = isic_csv.plain_table(text), isic_csv.tokenize(text)
    assert plain is not None
    assert plain.header == raw.header
    for at in range(len(raw.header)):
        assert plain.column(at) == raw.column(at)


@pytest.mark.parametrize("text", [
    'image,A,B\n"x1",0.5,0.25\n',  # quotes
    "image,A,B\nx1,0.5\x00,0.25\n",  # a NUL
    "image,A,B\n\nx1,0.5,0.25\n",  # a blank line
    "\nimage,A,B\nx1,0.5,0.25\n",  # ... first
    "image,A,B\n   \nx1,0.5,0.25\n",  # a line of spaces
    "image,A,B\nx1,0.5\n",  # a short row
    "image,A,B\nx1,0.5,0.25,9\n",  # a long row
    "image\nx1\n",  # one column
])
def test_anything_else_goes_to_the_tokenizer(text):
    assert isic_csv.plain_table(text) is None


def outcome(read, *args):
    try:
        ids, values = read(*args)
    except (SubmissionError, SetupError) as error:
        return "refused: " + str(error)
    values = np.asarray(values)
    return list(ids), values.tobytes(), values.shape


def both_paths(monkeypatch, read, *args):
    """The reader's outcome with the fast path, then with it turned off."""
    fast = outcome(read, *args)
    with monkeypatch.context() as patch:
        patch.setattr(isic_csv, "plain_table", lambda text: None)
        slow = outcome(read, *args)
    return fast, slow


def edge_value_files(rng, count):
    """Plain predictions files of the rejection suite's images whose values are random tokens:
    integers, NA, text, out of range, 17+ digits, exponents, ids with .jpg or duplicated."""
    files = []
    pool = random_tokens(rng, 400) + ["NA", "", "1", "0", "-0.0", "0.5 ", "high", "inf", "1.0000000000000002"]
    for _ in range(count):
        lines = [",".join(["image", *REJECTION_CATEGORIES])]
        for image in REJECTION_IMAGES:
            if rng.random() < 0.05:
                image += ".JPG"
            tokens = [str(rng.choice(pool)) if rng.random() < 0.03 else f"{rng.random():.17f}"
                      for _ in REJECTION_CATEGORIES]
            lines.append(",".join([image, *tokens]))
        if rng.random() < 0.1:
            lines.append(lines[1])
        files.append(("\n".join(lines) + "\n").encode())
    return files


def test_fast_and_character_level_paths_agree_on_every_file(monkeypatch):
    files = list(REJECTION_CASES.values()) + fuzzed_submissions(91, 300) + edge_value_files(
        np.random.default_rng(5), 300)
    taken = 0
    for data in files:
        fast, slow = both_paths(monkeypatch, read_predictions_csv, data, REJECTION_CATEGORIES, REJECTION_IMAGES)
        assert fast == slow, data[:300]
        try:
            taken += isic_csv.plain_table(isic_csv.decode(data)) is not None
        except UnicodeDecodeError:
            pass
    assert taken > len(files) // 3  # the fast path really read many of them
    accepted = sum(not isinstance(o, str) for o in
                   (outcome(read_predictions_csv, d, REJECTION_CATEGORIES, REJECTION_IMAGES) for d in files))
    assert accepted > 50


@pytest.mark.parametrize("values", ["full", "exponent", "digits17", "1dp"])
def test_full_size_files_take_the_fast_path_to_the_same_bits(monkeypatch, tmp_path, values):
    case = dict(edition="isic2019", seed=3, images=3000, metric="balanced_accuracy", weights="fractional",
                values=values)
    truth_text, predictions = parity_inputs(case)
    (tmp_path / "truth.csv").write_text(truth_text)
    origin = Origin.ground_truth(tmp_path)

    def read_truth(path):
        truth = read_truth_csv(origin, path)
        return truth.ids, np.column_stack([truth.values, truth.score_weight, truth.validation_weight])

    assert isic_csv.plain_table(truth_text) is not None and isic_csv.plain_table(predictions) is not None
    fast, slow = both_paths(monkeypatch, read_truth, tmp_path / "truth.csv")
    assert fast == slow and not isinstance(fast, str)
    truth = read_truth_csv(origin, tmp_path / "truth.csv")
    fast, slow = both_paths(monkeypatch, read_predictions_csv, predictions.encode(), truth.categories, truth.ids)
    assert fast == slow and not isinstance(fast, str)


@pytest.mark.parametrize("body, message", [
    ("x1,1,0\nx2,0,1\n", None),  # integers: fine in a truth
    ("x1,1.0,0\nx2,0,NA\n", "is not a finite number"),
    ("x1,1.0,0\nx2,0,inf\n", "is not a finite number"),
    ("x1,1.0,0\nx2,0,2\n", "a value other than 0 and 1"),
    ("x1,1.0,0\nx1,0,1\n", "more than once"),
    ("x1,1.0,0\nNA,0,1\n", "has no image id"),
])
def test_truth_files_read_alike_on_both_paths(monkeypatch, tmp_path, body, message):
    (tmp_path / "truth.csv").write_text("image,A,B\n" + body)
    origin = Origin.ground_truth(tmp_path)

    def read(path):
        truth = read_truth_csv(origin, path)
        return truth.ids, truth.values

    fast, slow = both_paths(monkeypatch, read, tmp_path / "truth.csv")
    assert fast == slow
    assert (message is None) == (not isinstance(fast, str))
    if message:
        assert message in fast
