"""Reading and checking what an ISIC submission sends: the predictions CSV (read without pandas,
accepting and rejecting what the reference does) or an algorithm job's JSON of confidences.

The reference scorer (`isic-challenge-scoring` 5.8.0) reads CSVs with pandas 2.3 `read_csv`
(C parser, default options) and then checks the table. What it accepts depends on pandas'
tokenizer and type inference, so this module reproduces the parts that matter on real files:

- the text: UTF-8 only, universal newlines (the reference opens the file in text mode), a BOM
  ignored, lines of only spaces/tabs skipped, RFC 4180 quoting, a field cut at a NUL character;
- the row lengths: a row shorter than the header has missing values; a row longer than the
  header is cut to it when it is no longer than the first data row, else the file is unreadable;
- the numbers: pandas' default float converter (`precise_xstrtod`) is NOT correctly rounded
  beyond 15 significant digits (it keeps 17 digits, counting leading zeros, then scales by a
  power of ten), so Python's float() would give a different value for a typical 17-digit
  `repr`; `parse_numbers` reproduces it exactly (vectorised for plain decimals);
- the column types: a column of only integer literals is an integer column (rejected: "not
  floating point"), one with any non-number is text (rejected), a missing value is one of
  pandas' default NA tokens or an empty field.

Two paths, one outcome: a plain file (no quotes, NULs or blank lines, every line as long as the
header: what real submissions are) is split in its bytes and its numbers converted at once
(`plain_table`, `plain_numbers`, whole-array NumPy); anything else, or a plain file with a field
that is not a plain number, goes through `tokenize` and `parse_numbers`, character by character,
which say what is wrong. tests/test_isic_plain.py checks that both give the same bits and the
same refusals.

The bytes come through the reading layer (`Origin.read_bytes`, bounded by the test set's size,
evaluation/challenges/isic/__init__.py); this module turns them into a table, and the submission's
table into checked confidences (`read_predictions_csv`, the reference's checks in its order).

Decisions where the reference is not followed (documented in docs/challenges/isic.md): image ids
are compared as written (pandas would turn a column of numeric ids into numbers), and an id that
is empty or an NA token ("NA", "null"...) counts as an image without id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.errors import SubmissionError, id_list
from evaluation.framework import log
from evaluation.platform.locations import list_submission_files
from evaluation.reading.files import Origin, shown_path
from evaluation.reading.values import SHOWN_LENGTH, finite_number, json_type, shown

INDEX_COLUMNS = ("image", "lesion_id")  # the reference's index column, the first one present
WEIGHT_COLUMNS = ("score_weight", "validation_weight")  # optional, default 1.0
PREDICTIONS_FILE = "predictions.csv"
PREDICTIONS_WHAT = "The predictions CSV"  # how messages about the file itself name it
# The predictions CSV is bounded by the test set before it is read: reading.tables' allowance per
# row (1 kB; a row of 9 full-precision confidences is ~200 bytes) for every test image and a few
# more rows (blank lines, a repeated header), plus its 1 MB for the rest.
SPARE_ROWS = 100

# pandas' default NA tokens (read_csv na_values with keep_default_na=True).
NA_TOKENS = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})
_INF_WORDS = {"inf": np.inf, "+inf": np.inf, "-inf": -np.inf,
              "infinity": np.inf, "+infinity": np.inf, "-infinity": -np.inf}
_C_SPACE = " \t\n\v\f\r"  # isspace in the C locale
_MAX_DIGITS = 17  # digits pandas' converter keeps
_POWERS_OF_TEN = np.array([float(f"1e{k}") for k in range(309)])  # as the C literals 1e0..1e308
_WIDTH = 40  # tokens up to this length go through the vectorised converter

_INT_POWERS_OF_TEN = 10 ** np.arange(19, dtype=np.int64)
_BYTE_LANES = np.array([(1 << 8 * k) - 1 for k in range(8)] + [2**64 - 1], dtype=np.uint64)  # k low bytes set

# Token kinds.
NA, INTEGER, FLOAT, TEXT = 0, 1, 2, 3

_JPG_SUFFIX = re.compile(r"\.jpg$", re.IGNORECASE)  # the reference strips it from image ids
_JPG_SUFFIXES = re.compile(r"\.jpg$", re.IGNORECASE | re.MULTILINE)  # ... from each line
_INT_TOKEN = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+[ \t\n\v\f\r]*\Z")
_FLOAT_TOKEN = re.compile(
    r"[ \t\n\v\f\r]*(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:[eE](?P<esign>[+-]?)(?P<exp>[0-9]{1,17}))?[ \t\n\v\f\r]*\Z")


class CsvError(ValueError):
    """The file cannot be read as the reference reads it; the message says why."""


# ---- numbers --------------------------------------------------------------------------------


def _scale(number: float, exponent: int) -> float | None:
    """pandas' scaling step; None when out of range (pandas then keeps the text)."""
    if exponent > 308:
        return None
    if exponent > 0:
        with np.errstate(over="ignore"):
            number = np.float64(number) * _POWERS_OF_TEN[exponent]
    elif exponent < -308:
        number = 0.0 if exponent < -616 else number / _POWERS_OF_TEN[-308 - exponent] / _POWERS_OF_TEN[308]
    else:
        number /= _POWERS_OF_TEN[-exponent]
    number = float(number)
    return None if number in (np.inf, -np.inf) else number


