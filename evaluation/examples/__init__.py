"""Synthetic ground truths and submissions: the bundled examples, the tests and the benchmarks.

Not part of scoring (the evaluation image does not need this package). Each module here writes
the examples of one challenge module and declares them in `EXAMPLES`:

    EXAMPLES = {"rare26": Example(synthesize=synthesize, invalid_examples=invalid_examples)}

- `synthesize(out_dir, seed=0, cases=None)`: a ground truth (out_dir/ground-truth) and a valid
  submission scored against it (out_dir/input), the same bytes for the same seed;
- `invalid_examples(input_dir)`: bad submissions bundled with the example
  (test/<challenge>/invalid/<name>/), each made from a copy of the valid one in input_dir:
  {name: {relative path: new bytes, or None to delete the file}}.

`python -m evaluation.examples CHALLENGE --out DIR` writes DIR/ground-truth and DIR/input.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Example:
    synthesize: Callable[..., None]
    invalid_examples: Callable[[Path], dict[str, dict[str, bytes | None]]] = lambda input_dir: {}


def examples() -> dict[str, Example]:
    """Every challenge's examples, from the EXAMPLES of the modules of this package."""
    found: dict[str, Example] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_"):  # __main__ runs the command line when imported
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        found.update(getattr(module, "EXAMPLES", {}))
    return dict(sorted(found.items()))


def example(challenge: str) -> Example:
    found = examples()
    if challenge not in found:
        raise KeyError(f"no examples for challenge {challenge!r}; known: {', '.join(found)}")
    return found[challenge]


def synthesize(challenge: str, out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    options = {} if cases is None else {"cases": cases}
    example(challenge).synthesize(Path(out_dir), seed=seed, **options)


def invalid_examples(challenge: str, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    return example(challenge).invalid_examples(Path(input_dir))


def main(argv: list[str] | None = None) -> int:
    known = examples()
    parser = argparse.ArgumentParser(prog="python -m evaluation.examples",
                                     description="Write a synthetic ground truth and submission for a challenge.")
    parser.add_argument("challenge", choices=sorted(known))
    parser.add_argument("--out", type=Path, required=True, help="folder to write ground-truth/ and input/ into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=None, help="number of cases (challenge default if omitted)")
    args = parser.parse_args(argv)
    synthesize(args.challenge, args.out, seed=args.seed, cases=args.cases)
    print(f"wrote {args.out / 'ground-truth'} and {args.out / 'input'}")
    return 0
