"""evaluation.metrics.overlap against independent computations: scikit-learn's F1 (Dice of two
masks is the F1 of their voxels), Jaccard score and confusion matrix, medpy's dc and jc,
SimpleITK's LabelOverlapMeasuresImageFilter, numpy's argwhere for bounding boxes."""

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score

import evaluation.metrics.overlap as overlap
from evaluation.metrics.overlap import (
    absolute_volume_difference,
    dice,
    dice_from_counts,
    jaccard,
    label_confusion,
    label_overlap_counts,
    overlap_counts,
    volume_similarity,
)


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


# ---- label_overlap_counts, jaccard, volume similarity, volume difference --------------------------


@pytest.mark.parametrize("dtype", [bool, np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint32, np.int64])
@pytest.mark.parametrize("shape", [(9, 11, 7), (300, 7), (13,), (2, 3, 4, 5), (0, 4)])
@pytest.mark.parametrize("small", [False, True])
def test_label_overlap_counts_equal_sklearn_and_argwhere(dtype, shape, small, monkeypatch):
    """Counts against scikit-learn's confusion matrix (its diagonal and margins), boxes against
    numpy's argwhere; `small` forces tiny slabs and the running minima for the boxes."""
    if small:
        monkeypatch.setattr(overlap, "_WORDS_PER_SLAB", 3)
        monkeypatch.setattr(overlap._LabelBoxes, "_LARGEST_TABLE", 1)
    rng = np.random.default_rng(len(shape) + np.dtype(dtype).itemsize)
    values = [0, 1] if dtype is bool else ([0, 1, 2, 5, -3, 100] if np.dtype(dtype).kind == "i" else [0, 1, 2, 5, 200])
    prediction = rng.choice(values, shape).astype(dtype)
    truth = np.where(rng.random(shape) < 0.7, prediction, rng.choice(values, shape)).astype(dtype)
    labels = [v for v in values if v != 0][::-1] + [7]  # 7 in neither map; 0 not asked
    if dtype is not bool and np.dtype(dtype).kind == "i":
        labels.append(-100)
    labels = [int(v) for v in np.array(labels).astype(dtype)] if dtype is not bool else [1, 7]
    labels = list(dict.fromkeys(labels))
    counts = label_overlap_counts(prediction, truth, labels)
    assert counts.labels.tolist() == labels
    if prediction.size:
        matrix = confusion_matrix(truth.ravel().astype(np.int64), prediction.ravel().astype(np.int64),
                                  labels=labels)
        np.testing.assert_array_equal(counts.intersection, np.diag(matrix))
    for i, label in enumerate(labels):
        assert counts.prediction_size[i] == np.count_nonzero(prediction == label)
        assert counts.truth_size[i] == np.count_nonzero(truth == label)
        where = np.argwhere((prediction == label) | (truth == label))
        expected = None if len(where) == 0 else tuple(
            slice(int(lo), int(hi) + 1) for lo, hi in zip(where.min(0), where.max(0), strict=True))
        assert counts.boxes[i] == expected


def test_label_overlap_counts_with_background_as_a_label_and_any_memory_order():
    rng = np.random.default_rng(8)
    truth = rng.integers(0, 4, (10, 12, 8)).astype(np.uint16)
    prediction = rng.integers(0, 4, (10, 12, 8)).astype(np.uint16)
    expected = label_overlap_counts(truth, prediction, [0, 3, 1])
    for transform in (np.asfortranarray, lambda a: np.repeat(a, 2, axis=1)[:, ::2]):
        counts = label_overlap_counts(transform(truth), transform(prediction), [0, 3, 1])
        for field in ("intersection", "prediction_size", "truth_size"):
            np.testing.assert_array_equal(getattr(counts, field), getattr(expected, field))
        assert counts.boxes == expected.boxes
    assert expected.intersection[0] == np.count_nonzero((truth == 0) & (prediction == 0))
    assert expected.boxes[0] == (slice(0, 10), slice(0, 12), slice(0, 8))