def _wrap_int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31  # the exponent accumulates in a C int


def pandas_float(token: str) -> float | None:
    """One token through pandas' default float converter, or None if pandas would not read it
    as a float (then the column is text)."""
    match = _FLOAT_TOKEN.match(token)
    if match is None or not (match["int"] or match["frac"]):
        return _INF_WORDS.get(token.lower())
    integer, fraction = match["int"], match["frac"] or ""
    number, exponent = 0.0, 0
    if len(integer) >= _MAX_DIGITS:
        digits, exponent = integer[:_MAX_DIGITS], len(integer) - _MAX_DIGITS
    else:
        kept = fraction[:_MAX_DIGITS - len(integer)]
        digits, exponent = integer + kept, -len(kept)
    for digit in digits:
        number = number * 10.0 + (ord(digit) - 48)
    if match["sign"] == "-":
        number = -number
    if match["exp"] is not None:
        value = 0
        for digit in match["exp"]:
            value = _wrap_int32(value * 10 + ord(digit) - 48)
        exponent = _wrap_int32(exponent - value if match["esign"] == "-" else exponent + value)
    return _scale(number, exponent)


def _vectorised_plain(tokens: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(handled, values, is_integer) for tokens of the form [+-]digits[.digits][(e|E)[+-]digits]
    (at most _WIDTH characters, at most 9 exponent digits), converted exactly as pandas_float
    does, one character position at a time over all tokens; the rest is left to pandas_float."""
    n = len(tokens)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=n)
    width = int(min(_WIDTH, lengths.max(initial=0)))
    handled = (lengths > 0) & (lengths <= width)
    values = np.full(n, np.nan)
    if width == 0:
        return handled, values, np.zeros(n, dtype=bool)
    try:
        codes = np.array(tokens, dtype=f"S{width}").view(np.uint8).reshape(n, width)
    except UnicodeEncodeError:  # non-ASCII text: never a number here
        wide = np.array(tokens, dtype=f"<U{width}").view(np.uint32).reshape(n, width)
        codes = np.minimum(wide, 255).astype(np.uint8)
    columns = np.ascontiguousarray(codes.T)
    number = np.zeros(n)
    used = np.zeros(n, dtype=np.int64)  # digits kept (at most 17)
    decimals = np.zeros(n, dtype=np.int64)  # kept digits after the point
    extra = np.zeros(n, dtype=np.int64)  # integer digits beyond 17: each raises the exponent
    mantissa_digits = np.zeros(n, dtype=np.int64)
    exp_value = np.zeros(n, dtype=np.int64)
    exp_digits = np.zeros(n, dtype=np.int64)
    negative = np.zeros(n, dtype=bool)
    exp_negative = np.zeros(n, dtype=bool)
    seen_dot = np.zeros(n, dtype=bool)
    state = np.zeros(n, dtype=np.int8)  # 0 mantissa, 1 just after e, 2 after the exponent's sign, 3 exponent digits
    for j in range(width):
        c = columns[j]
        active = j < lengths
        d = c - np.uint8(48)
        digit = (d < 10) & active
        is_sign = ((c == 43) | (c == 45)) & active
        in_mantissa = state == 0
        take = digit & in_mantissa
        keep = take & (used < _MAX_DIGITS)
        if keep.any():
            number = np.where(keep, number * 10.0 + d, number)
        used += keep
        decimals += keep & seen_dot
        extra += take & ~keep & ~seen_dot
        mantissa_digits += take
        dot = (c == 46) & active & in_mantissa
        handled &= ~(dot & seen_dot)
        seen_dot |= dot
        e = ((c == 101) | (c == 69)) & active & in_mantissa
        if j == 0:
            negative = c == 45
            sign_ok = is_sign
        else:
            sign_ok = np.zeros(n, dtype=bool)
        exp_sign = is_sign & (state == 1)
        exp_negative |= exp_sign & (c == 45)
        exp_digit = digit & (state >= 1)
        handled &= ~active | take | dot | e | sign_ok | exp_sign | exp_digit
        if exp_digit.any():
            exp_value = np.where(exp_digit, exp_value * 10 + d, exp_value)
            exp_digits += exp_digit
        if e.any() or exp_sign.any() or exp_digit.any():
            state = np.where(e, 1, np.where(exp_sign, 2, np.where(exp_digit, 3, state))).astype(np.int8)
    handled &= (mantissa_digits > 0) & ((state == 0) | (state == 3)) & (exp_digits <= 9)
    number = np.where(negative, -number, number)
    exponent = extra - decimals + np.where(exp_negative, -exp_value, exp_value)
    scaled = handled & (exponent >= -308) & (exponent <= 308)
    up = scaled & (exponent > 0)
    down = scaled & (exponent <= 0)
    with np.errstate(over="ignore"):
        values[up] = number[up] * _POWERS_OF_TEN[exponent[up]]
    values[down] = number[down] / _POWERS_OF_TEN[-exponent[down]]
    # Beyond 1e308 or below 1e-308, or overflowing to infinity: the slow way.
    handled &= scaled & np.isfinite(values)
    is_integer = handled & (state == 0) & ~seen_dot
    return handled, values, is_integer


def parse_numbers(tokens: list[str], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(values, kinds) of a column's tokens, in row order, as pandas types the column: kinds NA,
    INTEGER (an integer literal), FLOAT (another number pandas reads) or TEXT (a token that is
    no number, or one that pandas' integer passes make the column text with: see
    _integer_passes); values NaN unless a number. `width`, the table's number of columns, sets
    pandas' blocks of rows (pandas_block_rows); None: the column is one block."""
    n = len(tokens)
    kinds = np.full(n, TEXT, dtype=np.int8)
    values = np.full(n, np.nan)
    if n == 0:
        return values, kinds
    handled, fast_values, fast_integer = _vectorised_plain(tokens)
    values[handled] = fast_values[handled]
    kinds[handled] = np.where(fast_integer[handled], INTEGER, FLOAT)
    for i in np.flatnonzero(~handled).tolist():
        token = tokens[i]
        if token in NA_TOKENS:
            kinds[i] = NA
            continue
        value = pandas_float(token)
        if value is not None:
            values[i] = value
            kinds[i] = INTEGER if _INT_TOKEN.match(token) else FLOAT
    block = pandas_block_rows(width) if width else n
    for start in range(0, n, block):
        _integer_passes(tokens, values, kinds, start, min(n, start + block))
    return values, kinds


# ---- pandas' integer passes -----------------------------------------------------------------
#
# pandas infers a column's type by trying int64, then float64, ... on the column's tokens in row
# order, NA tokens skipped. The int64 pass stops at the first token that is not an int64 literal:
# when that token is merely not an integer (0.5, 1e-3, text), the float pass decides (what
# parse_numbers' kinds say). When its leading digits overflow int64 (checked while reading the
# digits, before anything after them: 50000000000000000000e-20 overflows), pandas tries uint64
# over the whole column, and that pass ends the column as text when a token's leading digits
# overflow uint64 (2**64 or more) or, having read to the end, when it saw a negative token or
# mixed a value above int64 with NA tokens (then even the NA tokens stay text). So
# 50000000000000000000e-20 is 0.5 after a row of 0.5, and text after a row of 1 or as the
# first value. pandas infers types per block of rows (pandas_block_rows), each on its own.
# tests/test_isic_overflow.py checks this on generated files against pandas and, where its
# environment exists, against the reference scorer.

_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
_LEADING_DIGITS = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]*)(.*)\Z", re.DOTALL)
_OK, _OVERFLOW, _INVALID, _NEGATIVE, _ABOVE_INT64 = range(5)


