"""The ranked values and the leaderboard's columns of ISIC, each declared once: the leaderboard
(__init__.py), the metrics.json assembly (scoring.py) and the chart (charts.py) read their paths
from here, so no metrics.json key is typed twice."""

from __future__ import annotations

from evaluation.declarations.columns import Column

# The reference scorer's per-category metrics, in its order: metrics.json's per_category and
# macro_average keys.
CONFUSION_METRICS = ("accuracy", "sensitivity", "specificity", "dice", "ppv", "npv")
RANKING_METRICS = ("auc", "auc_sens_80", "ap")
PER_CATEGORY_METRICS = CONFUSION_METRICS + RANKING_METRICS  # the reference's order

OVERALL = "overall"  # metrics.json's score: the value of the target metric
MACRO_AVERAGE = "macro_average"  # metrics.json's means over categories, by PER_CATEGORY_METRICS
AGGREGATE = "aggregate"  # metrics.json's values over all categories at once


def macro_average_path(metric: str) -> str:
    """The metrics.json path of the mean over categories of a per-category metric."""
    if metric not in PER_CATEGORY_METRICS:
        raise ValueError(f"{metric!r} is not a per-category metric ({', '.join(PER_CATEGORY_METRICS)})")
    return f"{MACRO_AVERAGE}.{metric}"


def key_in(section: str, column: Column) -> str:
    """The key of `column` inside metrics.json's `section` (its path is section.key)."""
    head, _, key = column.path.partition(".")
    if head != section or not key or "." in key:
        raise ValueError(f"column {column.path!r} is not a key of {section!r}")
    return key


BALANCED_ACCURACY = Column("Balanced multi-class accuracy", f"{AGGREGATE}.balanced_accuracy", "desc",
                           exclude_from_ranking=True)
MEAN_AUC = Column("Mean AUC (tie-break)", f"{AGGREGATE}.auc", "desc", exclude_from_ranking=True)
MEAN_AUC80 = Column("Mean AUC above 80% sensitivity", macro_average_path("auc_sens_80"), "desc",
                    exclude_from_ranking=True)
MEAN_AP = Column("Mean average precision", macro_average_path("ap"), "desc", exclude_from_ranking=True)
MEAN_SENSITIVITY = Column("Mean sensitivity", macro_average_path("sensitivity"), "desc", exclude_from_ranking=True)
MEAN_SPECIFICITY = Column("Mean specificity", macro_average_path("specificity"), "desc", exclude_from_ranking=True)
MEAN_DICE = Column("Mean Dice", macro_average_path("dice"), "desc", exclude_from_ranking=True)
EXTRA_COLUMNS = (BALANCED_ACCURACY, MEAN_AUC, MEAN_AUC80, MEAN_AP, MEAN_SENSITIVITY, MEAN_SPECIFICITY, MEAN_DICE)
