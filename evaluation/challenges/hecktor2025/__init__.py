"""HECKTOR 2025: head-and-neck cancer in PET/CT (docs/challenges/hecktor2025.md). Three tasks, three
leaderboards, one evaluation image each; this file declares them: their ranked values (each once,
a Column), leaderboards and final rankings.

  hecktor2025-task1  GTVp / GTVn segmentation and GTVn detection (segmentation.py)
  hecktor2025-task2  recurrence-free survival: Harrell's C-index with a bootstrap interval (survival.py)
  hecktor2025-task3  HPV status: balanced accuracy, sensitivity, specificity with bootstrap intervals (hpv.py)

What the tasks share (patient ids, sockets, settings, the patient CSVs and bootstrap): common.py.
"""

from evaluation.challenges.hecktor2025.common import interval_columns
from evaluation.challenges.hecktor2025.hpv import HpvTask
from evaluation.challenges.hecktor2025.ranking import NestedBorda
from evaluation.challenges.hecktor2025.segmentation import SegmentationTask
from evaluation.challenges.hecktor2025.survival import SurvivalTask
from evaluation.declarations.columns import ABSOLUTE, MEAN_OF_RANKS, Column, Leaderboard
from evaluation.declarations.ranking_rules import OrderedRanking

__all__ = ["HecktorTask1", "HecktorTask2", "HecktorTask3"]

# The packages of requirements.txt each task's image installs (their pins stay there), numpy's
# dependencies included, read from this file's text before anything is installed
# (evaluation/image_requirements.py). Task 1: NIfTI / MHA masks (SimpleITK), 26-connected lesions
# (cc3d), the 'hungarian' lesion matching (scipy); tasks 2 and 3: CSV and JSON values, numpy alone.
# tests/test_image_requirements.py scores each bundled example with every other package blocked.
RUNTIME_PACKAGES = {
    "hecktor2025-task1": ("numpy", "SimpleITK", "connected-components-3d", "scipy"),
    "hecktor2025-task2": ("numpy",),
    "hecktor2025-task3": ("numpy",),
}

# ---- Task 1: the ranked values ------------------------------------------------------------------

GTVP_DSC = Column("GTVp Dice (mean over patients)", "aggregates.gtvp_dsc_mean", "desc")
GTVN_DSC = Column("GTVn Dice (aggregated)", "aggregates.gtvn_dsc_agg", "desc")
GTVN_F1 = Column("GTVn detection F1 (aggregated)", "aggregates.gtvn_f1_agg", "desc")
GTVN_TP = Column("GTVn lesions found (TP)", "aggregates.gtvn_tp", "desc", exclude_from_ranking=True)
GTVN_FP = Column("GTVn false positive lesions (FP)", "aggregates.gtvn_fp", "asc", exclude_from_ranking=True)
GTVN_FN = Column("GTVn lesions missed (FN)", "aggregates.gtvn_fn", "asc", exclude_from_ranking=True)


class HecktorTask1(SegmentationTask):
    name = "hecktor2025-task1"
    title = "HECKTOR 2025 Task 1: GTVp mean Dice, GTVn aggregated Dice and aggregated detection F1 (PET/CT)"
    gtvp_dsc, gtvn_dsc, gtvn_f1, gtvn_tp, gtvn_fp, gtvn_fn = GTVP_DSC, GTVN_DSC, GTVN_F1, GTVN_TP, GTVN_FP, GTVN_FN
    # HECKTOR 2025 ranks by a Borda count of the GTVp rank and the GTVn rank, itself the Borda count of
    # the aggregated-Dice and F1 ranks (hecktor2025.md). The platform's closest is the mean of the
    # three ranks ("avg"): it weighs them 1/3 each, not 1/2, 1/4, 1/4, and cannot weigh a metric
    # by listing it twice (ranks are keyed by path). The lesion counts are shown, excluded.
    leaderboards = (Leaderboard(score=GTVP_DSC, decimal_places=4, scoring_method=MEAN_OF_RANKS,
                                extra_columns=(GTVN_DSC, GTVN_F1, GTVN_TP, GTVN_FP, GTVN_FN)),)
    # The official ranking across submissions (python -m evaluation.leaderboard): the nested Borda
    # count of the GTVp rank and the GTVn rank (Borda of the aggregated-Dice and F1 ranks).
    final_rankings = (NestedBorda("borda", gtvp=GTVP_DSC, gtvn_dsc=GTVN_DSC, gtvn_f1=GTVN_F1),)


# ---- Task 2: the ranked value -------------------------------------------------------------------

C_INDEX = Column("C-index (Harrell)", "aggregates.c_index", "desc")


def task2_leaderboard(level: float) -> Leaderboard:
    """Ranked on the C-index of the whole test set (hecktor2025.md), its interval beside it."""
    return Leaderboard(score=C_INDEX, decimal_places=4, scoring_method=ABSOLUTE,
                       extra_columns=interval_columns("C-index", C_INDEX, level))


class HecktorTask2(SurvivalTask):
    name = "hecktor2025-task2"
    title = "HECKTOR 2025 Task 2: recurrence-free survival, Harrell's C-index with a bootstrap 95% interval"
    c_index = C_INDEX
    interval_values = ((C_INDEX, "C-index"),)
    leaderboard_at = staticmethod(task2_leaderboard)  # at the phase's confidence level
    # The final ranking across submissions (python -m evaluation.leaderboard): the C-index alone.
    final_rankings = (OrderedRanking("c_index", (C_INDEX,)),)


# ---- Task 3: the ranked values ------------------------------------------------------------------

BALANCED_ACCURACY = Column("Balanced accuracy (HPV status)", "aggregates.balanced_accuracy", "desc")
# The platform gives tied scores one rank and has no tie-break, so specificity is a column beside
# the score, excluded from ranking, read by hand for ties; the final ranking applies it.
SPECIFICITY = Column("Specificity (tie-break)", "aggregates.specificity", "desc", exclude_from_ranking=True)
SENSITIVITY = Column("Sensitivity", "aggregates.sensitivity", "desc", exclude_from_ranking=True)


def task3_leaderboard(level: float) -> Leaderboard:
    """Ranked on balanced accuracy, ties to the higher specificity (hecktor2025.md); specificity,
    sensitivity and the intervals beside it."""
    return Leaderboard(
        score=BALANCED_ACCURACY,
        decimal_places=4,
        scoring_method=ABSOLUTE,
        extra_columns=(
            SPECIFICITY,
            SENSITIVITY,
            *interval_columns("Balanced accuracy", BALANCED_ACCURACY, level),
            *interval_columns("Specificity", SPECIFICITY, level),
            *interval_columns("Sensitivity", SENSITIVITY, level),
        ),
    )


class HecktorTask3(HpvTask):
    name = "hecktor2025-task3"
    title = "HECKTOR 2025 Task 3: HPV status, balanced accuracy (ties: specificity) with bootstrap 95% intervals"
    balanced_accuracy, sensitivity, specificity = BALANCED_ACCURACY, SENSITIVITY, SPECIFICITY
    # metrics.json's order: balanced accuracy, sensitivity, specificity (the names are error messages')
    interval_values = ((BALANCED_ACCURACY, "balanced_accuracy"), (SENSITIVITY, "sensitivity"),
                       (SPECIFICITY, "specificity"))
    leaderboard_at = staticmethod(task3_leaderboard)  # at the phase's confidence level
    # The final ranking across submissions: balanced accuracy, ties to the higher specificity (the
    # tie-break the platform cannot apply).
    final_rankings = (OrderedRanking("balanced_accuracy", (BALANCED_ACCURACY, SPECIFICITY)),)