def pandas_block_rows(width: int) -> int:
    """The rows pandas' C reader (low_memory, the default) types at a time for a table of this
    many columns: the largest power of two below 2**20 / width, at least 1."""
    rows, target = 1, 2**20 // max(width, 1)
    while rows * 2 < target:
        rows *= 2
    return rows


def _int64_literal(token: str) -> int:
    """pandas' str_to_int64 on a token: _OK, _OVERFLOW (its leading digits, whatever follows)
    or _INVALID."""
    sign, digits, rest = _LEADING_DIGITS.match(token).groups()
    if not digits:
        return _INVALID
    if not _INT64_MIN <= int(sign + digits) <= _INT64_MAX:
        return _OVERFLOW
    return _INVALID if rest.strip(_C_SPACE) else _OK


def _uint64_literal(token: str) -> int:
    """pandas' str_to_uint64: _NEGATIVE for any token starting with '-' (read no further),
    else _OVERFLOW, _INVALID, _ABOVE_INT64 or _OK."""
    sign, digits, rest = _LEADING_DIGITS.match(token).groups()
    if sign == "-":
        return _NEGATIVE
    if not digits:
        return _INVALID
    value = int(digits)
    if value > _UINT64_MAX:
        return _OVERFLOW
    if rest.strip(_C_SPACE):
        return _INVALID
    return _ABOVE_INT64 if value > _INT64_MAX else _OK


def _integer_passes(tokens: list[str], values: np.ndarray, kinds: np.ndarray, start: int, end: int) -> None:
    """Make TEXT the tokens of rows start..end that pandas' int64/uint64 passes turn the block
    to text with (see above); the kinds of any other block stay as they are."""
    block = kinds[start:end]
    # An integer of at most 18 characters is an int64 literal: only the others need a look.
    short = np.fromiter((len(tokens[i]) <= 18 for i in range(start, end)), dtype=bool, count=end - start)
    for i in (np.flatnonzero((block != NA) & ~((block == INTEGER) & short)) + start).tolist():
        verdict = _int64_literal(tokens[i])
        if verdict == _INVALID:
            return  # the float pass decides: parse_numbers' kinds
        if verdict == _OVERFLOW:
            break
    else:
        return  # an integer block (or all NA)
    negative = above_int64 = None
    for i in range(start, end):
        if kinds[i] == NA:
            continue
        verdict = _uint64_literal(tokens[i])
        if verdict == _OVERFLOW:
            kinds[i], values[i] = TEXT, np.nan
            return
        if verdict == _INVALID:
            return  # the float pass decides
        if verdict == _NEGATIVE and negative is None:
            negative = i
        if verdict == _ABOVE_INT64:
            above_int64 = i
    missing = np.flatnonzero(block == NA) + start
    if above_int64 is not None and len(missing):  # pandas: "cannot convert to numerical dtype", NA kept as text
        kinds[missing] = TEXT
    elif negative is not None:
        kinds[negative], values[negative] = TEXT, np.nan


# ---- the table ------------------------------------------------------------------------------


