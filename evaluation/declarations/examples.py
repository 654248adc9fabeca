"""What a challenge's examples module declares in its EXAMPLES (evaluation/examples/ reads them):
how its bundled example, its invalid submissions and its final-ranking teams are made. Not
part of scoring; a challenge imports this, never the examples command."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Lineup:
    """The bundled teams of the final ranking (evaluation/examples/leaderboard_teams.py)."""

    seeds: tuple[int, int]  # team-a, team-b: Example.submission with these seeds
    invalid: str  # the folder of test/<challenge>/invalid/ that team-x copies


@dataclass(frozen=True)
class Example:
    synthesize: Callable[..., None]
    invalid_examples: Callable[[Path], dict[str, dict[str, bytes | None]]] = lambda input_dir: {}
    # submission(ground_truth_dir, input_dir, seed): a valid submission for ANY ground truth of the
    # challenge (the organizer's own), written to input_dir as the platform lays it out.
    submission: Callable[[Path, Path, int], None] | None = None
    invalid_for_ground_truth: Callable[[Path, Path], dict[str, dict[str, bytes | None]]] | None = None
    min_cases: int = 1  # the fewest `cases` synthesize makes a scored example of (seed 0)
    lineup: Lineup | None = None  # the final ranking's bundled teams (test/<challenge>/leaderboard/)
