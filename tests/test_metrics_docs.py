"""docs/metrics.md documents every registered metric, as the registry gives it."""

from evaluation.metrics import docs
from evaluation.metrics.registry import all_metrics


def test_page_is_what_the_registry_gives():
    page = docs.PAGE.read_text(encoding="utf-8")
    assert docs.page_with(docs.generated(), page) == page, "run python -m evaluation.metrics.docs"


def test_every_metric_has_an_entry():
    page = docs.PAGE.read_text(encoding="utf-8")
    for name, metric in all_metrics().items():
        assert f"### `{name}`" in page
        assert f"from evaluation.metrics.{metric.module} import {name}" in page


def test_worked_examples_hold():
    """The page's worked examples (doctest blocks) give the numbers it prints, ours and the peers'."""
    import doctest
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # surface_distance's scipy imports
        result = doctest.testfile(str(docs.PAGE), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 10 and result.failed == 0


def test_multi_label_example_scores_each_label_as_the_single_mask_functions():
    """The page's 3D multi-label scoring runs, and gives per label what the mask functions give."""
    import re

    import numpy as np

    from evaluation.metrics.overlap import dice
    from evaluation.metrics.surface import hausdorff_distance, normalized_surface_dice

    page = docs.PAGE.read_text(encoding="utf-8")
    block = next(code for code in re.findall(r"```python\n(.*?)```", page, flags=re.S) if "def score_case" in code)
    namespace: dict = {}
    exec(block, namespace)  # the page's own code
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 6, (12, 20, 20)).astype(np.uint8)
    truth[:, :, :6] = 0
    prediction = truth.copy()
    prediction[rng.random(truth.shape) < 0.1] = 2
    prediction[prediction == 5] = 0  # a label missing from the prediction: the "diagonal" penalty
    spacing = (3.0, 0.98, 0.98)
    scores = namespace["score_case"](prediction, truth, spacing)
    for label, name in namespace["LABELS"].items():
        p, t = prediction == label, truth == label
        assert scores[name]["dice"] == dice(p, t)
        assert scores[name]["hd95"] == hausdorff_distance(p, t, spacing=spacing, percentile=95,
                                                          prediction_empty="diagonal")
        assert scores[name]["nsd_2mm"] == normalized_surface_dice(p, t, 2.0, spacing=spacing, boundary="voxels")
    diagonal = np.sqrt(sum((n * s) ** 2 for n, s in zip(truth.shape, spacing, strict=True)))
    assert scores["spinal_cord"]["hd95"] == diagonal