@dataclass
class RawTable:
    """A CSV as pandas would tokenise it: header names and rows of text fields (rows already
    cut or padded to the header's length; None marks a field the row did not have)."""

    header: list[str]
    rows: list[list[str | None]]
    truncated_rows: int = 0  # rows longer than the header whose surplus fields were dropped

    def column(self, at: int) -> list[str | None]:
        return [row[at] for row in self.rows]


def decode(data: bytes) -> str:
    """UTF-8 text with universal newlines, as the reference's text-mode open gives it."""
    text = data.decode("utf-8")  # UnicodeDecodeError: the caller words it
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _is_blank_line(row: list[str]) -> bool:
    return not row or (len(row) == 1 and row[0] != "" and row[0].strip(" \t") == "")


def tokenize(text: str) -> RawTable:
    """Header and rows of a decoded CSV; CsvError when pandas could not parse it."""
    import csv  # here: a plain file (plain_table) never needs them
    import io

    if text.startswith("\ufeff"):
        text = text[1:]
    sentinel = "\x01end-of-file\x01"
    try:
        rows = list(csv.reader(io.StringIO(text + "\n" + sentinel + "\n"), strict=False))
    except csv.Error as error:
        raise CsvError(f"the CSV structure is broken ({error})") from None
    if not rows or rows[-1] != [sentinel]:
        raise CsvError("a quoted field is never closed (end of file inside quotes)")
    rows.pop()
    if "\x00" in text:  # pandas ends a field at a NUL character
        rows = [[field.split("\x00", 1)[0] for field in row] for row in rows]
    rows = [row for row in rows if len(row) > 1 or not _is_blank_line(row)]
    if not rows:
        raise CsvError("the file has no header line")
    header, data = rows[0], rows[1:]
    width = len(header)
    allowed = max(width, len(data[0])) if data else width
    if all(len(row) == width for row in data):
        return RawTable(header=header, rows=data)
    truncated = 0
    out: list[list[str | None]] = []
    for number, row in enumerate(data, start=2):
        if len(row) > allowed:
            raise CsvError(f"data row {number - 1} has {len(row)} fields, more than the {allowed} of the header "
                           f"and first row")
        if len(row) > width:
            truncated += 1
            row = row[:width]
        elif len(row) < width:
            row = row + [None] * (width - len(row))
        out.append(row)
    return RawTable(header=header, rows=out, truncated_rows=truncated)


# ---- the fast path: plain files ------------------------------------------------------------
#
# A file without quotes, NUL characters or blank lines, whose every line has the header's number
# of fields, is what tokenize() makes of it split at commas and newlines: its fields are found
# in the bytes at once, and its numbers converted over the whole table (`plain_numbers`), with
# the converter of pandas_float. Anything else goes through tokenize(); a field that is not a
# plain number sends its table's columns through parse_numbers(); these word any refusal.


