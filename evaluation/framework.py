"""The base class every challenge subclasses: what it declares and its pure hooks.

evalutils' idea, built for predictions.json: the challenge loads and validates its ground
truth, says how to read one case of a submission (`load_prediction`), scores it
(`score_case`, in a worker process) and assembles the leaderboard values (`aggregate`,
`score_aggregates`). The run that drives it (matching cases, the pool, progress, charts) is
evaluation/run.py, which knows nothing of any challenge; the final ranking
(evaluation/leaderboard/) calls the same hooks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from evaluation.declarations.charts import Chart, check_charts
from evaluation.declarations.columns import Leaderboard, leaderboard_paths
from evaluation.declarations.workload import Workload
from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.platform.cases import Case, read_case_mapping
from evaluation.platform.locations import CASE_MAPPING_FILE, strip_extension
from evaluation.reading.files import Origin
from evaluation.settings import CASE_INPUT, Settings, socket_names

if TYPE_CHECKING:
    import numpy as np

    from evaluation.declarations.ranking_rules import RankingRule


def log(message: str) -> None:
    """Progress for the organizers' log (stdout); participants see only stderr's last line."""
    print(message, flush=True)


class Evaluation:
    """A challenge: subclass, set the class attributes, implement the hooks."""

    name: ClassVar[str] = ""  # on the command line, e.g. "rare26"
    title: ClassVar[str] = ""
    settings_class: ClassVar[type[Settings]] = Settings
    case_label: ClassVar[str] = "Case"  # how messages name a case ("Stack", "Patient")
    # The phase's leaderboard(s) with the default settings (python -m evaluation.phase prints them).
    leaderboards: ClassVar[tuple[Leaderboard, ...]] = ()
    # The paths metrics.json guarantees finite numbers beyond the leaderboards' columns (those of a
    # setting's other leaderboard, values the final ranking reads).
    extra_ranked_paths: ClassVar[tuple[str, ...]] = ()
    # The leaderboards' paths that metrics.json may leave null for a documented reason (csv2026's
    # time scores, when the jobs have no timing): not guaranteed finite.
    nullable_paths: ClassVar[tuple[str, ...]] = ()
    # Every path metrics.json guarantees finite, so no submission silently drops off a leaderboard:
    # derived when the class is made (`derive_ranked_paths`: the leaderboards' paths, then
    # extra_ranked_paths, less nullable_paths), never declared.
    ranked_paths: ClassVar[tuple[str, ...]] = ()
    # The titles of the leaderboard columns that a setting other than the default adds, by path: the
    # final ranking's report titles its columns and charts with the leaderboards' titles, these next.
    value_titles: ClassVar[dict[str, str]] = {}
    # How heavy a case is, for the run's scheduling only (declarations/workload.py).
    workload: ClassVar[Workload] = Workload()
    # Charts for the result page (declarations/charts.py): Chart(setting naming the chart's file,
    # declared with output_file=True; build: (evaluation, results, metrics) -> its Vega-Lite spec),
    # checked against settings_class when the class is made. A chart is built only when its
    # setting names a file (docs/grand-challenge.md, "Charts").
    result_charts: ClassVar[tuple[Chart, ...]] = ()
    # The official rule(s) ranking submissions against each other, one per leaderboard
    # (python -m evaluation.leaderboard; evaluation/declarations/ranking_rules.py).
    final_rankings: ClassVar[tuple[RankingRule, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_charts(cls.__name__, cls.result_charts, cls.settings_class)
        if "ranked_paths" in cls.__dict__:  # declared once: the leaderboards say what is ranked
            raise TypeError(f"{cls.__name__}: ranked_paths is derived from the leaderboards; declare the paths "
                            f"beyond them in extra_ranked_paths, those metrics.json may leave null in "
                            f"nullable_paths")
        cls.derive_ranked_paths()

    @classmethod
    def derive_ranked_paths(cls) -> None:
        """ranked_paths from leaderboards and extra_ranked_paths, less nullable_paths; a kind that
        makes its leaderboards in its own __init_subclass__ calls this again after."""
        nullable = set(cls.nullable_paths)
        cls.ranked_paths = tuple(path for path in leaderboard_paths(cls.leaderboards, *cls.extra_ranked_paths)
                                 if path not in nullable)

    def __init__(self, ground_truth_dir: Path, settings: Settings | None = None):
        self.ground_truth_dir = ground_truth_dir
        self.truth = Origin.ground_truth(ground_truth_dir)  # its files are the organizer's: exit 3
        self.settings = settings if settings is not None else self.settings_class.from_ground_truth(ground_truth_dir)
        self.case_mapping = read_case_mapping(ground_truth_dir)
        self.ground_truth: dict[str, Any] = self.load_ground_truth(ground_truth_dir)
        if not self.ground_truth:
            raise SetupError(f"The ground truth in {ground_truth_dir} has no cases.")
        unknown = sorted(set(self.case_mapping.values()) - set(self.ground_truth))
        if unknown:  # the organizer's mapping, not the participant's submission
            raise SetupError(f"{CASE_MAPPING_FILE} maps images to {len(unknown)} case id(s) that are not in the ground "
                             f"truth ({id_list(unknown)}).")

    @classmethod
    def needed_packages(cls) -> dict[str, tuple[str, ...]]:
        """{the part of the declaration that needs them ("ClDice"): the packages of
        requirements.txt it imports, each with everything it needs}, for what a declaration may
        add beyond its kind's own packages (the template's RUNTIME_PACKAGES). The folder's
        RUNTIME_PACKAGES must list them: checked when the registry loads the class
        (evaluation.challenges.check_runtime_packages)."""
        return {}

    # ---- hooks ---------------------------------------------------------------------------

    @classmethod
    def phase_leaderboards(cls, settings: Settings) -> tuple[Leaderboard, ...]:
        """The leaderboard(s) of a phase with these settings (its config.json); by default the
        declared `leaderboards`. Override when a setting changes a title or the ranked value;
        every path it can return belongs in `ranked_paths`, unless metrics.json may hold null
        there for a documented reason (csv2026's time scores; tests/test_phase.py checks)."""
        return cls.leaderboards

    def load_ground_truth(self, directory: Path) -> dict[str, Any]:
        """{case id: what score_case needs of that case, or what case_truth reads it from}; keep
        it light (paths rather than images) since it is shared with every worker. Raise
        SetupError on a bad ground truth."""
        raise NotImplementedError

    def case_input_socket(self) -> str | tuple[str, ...] | None:
        """The input socket whose image name is the case id (None: the job's only image): what
        the setting declared with socket=CASE_INPUT names. A phase with several interfaces names
        one socket per interface, in order: a job's case id comes from the first of them it has."""
        for name, role in self.settings_class.socket_fields():
            if role == CASE_INPUT:
                return socket_names(getattr(self.settings, name)) or None
        return None

    def case_id_from_image_name(self, name: str) -> str:
        """The case id of a job from its input image's name (the case mapping, if any, takes
        precedence). Default: the name without its extension."""
        return strip_extension(name)

    def file_cases(self, input_dir: Path) -> list[tuple[str, Any]]:
        """A predictions-file phase (no predictions.json): the (case id, source) pairs found in
        /input. By default the challenge takes algorithm submissions only."""
        raise SubmissionError("This phase evaluates algorithm jobs, but the input has no predictions.json; "
                              "submit an algorithm, not a predictions file.")

    def case_truth(self, case: Case) -> Any:
        """What load_prediction and score_case get of this case's ground truth, in the process
        scoring the case: by default the entry load_ground_truth gave. Override to read a case's
        ground-truth file here, in the workers, rather than every file at start in one process
        (csv2026: 300 small files, whose reading at start was a fifth of the run)."""
        return self.ground_truth[case.case_id]

    def load_prediction(self, case: Case, ground_truth: Any) -> Any:
        """Read and validate one case's prediction (SubmissionError naming the case): an
        algorithm job's outputs, or what a predictions-file phase gave for the case."""
        if case.job is not None:
            return self.read_job_prediction(case, ground_truth)
        return self.read_file_prediction(case, ground_truth)

    def read_job_prediction(self, case: Case, ground_truth: Any) -> Any:
        """An algorithm job's prediction, from its outputs (case.read_json, case.image)."""
        raise NotImplementedError

    def read_file_prediction(self, case: Case, ground_truth: Any) -> Any:
        """A predictions-file phase's prediction for one case, from what file_cases gave it
        (case.source); read files through case.origin."""
        raise NotImplementedError

    def score_case(self, case: Case, prediction: Any, ground_truth: Any) -> Any:
        """Per-case result (small: it is kept until the end). Default: the prediction itself."""
        return prediction

    def score_aggregates(self, results: dict[str, Any]) -> dict[str, Any]:
        """The metrics.json content from every case's result, keyed by case id in sorted order."""
        raise NotImplementedError

    def ignored_case_ids(self) -> frozenset[str]:
        """Cases a submission may carry that are neither required nor scored (camelyon16's excluded
        slides): the run leaves them out before matching the submission to the ground truth."""
        return frozenset()

    def check_cases(self, cases: list[Case]) -> None:
        """A check of the whole matched submission before any case is scored (csv2026: an algorithm
        phase whose jobs carry their time needs a baseline time); by default none."""

    # ---- the ranked values: one aggregate for metrics.json and the final ranking's bootstrap ---

    def aggregate(self, results: dict[str, Any], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Every ranked value, from the per-case results (keyed by case id, sorted) and case
        weights: weights[r, j] is the weight of the j-th case of sorted(results) in row r, a whole
        number (a bootstrap resample: how many times the case was drawn). {path: float array
        (rows,)}, NaN where a row leaves a value undefined. The point value is the row of ones
        (point_values): metrics.json and the bootstrap share this one code path, so they are equal
        by construction. Vectorised over rows; the framework bounds rows x cases per call."""
        raise NotImplementedError(f"{self.name} does not aggregate its ranked values over case weights")

    def aggregator(self, results: dict[str, Any]) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
        """aggregate of these results as a function of the case weights alone: what the final
        ranking calls for each block of resamples. By default aggregate itself; a challenge whose
        aggregate first prepares what depends on the results only (ISIC: each category's sort)
        overrides this to prepare it once per submission."""
        return functools.partial(self.aggregate, results)

    def point_values(self, results: dict[str, Any]) -> dict[str, float]:
        """The ranked values of the whole test set: aggregate with every case weighted once."""
        import numpy as np

        values = self.aggregator(results)(np.ones((1, len(results)), dtype=np.int64))
        return {path: float(row[0]) for path, row in values.items()}

    # ---- the final ranking's statistics (python -m evaluation.leaderboard) -----------------

    def resample_plan(self, resamples: int, seed: int) -> tuple[int, int, str | None]:
        """(resamples, seed, note) the statistics use: by default as asked, with no note."""
        return resamples, seed, None

    def ranking_resamples(self, results: dict[str, Any], resamples: int, seed: int) -> dict[str, np.ndarray]:
        """{path: (resamples,) array} of the ranked values on seeded bootstrap resamples of the
        cases. The draws depend only on the seed and the number of cases, so every submission
        of a final ranking gets the same ones (paired comparisons); drawn in blocks of bounded
        size, the same stream whatever the block size."""
        import numpy as np

        from evaluation.metrics.resampling import CaseDraws

        n = len(results)
        draws = CaseDraws(n, seed)
        block = max(1, min(self.workload.resample_rows, self.workload.resample_cells // max(1, n)))
        parts: dict[str, list[np.ndarray]] = {}
        aggregate = self.aggregator(results)
        for start in range(0, resamples, block):
            counts = draws.counts(min(block, resamples - start))
            for path, values in aggregate(counts).items():
                parts.setdefault(path, []).append(np.asarray(values, dtype=np.float64))
        return {path: np.concatenate(chunks) for path, chunks in parts.items()}

    def ranking_curves(self, results: dict[str, Any], metrics: dict[str, Any]) -> list[dict]:
        """Curves for the final ranking's report, drawn one line per submission: [{"chart": name,
        "title", "x_title", "y_title", "points": [[x, y], ...]}] (at most 500 points each)."""
        return []