def test_per_label_dice_and_jaccard_equal_the_mask_functions():
    rng = np.random.default_rng(9)
    prediction, truth = rng.integers(0, 4, (20, 20)), rng.integers(0, 3, (20, 20))
    counts = label_overlap_counts(prediction, truth, [1, 2, 3, 9])
    for i, label in enumerate([1, 2, 3, 9]):
        assert counts.dice()[i] == dice(prediction == label, truth == label)
        assert counts.jaccard(both_empty=0.5)[i] == jaccard(prediction == label, truth == label, both_empty=0.5)
    assert counts.dice()[3] == 1.0 and counts.dice(both_empty=np.nan)[3] != counts.dice(both_empty=np.nan)[3]
    assert counts.dice(truth_empty=-1.0)[2] == -1.0  # label 3 only in the prediction


@pytest.mark.parametrize("seed", range(6))
def test_overlap_metrics_equal_sklearn_medpy_and_simpleitk(seed):
    import SimpleITK as sitk
    from medpy.metric.binary import dc, jc
    from sklearn.metrics import jaccard_score

    rng = np.random.default_rng(seed)
    shape = (7, 9, 11) if seed % 2 else (30, 31)
    truth, prediction = rng.random(shape) < 0.3, rng.random(shape) < rng.uniform(0.1, 0.6)
    assert jaccard(prediction, truth) == pytest.approx(jaccard_score(truth.ravel(), prediction.ravel()), abs=1e-15)
    assert jaccard(prediction, truth) == pytest.approx(jc(prediction, truth), abs=1e-15)
    assert dice(prediction, truth) == pytest.approx(dc(prediction, truth), abs=1e-15)
    measures = sitk.LabelOverlapMeasuresImageFilter()
    measures.Execute(*(sitk.GetImageFromArray(mask.astype(np.uint8)) for mask in (prediction, truth)))
    assert dice(prediction, truth) == pytest.approx(measures.GetDiceCoefficient(), abs=1e-12)
    assert jaccard(prediction, truth) == pytest.approx(measures.GetJaccardCoefficient(), abs=1e-12)
    assert volume_similarity(prediction, truth) == pytest.approx(1 - abs(measures.GetVolumeSimilarity()) / 2,
                                                                 abs=1e-12)
    spacing = tuple(rng.uniform(0.5, 3.0, len(shape)))
    assert absolute_volume_difference(prediction, truth, spacing) == pytest.approx(
        abs(int(prediction.sum()) - int(truth.sum())) * np.prod(spacing), rel=1e-12)


def test_overlap_empty_policies():
    empty, full = np.zeros((4, 5), dtype=bool), np.ones((4, 5), dtype=bool)
    for metric in (dice, jaccard, volume_similarity):
        assert metric(empty, empty) == 1.0 and metric(full, empty) == 0.0 and metric(empty, full) == 0.0
        assert np.isnan(metric(empty, empty, both_empty=np.nan))
        assert metric(full, empty, truth_empty=0.25) == 0.25 and metric(empty, full, prediction_empty=0.75) == 0.75
    assert absolute_volume_difference(empty, empty) == 0.0
    assert absolute_volume_difference(full, empty, spacing=(2.0, 0.5)) == 20.0


@pytest.mark.parametrize("call, message", [
    (lambda: dice(np.zeros((3, 3)), np.zeros((3, 4))), "differ in shape"),
    (lambda: dice(np.zeros(3), np.zeros(3), both_empty="one"), "both_empty must be a number"),
    (lambda: jaccard(np.full(3, np.nan), np.zeros(3)), "prediction holds NaN"),
    (lambda: absolute_volume_difference(np.zeros((3, 3)), np.zeros((3, 3)), spacing=(1.0, -1.0)), "spacing"),
    (lambda: absolute_volume_difference(np.zeros((3, 3)), np.zeros((3, 3)), spacing=(1.0,)), "spacing"),
    (lambda: label_overlap_counts(np.zeros(3), np.zeros(3, dtype=int), [1]), "label map of integers"),
    (lambda: label_overlap_counts(np.zeros(3, dtype=int), np.zeros(3, dtype=int), [1, 1]), "distinct"),
    (lambda: label_overlap_counts(np.zeros(3, dtype=int), np.zeros(3, dtype=int), [1.5]), "integers"),
    (lambda: label_overlap_counts(np.zeros(3, dtype=int), np.zeros(4, dtype=int), [1]), "differ in shape"),
])
def test_overlap_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()
