"""evaluation.metrics.overlap against independent computations: scikit-learn's F1 (Dice of two
masks is the F1 of their voxels) and confusion matrix, numpy's argwhere for bounding boxes."""

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score

import evaluation.metrics.overlap as overlap
from evaluation.metrics.overlap import dice, dice_from_counts, label_confusion, overlap_counts


@pytest.mark.parametrize("seed", range(5))
def test_dice_equals_sklearn_f1(seed):
    rng = np.random.default_rng(seed)
    truth, prediction = rng.random((7, 9, 11)) < 0.3, rng.random((7, 9, 11)) < 0.4
    assert dice(prediction, truth) == pytest.approx(f1_score(truth.ravel(), prediction.ravel()), abs=1e-15)
    intersection, predicted, true = overlap_counts(prediction, truth)
    assert (intersection, predicted, true) == ((truth & prediction).sum(), prediction.sum(), truth.sum())


def test_dice_empty_conventions_and_weights():
    empty = np.zeros((3, 3), dtype=bool)
    assert dice(empty, empty) == 1.0
    assert dice(empty, empty, both_empty=0.0) == 0.0
    assert dice(empty, ~empty) == 0.0
    assert dice_from_counts(2.5, 3.0, 2.0) == 1.0  # weighted sizes (e.g. mm³) are fine
    with pytest.raises(ValueError, match="shape"):
        overlap_counts(empty, np.zeros((3, 4), dtype=bool))


@pytest.mark.parametrize("shape", [(8, 8, 8), (5, 7, 3), (1, 1, 13), (300, 7), (2, 3, 4, 5), (0, 4)])
@pytest.mark.parametrize("slab_words", [1 << 20, 3])
def test_label_confusion_equals_sklearn_confusion_matrix(shape, slab_words, monkeypatch):
    monkeypatch.setattr(overlap, "_WORDS_PER_SLAB", slab_words)
    rng = np.random.default_rng(sum(shape) + slab_words)
    truth = (rng.random(shape) < 0.2) * rng.integers(1, 4, shape)
    prediction = (rng.random(shape) < 0.2) * rng.integers(1, 6, shape)
    truth, prediction = truth.astype(np.uint8), prediction.astype(np.uint8)
    counts, box = label_confusion(truth, prediction, box_label=2)
    if truth.size:
        expected = confusion_matrix(truth.ravel(), prediction.ravel(), labels=range(256))
        assert np.array_equal(counts, expected)
    assert counts.sum() == truth.size
    where = np.argwhere((truth == 2) | (prediction == 2))
    if len(where) == 0:
        assert box is None
    else:
        assert box == tuple(slice(int(lo), int(hi) + 1) for lo, hi in zip(where.min(0), where.max(0), strict=True))


def test_label_confusion_high_labels_and_empty_maps():
    truth = np.zeros((4, 4, 4), dtype=np.uint8)
    prediction = truth.copy()
    prediction[3, 3, 3] = 255
    counts, box = label_confusion(truth, prediction, box_label=2)
    assert counts[0, 255] == 1 and counts[0, 0] == 63 and box is None
    counts, box = label_confusion(truth, truth)
    assert counts[0, 0] == 64 and counts.sum() == 64 and box is None


def test_label_confusion_rejects_other_types_and_shapes():
    with pytest.raises(ValueError, match="uint8"):
        label_confusion(np.zeros(8, dtype=np.int16), np.zeros(8, dtype=np.uint8))
    with pytest.raises(ValueError, match="shape"):
        label_confusion(np.zeros(8, dtype=np.uint8), np.zeros(9, dtype=np.uint8))


def test_label_confusion_accepts_non_contiguous_views():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 3, (6, 10, 10)).astype(np.uint8)
    prediction = rng.integers(0, 3, (6, 10, 10)).astype(np.uint8)
    view_t, view_p = truth[:, ::2, 1:], prediction[:, ::2, 1:]
    counts, _ = label_confusion(view_t, view_p)
    assert np.array_equal(counts[:3, :3], confusion_matrix(view_t.ravel(), view_p.ravel(), labels=[0, 1, 2]))


def test_counts_in_arrays_give_one_dice_and_one_f1_per_element():
    """dice_from_counts and f1_from_counts on arrays of (weighted) counts, e.g. one per bootstrap
    row: each element equal to the scalar call, and to scikit-learn's f1_score of the confusion."""
    from evaluation.metrics.instances import f1_from_counts

    rng = np.random.default_rng(3)
    tp, fp, fn = (rng.integers(0, 4, 40) for _ in range(3))
    tp[:3], fp[:3], fn[:3] = 0, 0, 0  # nothing to find, nothing found
    f1 = f1_from_counts(tp, fp, fn, all_zero=0.25)
    dsc = dice_from_counts(tp, tp + fp, tp + fn, both_empty=0.5)
    for k in range(40):
        assert f1[k] == f1_from_counts(int(tp[k]), int(fp[k]), int(fn[k]), all_zero=0.25)
        assert dsc[k] == dice_from_counts(int(tp[k]), int(tp[k] + fp[k]), int(tp[k] + fn[k]), both_empty=0.5)
        if tp[k] + fp[k] + fn[k]:
            y_true = [1] * (tp[k] + fn[k]) + [0] * fp[k]
            y_pred = [1] * tp[k] + [0] * fn[k] + [1] * fp[k]
            assert f1[k] == dsc[k] == pytest.approx(f1_score(y_true, y_pred), abs=1e-15)
    assert (f1[:3] == 0.25).all() and (dsc[:3] == 0.5).all()
    assert isinstance(f1_from_counts(1, 0, 0), float) and isinstance(dice_from_counts(1, 1, 1), float)


def test_a_nan_count_gives_nan_not_the_empty_masks_score():
    """A NaN size is not an empty mask (the scalar `if total == 0` this replaced gave NaN too)."""
    from evaluation.metrics.instances import f1_from_counts

    assert np.isnan(dice_from_counts(np.nan, np.nan, 2.0))
    assert np.isnan(f1_from_counts(np.nan, 0, 0))
    values = dice_from_counts(np.array([0.0, np.nan]), np.array([0.0, np.nan]), np.array([0.0, 1.0]))
    assert values[0] == 1.0 and np.isnan(values[1])