@dataclass
class PlainTable:
    """A plain CSV (see above): the header and, per data row and field, where the field's bytes
    start and end in the UTF-8 text."""

    header: list[str]
    data: bytes
    starts: np.ndarray  # (rows x fields)
    ends: np.ndarray
    truncated_rows: int = 0  # never: every row has the header's length

    def column(self, at: int) -> list[str]:
        """The column's fields, decoded at once: each field's bytes and the separator after it
        (made a newline; no field holds one) gathered into one text, then split."""
        starts, ends = self.starts[:, at], self.ends[:, at]
        if not len(starts):
            return []
        spans = ends - starts + 1  # each field and its separator
        offsets = np.cumsum(spans) - spans  # where each field starts in the gathered bytes
        gathered = np.arange(int(spans.sum())) + np.repeat(starts - offsets, spans)
        picked = np.frombuffer(self.data, dtype=np.uint8)[gathered]
        picked[offsets + spans - 1] = 10
        return picked.tobytes().decode("utf-8").split("\n")[:-1]

    def numbers(self, columns: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
        """(values, is_integer), rows x columns, when every field of these columns is a number that
        plain_numbers converts (as parse_numbers would: FLOAT, or INTEGER when is_integer); else None."""
        rows = len(self.starts)
        starts = self.starts[:, columns].ravel()
        ends = self.ends[:, columns].ravel()
        if rows == 0 or (ends == starts).any():  # an empty field is NA
            return None
        handled, values, is_integer = plain_numbers(np.frombuffer(self.data, dtype=np.uint8), starts, ends)
        if not handled.all():
            return None
        return values.reshape(rows, len(columns)), is_integer.reshape(rows, len(columns))


def plain_table(text: str) -> PlainTable | None:
    """The table of a decoded CSV when it is plain (see above), else None."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if '"' in text or "\x00" in text:
        return None
    if not text.endswith("\n"):
        text += "\n"
    header = text[:text.index("\n")].split(",")
    width = len(header)
    data = text.encode("utf-8")
    buffer = np.frombuffer(data, dtype=np.uint8)
    is_comma, is_newline = buffer == 44, buffer == 10
    if np.count_nonzero(is_comma) != np.count_nonzero(is_newline) * (width - 1):  # before the positions are made
        return None
    separators = np.flatnonzero(is_comma | is_newline)
    newlines = separators[buffer[separators] == 10]
    # A blank line (or one of spaces, which has no comma) would be skipped by the tokenizer.
    if width < 2 or newlines[0] == 0 or (np.diff(newlines) == 1).any():
        return None
    if len(separators) != len(newlines) * width:
        return None
    ends = separators.reshape(-1, width)
    if not (ends[:, -1] == newlines).all():  # each line: exactly width - 1 commas
        return None
    starts = np.empty_like(ends)
    starts[0, 0] = 0
    starts[1:, 0] = newlines[:-1] + 1
    starts[:, 1:] = ends[:, :-1] + 1
    return PlainTable(header=header, data=data, starts=starts[1:], ends=ends[1:])


_FEW_REPEATED = 1024  # tokens: below this, finding the repeated ones costs more than it saves


def plain_numbers(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """_plain_numbers (below); when every token is at most 8 bytes long (a ground truth's 0.0,
    1.0 and weights), each distinct token is converted once: a token of at most 8 bytes is
    one 64-bit word (its bytes, zeros after), and equal words are equal tokens."""
    lengths = ends - starts
    if len(starts) < _FEW_REPEATED or lengths.max() > 8 or lengths.min() < 1:
        return _plain_numbers(buffer, starts, ends)
    padded = np.zeros(8 * (len(buffer) // 8 + 2), dtype=np.uint8)
    padded[:len(buffer)] = buffer
    words = padded.view("<u8")
    low, shift = starts >> 3, ((starts & 7) * 8).astype(np.uint64)  # each token's first word and its offset
    token_words = ((words[low] >> shift) | ((words[low + 1] << np.uint64(1)) << (np.uint64(63) - shift))
                   ) & _BYTE_LANES[lengths]
    first, inverse = _first_of_each(token_words)
    if first is None:  # mostly distinct: converting them all is as fast
        return _plain_numbers(buffer, starts, ends)
    handled, values, is_integer = _plain_numbers(buffer, starts[first], ends[first])
    return handled[inverse], values[inverse], is_integer[inverse]


_FEW_DISTINCT = 16  # found one at a time (a pass over the rest each); more: sorted (np.unique)


def _first_of_each(words: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(where each distinct word first occurs, which distinct word each is), or (None, ...) when
    more than a quarter of the words are distinct."""
    inverse = np.empty(len(words), dtype=np.intp)
    rest = np.arange(len(words))  # positions not yet matched, in order
    first = []
    while len(rest) and len(first) < _FEW_DISTINCT:
        equal = words[rest] == words[rest[0]]
        inverse[rest[equal]] = len(first)
        first.append(rest[0])
        rest = rest[~equal]
    if not len(rest):
        return np.array(first, dtype=np.intp), inverse
    distinct, first_at, inverse = np.unique(words, return_index=True, return_inverse=True)
    return (first_at if len(distinct) * 4 <= len(words) else None), inverse


def _plain_numbers(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(handled, values, is_integer) of the tokens buffer[starts[i]:ends[i]] (ASCII codes, uint8):
    those of the form digits[.digits][(e|E)[+-]digits] (or .digits), at most _WIDTH long, with
    at most 19 integer digits and 9 exponent digits and a result within 1e-308..1e308, converted
    as pandas_float does, with operations over all tokens at once; the others are not handled.

    pandas' converter keeps the first 17 mantissa digits d1..dk (leading zeros count), adds
    them as number = number * 10 + d in doubles, then scales by 10 ** (integer digits - k +
    exponent). Up to 15 digits the sum is an exact integer (< 2 ** 53), computed in int64; the
    16th and 17th digits are added as doubles, as pandas adds them."""
    n = len(starts)
    lengths = ends - starts
    # Each token's characters, one row each (width a multiple of 8, at least 18), and the
    # following bytes of the file past its end; `in_token` marks its own bytes as 0xFF lanes of
    # 64-bit words, so that a mask's count per token is a few word operations.
    width = 8 * -(-max(18, min(int(lengths.max(initial=0)), _WIDTH)) // 8)
    padded = np.concatenate([buffer, np.zeros(width + 9, dtype=np.uint8)])  # windows past the end
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)
    characters = windows[starts]
    in_token = _BYTE_LANES[np.clip(lengths[:, None] - 8 * np.arange(width // 8), 0, 8)]

    def count(mask: np.ndarray) -> np.ndarray:
        words = mask.view("<u8") & in_token  # one 0/1 byte per character of the token
        total = words[:, 0].copy()
        for k in range(1, words.shape[1]):
            total += words[:, k]  # each byte lane stays below 256
        return ((total * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)

    column = np.arange(width)
    digit = characters - np.uint8(48)  # a digit's value; > 9 for any other character (wraps)
    is_dot = characters == 46
    is_e = (characters | np.uint8(32)) == 101  # e or E
    digits = count(digit < 10)
    dot_count = count(is_dot)
    e_count = count(is_e)
    has_e = e_count == 1
    # The first dot or e of the row is the token's own when the token has one.
    e_at = lengths.copy()
    e_rows = np.flatnonzero(has_e)
    e_at[e_rows] = is_e[e_rows].argmax(axis=1)
    dot_at = np.where(dot_count == 1, is_dot.argmax(axis=1), e_at)
    # The exponent: e, an optional sign right after it (the byte after a token is a comma, a
    # newline or padding: never a sign), then its digits to the end.
    sign_code = characters[np.arange(n), np.minimum(e_at + 1, width - 1)]
    signed = has_e & ((sign_code == 43) | (sign_code == 45))
    exponent_start = e_at + 1 + signed
    exponent_digits = np.where(has_e, lengths - exponent_start, 0)
    mantissa_digits = digits - exponent_digits
    handled = (
        (lengths <= _WIDTH) & (e_count <= 1) & (dot_count <= 1) & (dot_at <= e_at) & (mantissa_digits >= 1)
        # every character a digit but the dot and the exponent's e and sign (so no other sign)
        & (digits + dot_count + e_count + signed == lengths)
        & (~has_e | ((exponent_digits >= 1) & (exponent_digits <= 9)))
        & (dot_at <= 19)  # integer digits
    )

    # The first 17 mantissa digits, the dot skipped (those past it move left by one). The first
    # 15 (or fewer) as one integer, 8 digits per 64-bit word at once (_eight_digits); the 16th
    # and 17th added as doubles, as pandas adds every digit.
    kept = np.clip(mantissa_digits, 0, 17)
    exact_digits = np.minimum(kept, 15)
    # The dot removed from the first 16 positions in 64-bit words: below the dot each byte
    # stays, from it on each byte is the next one (the word shifted by a byte).
    words = digit.view("<u8")
    before_dot = _BYTE_LANES[np.clip(dot_at, 0, 8)], _BYTE_LANES[np.clip(dot_at - 8, 0, 8)]
    first16 = [(words[:, k] & before_dot[k])
               | (((words[:, k] >> np.uint64(8)) | (words[:, k + 1] << np.uint64(56))) & ~before_dot[k])
               for k in (0, 1)]
    digit16 = (first16[1] >> np.uint64(56)).astype(np.float64)
    digit17 = np.where(dot_at > 16, digit[:, 16], digit[:, 17]).astype(np.float64)
    high = _eight_digits(first16[0] & _BYTE_LANES[np.minimum(exact_digits, 8)])
    low = _eight_digits(first16[1] & _BYTE_LANES[np.clip(exact_digits - 8, 0, 8)])
    exact = (high * np.uint64(10**8) + low).astype(np.int64) // _INT_POWERS_OF_TEN[16 - exact_digits]
    number = exact.astype(np.float64)
    number = np.where(kept > 15, number * 10.0 + digit16, number)
    number = np.where(kept > 16, number * 10.0 + digit17, number)
    # The exponent's digits (at most 9: no overflow), for the tokens that have one.
    exponent_value = np.zeros(n, dtype=np.int64)
    with_e = np.flatnonzero(handled & has_e)
    if len(with_e):
        exponent_window = windows[starts[with_e] + exponent_start[with_e], :9] - np.uint8(48)
        exponent_window[column[:9] >= exponent_digits[with_e, None]] = 0
        value = np.zeros(len(with_e), dtype=np.int64)
        for k in range(9):
            value *= 10
            value += exponent_window[:, k]
        exponent_value[with_e] = value // _INT_POWERS_OF_TEN[9 - exponent_digits[with_e]]
    exponent = dot_at - kept + np.where(signed & (sign_code == 45), -exponent_value, exponent_value)
    handled &= (exponent >= -308) & (exponent <= 308)
    power = _POWERS_OF_TEN[np.clip(np.abs(exponent), 0, 308)]
    with np.errstate(over="ignore"):
        values = np.where(handled, np.where(exponent > 0, number * power, number / power), np.nan)
    handled &= np.isfinite(values)
    is_integer = handled & (dot_count == 0) & ~has_e
    return handled, values, is_integer


def _eight_digits(words: np.ndarray) -> np.ndarray:
    """The 8-digit numbers written by the bytes (values 0-9, first digit lowest) of 64-bit
    words: pairs, then fours, then eights combined in place (each step fits its lane)."""
    words = (words * np.uint64(10) + (words >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    words = (words * np.uint64(100) + (words >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    return (words * np.uint64(10000) + (words >> np.uint64(32))) & np.uint64(0x00000000FFFFFFFF)


def image_ids(fields: list[str | None]) -> list[str | None]:
    """image_id of every field of a column. When none is missing or an NA token (a real file's
    column), the .jpg suffixes are removed from the column joined by line breaks at once."""
    if None in fields or not NA_TOKENS.isdisjoint(fields):
        return [image_id(field) for field in fields]
    joined = "\n".join(fields)
    if ".jpg" not in joined.lower():
        return fields
    if joined.count("\n") != len(fields) - 1:  # a (quoted) field holds a line break
        return [image_id(field) for field in fields]
    return _JPG_SUFFIXES.sub("", joined).split("\n")


def image_id(field: str | None) -> str | None:
    """The image id of a row: the text as written without a trailing .jpg; None when empty or
    an NA token (pandas reads those as NaN)."""
    if field is None or field in NA_TOKENS:
        return None
    if ".jpg" not in field[-5:].lower():  # the regex below, only when it can match
        return field
    return _JPG_SUFFIX.sub("", field)


# ---- quoting the file in messages -----------------------------------------------------------


def quoted(field: str) -> str:
    """A field of a submitted CSV (a header name, a value) in a message, in the quotes its
    messages have always used ('high', ' ', 'img'; tests/test_isic_parity.py pins them): control
    characters escaped, cut to reading.values.SHOWN_LENGTH characters like any shown value."""
    text = repr(field)
    return text if len(text) <= SHOWN_LENGTH else text[: SHOWN_LENGTH - 4] + "...'"


def image_label(image: str | None) -> str:
    """An image id of a submitted CSV in a message: as written when plain, quoted when empty or
    padded with spaces, "(empty id)" for a row without one."""
    if image is None:
        return "(empty id)"
    if not image or image.strip() != image:
        return quoted(image)
    return shown_path(image, SHOWN_LENGTH)


# ---- the submission: its CSV file, checked in the reference's order ---------------------------


def predictions_csv_path(input_dir: Path) -> Path:
    """/input/predictions.csv whatever it is (reading it refuses a link out, a pipe or a folder by
    that name), else the one CSV file of an unpacked ZIP."""
    origin = Origin.submission(input_dir)
    path = input_dir / PREDICTIONS_FILE
    if origin.exists(path):
        return path
    found = [p for p in list_submission_files(input_dir) if p.name.lower().endswith(".csv")]
    if len(found) != 1:
        names = ", ".join(shown_path(p.relative_to(origin.real_root).as_posix())
                          for p in found[:10]) or "none"
        raise SubmissionError(f"The submission must be one CSV file ({PREDICTIONS_FILE}); CSV files found: "
                              f"{names}{f' and {len(found) - 10} more' if len(found) > 10 else ''}.")
    return found[0]


def read_predictions_csv(data: bytes, categories: tuple[str, ...], truth_ids: tuple[str, ...]
                         ) -> tuple[list[str], np.ndarray]:
    """The ISIC submission CSV, checked in the reference's order (isic.md, submission checks);
    returns the image ids in sorted order and their confidences in category order."""
    text = _submitted_text(data, len(truth_ids))
    table = _parsed(text)
    index = _index_column(table.header)
    index_at = table.header.index(index)
    ids = image_ids(table.column(index_at))
    _check_unique_images(ids)
    columns = _category_columns(table, index, index_at, categories)
    values, kinds = _confidences(table, columns, len(ids), len(categories))

    def token(position: int, row: int) -> str:  # a field, for a message
        return table.column(columns[position])[row]

    _check_confidences(ids, values, kinds, categories, token)
    _check_test_set_images(ids, truth_ids)
    return _in_sorted_order(ids, values, truth_ids)


def _submitted_text(data: bytes, images: int) -> str:
    """The decoded text, refused when empty, not UTF-8, without line breaks, or with more lines
    than the test set can need."""
    if not data:  # the reference's first check refuses it too ("no newlines")
        raise SubmissionError("The CSV is empty; it must have a header line and one line per image.")
    try:
        text = decode(data)
    except UnicodeDecodeError as error:
        # The reference reads 2000 characters first: a file without newlines there is refused for that.
        prefix = data[:error.start].decode("utf-8", errors="ignore")
        prefix = prefix.replace("\r\n", "\n").replace("\r", "\n")
        if error.start >= 8192 and prefix[:2000].count("\n") < 2:
            raise SubmissionError("The CSV has no line breaks in its first 2000 characters: it must have a header "
                                  "line and one line per image.") from None
        raise SubmissionError(f"The CSV is not UTF-8 text (byte {error.start + 1} cannot be decoded); save it as "
                              f"UTF-8.") from None
    if text[:2000].count("\n") < 2:
        first, newline, rest = text.partition("\n")
        if newline and first.strip() and not rest.strip():  # the reference's first check too, said plainly
            raise SubmissionError("The CSV has a header but no image rows.")
        raise SubmissionError("The CSV has no line breaks in its first 2000 characters: it must have a header line "
                              "and one line per image.")
    # Millions of short lines fit in the size bound but take gigabytes once split into rows: the
    # lines are counted first (a blank line after every row is still allowed, as pandas skips them).
    lines, max_lines = text.count("\n"), 2 * (images + SPARE_ROWS)
    if lines > max_lines:
        raise SubmissionError(f"The CSV has {lines} lines, more than the {max_lines} allowed for the "
                              f"{images} images of the test set (a header and one line per image).")
    return text


def _parsed(text: str) -> PlainTable | RawTable:
    try:
        return plain_table(text) or tokenize(text)  # the fast path when the file is plain
    except CsvError as error:
        raise SubmissionError(f"The CSV cannot be parsed: {error}.") from None


def _index_column(header: list[str]) -> str:
    index = next((c for c in INDEX_COLUMNS if c in header), None)
    if index is None:
        raise SubmissionError(f"The CSV has no 'image' column (nor 'lesion_id'); its header is "
                              f"{', '.join(map(quoted, header[:12]))}{' ...' if len(header) > 12 else ''}.")
    return index


def _check_unique_images(ids: list[str | None]) -> None:
    """No image twice, after a trailing .jpg is removed."""
    if len(set(ids)) == len(ids):
        return
    duplicates: list = []
    seen: set = set()
    for image in ids:
        if image in seen and image not in duplicates:
            duplicates.append(image)
        seen.add(image)
    raise SubmissionError(f"The CSV has more than one row for image(s) {id_list(map(image_label, duplicates))}.")


def _category_columns(table: PlainTable | RawTable, index: str, index_at: int, categories: tuple[str, ...]
                      ) -> list[int]:
    """The position of each category's column: every category, nothing else (in any order)."""
    first_at: dict[str, int] = {}
    extra_columns: list[str] = []
    for position, name in enumerate(table.header):
        if position == index_at:
            continue
        if name in categories and name not in first_at:
            first_at[name] = position
        else:
            label = quoted(name)
            extra_columns.append(f"{label} (column {position + 1})" if name in first_at or name == index or not name
                                 else label)
    missing_columns = [c for c in categories if c not in first_at]
    if missing_columns:
        raise SubmissionError(f"The CSV has no column for categor{'y' if len(missing_columns) == 1 else 'ies'} "
                              f"{', '.join(missing_columns)}; the header must be {index} followed by "
                              f"{', '.join(categories)}.")
    if extra_columns:
        raise SubmissionError(f"The CSV has column(s) that are not categories: {id_list(extra_columns)}; the "
                              f"categories are {', '.join(categories)}.")
    if table.truncated_rows:
        log(f"Note: {table.truncated_rows} row(s) have more fields than the header; the surplus fields are ignored "
            f"(as the reference does).")
    return [first_at[c] for c in categories]


def _confidences(table: PlainTable | RawTable, columns: list[int], rows: int, n_categories: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(values, kinds), rows x categories: at once for a plain file whose every field is a number
    (what parse_numbers gives), else column by column through parse_numbers."""
    plain = table.numbers(columns) if isinstance(table, PlainTable) else None
    if plain is not None:
        values, is_integer = plain
        return values, np.where(is_integer, INTEGER, FLOAT).astype(np.int8)
    if not rows:
        return np.zeros((0, n_categories)), np.zeros((0, n_categories), dtype=np.int8)
    parsed = [parse_numbers([t if t is not None else "" for t in table.column(at)], len(table.header))
              for at in columns]
    return np.column_stack([v for v, _ in parsed]), np.column_stack([k for _, k in parsed])


def _check_confidences(ids: list[str | None], values: np.ndarray, kinds: np.ndarray, categories: tuple[str, ...],
                       token) -> None:
    """Every value present, a floating-point number, in [0, 1]; some image rows."""
    missing_rows = np.flatnonzero((kinds == NA).any(axis=1))
    if len(missing_rows):
        raise SubmissionError(f"The CSV has missing or empty values for image(s) "
                              f"{id_list(image_label(ids[i]) for i in missing_rows)}.")
    if not ids:
        raise SubmissionError("The CSV has a header but no image rows.")
    for position, category in enumerate(categories):
        column_kinds = kinds[:, position]
        if (column_kinds == TEXT).any():
            row = int(np.flatnonzero(column_kinds == TEXT)[0])
            raise SubmissionError(f"Column {category} of the CSV is not all numbers: image "
                                  f"{image_label(ids[row])} has {quoted(token(position, row))}.")
        if (column_kinds == INTEGER).all():
            raise SubmissionError(f"Column {category} of the CSV holds only whole numbers such as "
                                  f"{quoted(token(position, 0).strip())}; confidences must be written as "
                                  f"floating-point numbers (0.0, 1.0, 0.25).")
    out_of_range = np.flatnonzero(((values < 0) | (values > 1)).any(axis=1))
    if len(out_of_range):
        first = int(out_of_range[0])
        category = categories[int(np.flatnonzero((values[first] < 0) | (values[first] > 1))[0])]
        raise SubmissionError(f"The CSV has values outside [0, 1] for image(s) "
                              f"{id_list(image_label(ids[i]) for i in out_of_range)} (e.g. {category} = "
                              f"{shown_path(token(categories.index(category), first).strip(), SHOWN_LENGTH)}).")


def _check_test_set_images(ids: list[str | None], truth_ids: tuple[str, ...]) -> None:
    """The test set's images, no other."""
    given, known = set(ids), set(truth_ids)
    if given == known:
        return
    missing_images = sorted(known - given)
    if missing_images:
        raise SubmissionError(f"The CSV has no row for {len(missing_images)} image(s) of the test set: "
                              f"{id_list(missing_images)}.")
    extra_images = sorted((image for image in ids if image not in known), key=lambda i: (i is None, i or ""))
    raise SubmissionError(f"The CSV has {len(extra_images)} image(s) that are not in the test set: "
                          f"{id_list(map(image_label, extra_images))}.")


def _in_sorted_order(ids: list, values: np.ndarray, truth_ids: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
    """The test set's images exactly, once each: their rows in sorted order."""
    sorted_ids = list(truth_ids) if all(map(str.__lt__, truth_ids, truth_ids[1:])) else sorted(truth_ids)
    if ids == sorted_ids:  # written in sorted order
        return sorted_ids, values
    row_of = dict(zip(ids, range(len(ids)), strict=True))
    return sorted_ids, values[np.fromiter(map(row_of.__getitem__, sorted_ids), dtype=np.intp, count=len(ids))]


# ---- an algorithm job's output -------------------------------------------------------------------


def confidences_from_json(document: Any, categories: tuple[str, ...], where: str) -> np.ndarray:
    """One image's algorithm output {category: confidence}: exactly the categories, each a
    finite number in [0, 1] (JSON has no integer/float distinction: 0 and 1 are numbers here)."""
    if not isinstance(document, dict):
        raise SubmissionError(f"{where} must be a JSON object {{category: confidence}}, found {json_type(document)}.")
    missing = [c for c in categories if c not in document]
    if missing:
        raise SubmissionError(f"{where} has no confidence for {', '.join(missing)} (the categories are "
                              f"{', '.join(categories)}).")
    extra = [k for k in document if k not in categories]
    if extra:
        raise SubmissionError(f"{where} has keys that are not categories: {id_list(map(shown, extra))} (the "
                              f"categories are {', '.join(categories)}).")
    return np.array([finite_number(document[category], f"{where}: the confidence for {category}", minimum=0.0,
                                   maximum=1.0) for category in categories])
