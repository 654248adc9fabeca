"""The pieces kind modules share (not a kind: its name starts with "_"): how a kind's arguments
are swapped, padded, repeated and counted, for kinds of per-case arrays (one entry per case along
the first axis) and for kinds of one image (no cases to weigh or repeat).

A kind module binds them to its own names, e.g. `swap = swap_first_two`, `repeat =
repeat_case(2)`; tests/metric_kinds/__init__.py says what each name means.
"""

from __future__ import annotations

import numpy as np

PAD_WIDTH = (2, 3)  # background added before and after every axis


def keep_order(args):
    """swap for a kind whose metrics are symmetric in no pair of arguments: the call itself."""
    return args


def swap_first_two(args):
    """f(a, b, ...) -> f(b, a, ...)."""
    return (args[1], args[0], *args[2:])


def no_padding(args):
    """pad for a kind without an image around its values (per-case numbers)."""
    return None


def pad_images(args, count: int = 2, constant=0):
    """The first `count` arguments (images of one shape) with PAD_WIDTH of `constant` around them."""
    width = [PAD_WIDTH] * np.ndim(args[0])
    return (*(np.pad(a, width, constant_values=constant) for a in args[:count]), *args[count:])


def no_empties(ndim):
    """empties for a kind that declares no empty case."""
    return {}


def count_cases(args) -> int:
    """How many cases: the length of the first argument."""
    return len(args[0])


def repeat_case(count: int | None = None):
    """repeat for per-case arguments: the first `count` arguments (all: None), arrays or lists of
    one entry per case, with case `index` present twice; the others unchanged."""

    def repeat(args, index):
        count_ = len(args) if count is None else count
        return (*(_twice(items, index) for items in args[:count_]), *args[count_:])

    return repeat


def _twice(items, index: int):
    if isinstance(items, list):  # ragged: one array per case (point sets)
        return items[:index + 1] + [items[index]] + items[index + 1:]
    array = np.asarray(items)
    return np.insert(array, index, array[index], axis=0)


def no_repeat(args, index):
    """repeat for a kind of one image: it has no cases to repeat."""
    return None


def one_case(args) -> int:
    """n_cases for a kind of one image."""
    return 1
