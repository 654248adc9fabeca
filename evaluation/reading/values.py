"""Submitted values: checking numbers, and quoting any value in a one-line message."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluation.errors import EvaluationError, SubmissionError

SHOWN_LENGTH = 40  # a value quoted in a message is cut to this many characters


class HugeNumber:
    """A JSON integer too long to be a float (more than MAX_INTEGER_DIGITS digits). Kept as its
    text and never converted: int() of 5000 digits raises, float() of 400 overflows."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"HugeNumber({len(self.text)} characters)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HugeNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


MAX_INTEGER_DIGITS = 300  # 10**300 is still a float; past 308 digits float() overflows


def parse_integer(text: str) -> int | HugeNumber:
    """json's parse_int: an int, or a HugeNumber for integers no float can hold."""
    if len(text) > MAX_INTEGER_DIGITS:
        return HugeNumber(text)
    return int(text)


def json_type(value: Any) -> str:
    """How a JSON value's type is named in messages."""
    if value is None:
        return "null"
    if isinstance(value, HugeNumber):
        return "a number"
    return {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def shown(value: Any, limit: int = SHOWN_LENGTH) -> str:
    """A submitted value as it was written, for a one-line message: JSON spelling ("0.5" with
    its quotes, true, null, NaN), a huge integer by its length, lists and objects by their size,
    control characters escaped, cut to `limit` characters. It quotes only what the caller read
    from the submission."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, HugeNumber):
        digits = len(value.text.lstrip("-"))
        return f"an integer of {digits} digits"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return f"an object with {len(value)} key{'' if len(value) == 1 else 's'}"
    if isinstance(value, float) and math.isnan(value):
        text = "NaN"
    elif isinstance(value, float) and math.isinf(value):
        text = "Infinity" if value > 0 else "-Infinity"
    else:
        try:
            text = json.dumps(value, ensure_ascii=True)
        except (TypeError, ValueError):
            text = str(value).encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_finite_number(value: Any) -> bool:
    """A JSON number that is a finite float: not a boolean, not NaN or infinite, not huge."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond the float range (a parse_integer result never is)
        return False


def finite_number(value: Any, what: str, *, minimum: float | None = None, maximum: float | None = None,
                  error: type[EvaluationError] = SubmissionError) -> float:
    """`value` as a float, when it is a finite number within [minimum, maximum]; otherwise
    `error` with "<what> is <value as written>; it must be ..."."""
    bounds = _bounds_text(minimum, maximum)
    if not is_finite_number(value):
        raise error(f"{what} is {shown(value)}; it must be a finite number{bounds}.")
    number = float(value)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise error(f"{what} is {shown(value)}; it must be a number{bounds}.")
    return number


def finite_numbers(values: Any, count: int | None, what: str, item: str, *, minimum: float | None = None,
                   maximum: float | None = None, error: type[EvaluationError] = SubmissionError) -> np.ndarray:
    """A JSON array of `count` finite numbers (any length when None) as float64. `item` names one
    element in the message ("likelihood"); the first bad element is named by its index."""
    if not isinstance(values, list):
        expected = f"{count} numbers" if count is not None else "numbers"
        raise error(f"{what} must be a JSON array of {expected}, found {json_type(values)}.")
    if count is not None and len(values) != count:
        raise error(f"{what}: expected {count} {item}s, found {len(values)}.")
    for index, value in enumerate(values):
        if not is_finite_number(value) or not _within(float(value), minimum, maximum):
            raise error(f"{what}: the {item} at index {index} is {shown(value)}; every {item} must be a finite "
                        f"number{_bounds_text(minimum, maximum)}.")
    return np.asarray(values, dtype=np.float64)


def _within(number: float, minimum: float | None, maximum: float | None) -> bool:
    return (minimum is None or number >= minimum) and (maximum is None or number <= maximum)


def _bounds_text(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" between {minimum:g} and {maximum:g}"
    if minimum is not None:
        return f" of at least {minimum:g}"
    if maximum is not None:
        return f" of at most {maximum:g}"
    return ""


def one_line_values(values: Sequence[Any], limit: int = 8) -> str:
    """'1, 2, 7 and 3 more': distinct values of an array for a message."""
    def one(value):
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return shown(value)
    text = ", ".join(one(v) for v in values[:limit])
    return text + (f" and {len(values) - limit} more" if len(values) > limit else "")
