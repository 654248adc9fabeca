"""CSV 2026 compares the structures of a view inside the box where either label map has a label,
without making full-size masks: its Dice and NSD must be those of the whole image, computed here
on full-size masks by numpy and by the NSD's brute-force definition (pixel borders, pairwise
distances, scipy)."""

import numpy as np
import pytest
from scipy import ndimage
from scipy.spatial.distance import cdist

from evaluation.challenges.csv2026.scoring import labelled_box, structure_scores
from evaluation.challenges.csv2026.truth import LabelMap, label_map


def brute_force_nsd(prediction, truth, tolerance):
    def border(mask):
        eroded = ndimage.binary_erosion(mask, ndimage.generate_binary_structure(2, 1), border_value=0)
        return np.argwhere(mask & ~eroded)

    p, t = border(prediction), border(truth)
    if len(p) == 0 and len(t) == 0:
        return 1.0
    if len(p) == 0 or len(t) == 0:
        return 0.0
    distances = cdist(p, t)
    within = (distances.min(axis=1) <= tolerance).sum() + (distances.min(axis=0) <= tolerance).sum()
    return float(within / (len(p) + len(t)))


def numpy_dice(prediction, truth):
    total = prediction.sum() + truth.sum()
    return 1.0 if total == 0 else 2.0 * (prediction & truth).sum() / total


def random_labels(rng, shape, vessel, plaque, empty=False):
    array = np.zeros(shape, np.uint8)
    if empty:
        return array
    for value in (vessel, plaque):
        for _ in range(int(rng.integers(0, 3))):
            r, c = rng.integers(0, shape[0]), rng.integers(0, shape[1])
            array[r:r + rng.integers(1, 12), c:c + rng.integers(1, 15)] = value
    return array


@pytest.mark.parametrize("seed", range(40))
def test_structure_scores_are_those_of_the_whole_image(seed):
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 30)), int(rng.integers(1, 30)))
    predicted = LabelMap(random_labels(rng, shape, 2, 1, empty=seed % 7 == 0), 2, 1)  # class indices
    true = LabelMap(random_labels(rng, shape, 255, 128, empty=seed % 5 == 0), 255, 128)
    for tolerance in (3.0, 1.5):
        scores = structure_scores(predicted, true, tolerance)
        for structure, (dsc, nsd) in zip(("vessel", "plaque"), scores, strict=True):
            p = predicted.array == predicted.value(structure)
            t = true.array == true.value(structure)
            assert dsc == numpy_dice(p, t)
            assert nsd == pytest.approx(brute_force_nsd(p, t, tolerance), abs=1e-15)


def test_labelled_box_bounds_every_label_of_either_map():
    first, second = np.zeros((6, 8), np.uint8), np.zeros((6, 8), np.int64)
    assert labelled_box(first, first) == (slice(0, 0), slice(0, 0))
    first[1, 6], second[4, 2] = 255, 1
    assert labelled_box(first, second) == (slice(1, 5), slice(2, 7))


@pytest.mark.parametrize("values, valid", [((0, 128, 255), True), ((0, 255), True), ((0,), True),
                                           ((0, 1, 128), False), ((0, 128, 254), False), ((3,), False)])
def test_label_map_accepts_background_vessel_and_plaque_only(values, valid):
    array = np.array(values * 4, dtype=np.uint8).reshape(-1, len(values))
    found = label_map(array, 255, 128)
    assert (found is not None) == valid == bool(np.isin(array, (0, 128, 255)).all())
    float_array = array.astype(np.float32)
    float_array[0, 0] = np.nan
    assert label_map(float_array, 255, 128) is None
