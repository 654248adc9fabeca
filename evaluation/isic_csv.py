"""Reading the ISIC CSV files without pandas, accepting and rejecting what the reference does.

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

The bytes come through the reading layer (`Origin.read_bytes`, bounded by the test set's size,
evaluation/challenges/isic.py); this module only turns them into a table.

Decisions where the reference is not followed (documented in docs/challenges/isic.md): image ids
are compared as written (pandas would turn a column of numeric ids into numbers), and an id that
is empty or an NA token ("NA", "null"...) counts as an image without id.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

import numpy as np

from evaluation.reading.files import shown_path
from evaluation.reading.values import SHOWN_LENGTH

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

# Token kinds.
NA, INTEGER, FLOAT, TEXT = 0, 1, 2, 3

_JPG_SUFFIX = re.compile(r"\.jpg$", re.IGNORECASE)  # the reference strips it from image ids
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


def parse_numbers(tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(values, kinds) of a column's tokens: kinds NA, INTEGER (an integer literal in int64
    range), FLOAT (another number pandas reads) or TEXT; values NaN unless a number."""
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
    # pandas keeps as text a token whose integer part is beyond uint64 (seen with pandas 2.3);
    # far outside [0, 1] anyway, only the message differs.
    huge = np.flatnonzero((kinds == INTEGER) | (kinds == FLOAT)).tolist()
    for i in huge:
        if len(tokens[i]) >= 20 and _integer_part(tokens[i]) > _UINT64_MAX:
            kinds[i], values[i] = TEXT, np.nan
    return values, kinds


_UINT64_MAX = 2**64 - 1


def _integer_part(token: str) -> int:
    match = _FLOAT_TOKEN.match(token)
    return int(match["int"] or "0") if match else 0


# ---- the table ------------------------------------------------------------------------------


@dataclass
class RawTable:
    """A CSV as pandas would tokenise it: header names and rows of text fields (rows already
    cut or padded to the header's length; None marks a field the row did not have)."""

    header: list[str]
    rows: list[list[str | None]]
    truncated_rows: int = 0  # rows longer than the header whose surplus fields were dropped


def decode(data: bytes) -> str:
    """UTF-8 text with universal newlines, as the reference's text-mode open gives it."""
    text = data.decode("utf-8")  # UnicodeDecodeError: the caller words it
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _is_blank_line(row: list[str]) -> bool:
    return not row or (len(row) == 1 and row[0] != "" and row[0].strip(" \t") == "")


def tokenize(text: str) -> RawTable:
    """Header and rows of a decoded CSV; CsvError when pandas could not parse it."""
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
