"""Inputs for the common metric tests (tests/test_metrics_common.py), one module per metric kind
(evaluation.metrics.registry.KINDS), found by listing this package: a module named after a kind
defines how to make and transform that kind's arguments.

A kind module defines:

- `examples(rng, ndim) -> list[tuple]`: positional arguments of typical, non-degenerate inputs;
- `ndims`: the dimensions the kind is tested in (e.g. (2, 3) for masks, (1,) for per-case arrays);
- `swap(args) -> tuple`: the arguments of the symmetric call (f(a, b) -> f(b, a));
- `pad(args) -> tuple | None`: the same inputs with background added around them (None: no such thing);
- `empties(ndim) -> dict[str, tuple]`: arguments per empty case, keyed by the policy parameter
  that decides its value (`both_empty`, `truth_empty`, `prediction_empty`, ...);
- `repeat(args, index) -> tuple | None`: the arguments with case `index` present twice (None: the
  kind has no cases), for "a case of weight 2 equals the case twice";
- `n_cases(args) -> int`: how many cases the arguments hold (for sample_weight);
- `scale(args, s) -> tuple` (optional): the arguments with every array holding lengths in the
  spacing's units (a displacement field) multiplied by s, for the spacing-scaling check; a kind
  without it holds none (coordinates are voxel indices);
- `arrays`: the positions of the array arguments (for dtype, memory order and mutation checks);
- `dtypes`: the dtypes the array arguments may be given in without changing the result.

The pieces kinds share (per-case repeats and counts, padding images, no empty case...) are in
_per_case.py, which is no kind.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def kind_modules() -> dict[str, ModuleType]:
    return {module.name: importlib.import_module(f"{__name__}.{module.name}")
            for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_")}
