"""CAMELYON16 building blocks, each step against the plain 2016-style computation
(benchmarks/camelyon16_reference.py: scipy distance transform and hole filling, scikit-image
label and regionprops, the script's loops) on synthetic masks and detections."""

import math

import numpy as np
import pytest
from scipy import ndimage
from skimage import measure

from benchmarks.camelyon16_reference import evaluation_mask_2016, fp_tp_2016, froc_2016, itc_labels_2016
from evaluation.challenges.camelyon16.evaluation_mask import (
    disk_kernel,
    distance_threshold,
    evaluation_mask,
    fill_holes,
    itc_threshold,
    major_axis_lengths,
)
from evaluation.metrics.froc import (
    SlideHits,
    froc_curve,
    froc_score,
    froc_sensitivities,
    normal_slide_hits,
    slide_hits,
)


def random_masks(seed, count, sizes=(12, 90)):
    """Sparse dots, dilated blobs, thin lines and rings, some touching the border."""
    rng = np.random.default_rng(seed)
    for n in range(count):
        h, w = (int(v) for v in rng.integers(*sizes, size=2))
        mask = rng.random((h, w)) < rng.choice([0.001, 0.01, 0.04, 0.2])
        if n % 3 == 1:
            mask = ndimage.binary_dilation(mask, iterations=int(rng.integers(1, 5)))
        if n % 4 == 2:
            r, c = int(rng.integers(0, h)), int(rng.integers(0, w))
            mask[r, :] = True if rng.random() < 0.5 else mask[r, :]
            mask[:, c] = True
        if mask.any():
            yield mask


def test_thresholds_are_the_2016_constants():
    assert distance_threshold(0.243, 5) == 75 / (0.243 * 32 * 2)
    assert distance_threshold(0.243, 5) == pytest.approx(4.8225, abs=1e-4)
    assert itc_threshold(0.243, 5) == 275 / (0.243 * 32)
    assert itc_threshold(0.243, 5) == pytest.approx(35.37, abs=1e-2)
    with pytest.raises(ValueError):
        distance_threshold(0.0, 5)


@pytest.mark.parametrize("radius", [4.822530864197531, 1.0, math.sqrt(2), math.sqrt(5), 2.5, 7.3, 10.0, 0.5])
def test_disk_dilation_equals_strict_distance_threshold(radius):
    """Including radii exactly equal to a pixel distance (1, sqrt 2, sqrt 5, 10): strictly below."""
    import cv2

    kernel = disk_kernel(radius)
    for mask in random_masks(int(radius * 100), 25):
        expected = ndimage.distance_transform_edt(~mask) < radius
        dilated = cv2.dilate(mask.astype(np.uint8), kernel, borderType=cv2.BORDER_CONSTANT, borderValue=0)
        assert np.array_equal(dilated.astype(bool), expected)


def test_fill_holes_equals_binary_fill_holes_with_its_default_structure():
    rng = np.random.default_rng(3)
    for _ in range(200):
        h, w = (int(v) for v in rng.integers(3, 60, size=2))
        binary = rng.random((h, w)) < rng.uniform(0.2, 0.8)
        assert np.array_equal(fill_holes(binary), ndimage.binary_fill_holes(binary))
    # Nested holes, and a hole reaching the outside only diagonally: filled (4-connected background).
    ring = np.zeros((15, 15), dtype=bool)
    ring[1:14, 1:14] = True
    ring[2:13, 2:13] = False
    ring[4:11, 4:11] = True
    ring[6:9, 6:9] = False
    diagonal = np.ones((5, 5), dtype=bool)
    diagonal[0, 0] = False
    diagonal[1, 1] = False  # touches background (0, 0) only through a corner
    for binary in (ring, diagonal):
        assert np.array_equal(fill_holes(binary), ndimage.binary_fill_holes(binary))
    assert fill_holes(diagonal)[1, 1] and not fill_holes(diagonal)[0, 0]


def assert_same_regions(ours, theirs):
    """Same pixels, same partition into regions (labels may be numbered differently)."""
    assert np.array_equal(ours > 0, theirs > 0)
    pairs = set(zip(theirs[theirs > 0].tolist(), ours[ours > 0].tolist(), strict=True))
    assert len(pairs) == theirs.max() == ours.max()
    return dict(pairs)


@pytest.mark.parametrize("pixel_size, level", [(0.243, 5), (0.243, 4), (0.5, 5), (2.0, 3)])
def test_evaluation_mask_and_itc_equal_the_2016_pipeline(pixel_size, level):
    for mask in random_masks(level * 10 + int(pixel_size * 10), 40, sizes=(20, 140)):
        ours = evaluation_mask(mask.astype(np.uint8) * 255, pixel_size, level)
        theirs = evaluation_mask_2016(mask, pixel_size, level)
        mapping = assert_same_regions(ours.full_labels(), theirs)
        itc = set(itc_labels_2016(theirs, pixel_size, level))
        assert {k for k in mapping if ours.itc[mapping[k] - 1]} == itc
        assert ours.lesions == theirs.max() - len(itc)


def test_major_axis_equals_regionprops_on_thin_tiny_and_large_regions():
    rng = np.random.default_rng(11)
    labels = np.zeros((400, 500), dtype=np.int64)
    label = 0

    def add(rr, cc):
        nonlocal label
        label += 1
        labels[rr, cc] = label

    add(5, 5)  # a single pixel: axis 0
    add(10, slice(10, 60))  # a horizontal line
    add(slice(20, 200), 80)  # a vertical line
    diagonal = np.arange(100)
    add(250 + diagonal // 2, 100 + diagonal)  # a thin diagonal
    add(slice(300, 302), slice(300, 303))  # tiny block
    add(slice(320, 399), slice(400, 499))  # large block far from the origin
    for _ in range(150):  # random blobs of every size
        r, c = int(rng.integers(0, 380)), int(rng.integers(150, 480))
        blob = rng.random((int(rng.integers(1, 20)), int(rng.integers(1, 20)))) < 0.7
        window = labels[r:r + blob.shape[0], c:c + blob.shape[1]]
        blob = blob[:window.shape[0], :window.shape[1]] & (window == 0)
        if blob.any():
            label += 1
            window[blob] = label
    present = np.unique(labels[labels > 0])  # a blob may have found no free pixel: renumber
    renumber = np.zeros(label + 1, dtype=np.int64)
    renumber[present] = np.arange(1, len(present) + 1)
    labels = renumber[labels]
    expected = np.array([p.axis_major_length for p in measure.regionprops(labels)])
    ours = major_axis_lengths(labels)
    assert len(ours) == len(expected) > 100
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-9)
    threshold = itc_threshold(0.243, 5)
    assert np.array_equal(ours < threshold, expected < threshold)


def test_itc_threshold_is_strict_near_35_37_pixels():
    """A horizontal line of n pixels has major axis 4·sqrt((n² - 1) / 12): 31 pixels give 35.77
    (a lesion), 30 give 34.61 (ITC); our lengths equal regionprops' on both sides."""
    for n, is_itc in ((30, True), (31, False)):
        labels = np.zeros((3, 40), dtype=np.int64)
        labels[1, 2:2 + n] = 1
        length = major_axis_lengths(labels)[0]
        assert length == pytest.approx(measure.regionprops(labels)[0].axis_major_length, abs=1e-12)
        assert (length < itc_threshold(0.243, 5)) == is_itc


# ---- detections, FROC and score ---------------------------------------------------------------


def synthetic_slides(seed, slides=8, digits=None):
    """Random label images with ITC and lesion regions, detections on and off them."""
    rng = np.random.default_rng(seed)
    cases = []
    for n in range(slides):
        tumor = n % 2 == 0
        count = int(rng.integers(0, 60))
        probs = rng.random(count)
        if digits is not None:
            probs = probs.round(digits)
        probs[rng.random(count) < 0.1] = 0.0
        if tumor:
            mask = np.zeros((60, 80), dtype=bool)
            for _ in range(int(rng.integers(1, 5))):
                r, c = int(rng.integers(0, 55)), int(rng.integers(0, 70))
                mask[r:r + int(rng.integers(1, 6)), c:c + int(rng.integers(1, 16))] = True
            # 13.75 µm pixels at level 1: ITC below 10 px, dilation 1.4 px, so both kinds occur.
            labels = evaluation_mask_2016(mask, 13.75, 1)
            itc = itc_labels_2016(labels, 13.75, 1)
        else:
            labels, itc = None, []
        xs = rng.integers(0, 80 * 2, count).astype(float)
        ys = rng.integers(0, 60 * 2, count).astype(float)
        cases.append((tumor, labels, itc, probs, xs, ys))
    return cases


def ours_and_theirs(cases, rule):
    ours, fp_lists, tp_lists, counts = [], [], [], []
    for tumor, labels, itc, probs, xs, ys in cases:
        fps, tps, count = fp_tp_2016(probs.tolist(), xs, ys, tumor, labels, itc, 1,
                                     slot_dtype=np.float32 if rule == "2016" else np.float64)
        fp_lists.append(fps)
        tp_lists.append(tps)
        counts.append(count)
        if tumor:
            hit = labels[(ys // 2).astype(int), (xs // 2).astype(int)]
            is_itc = np.isin(np.arange(1, labels.max() + 1), itc)
            ours.append(slide_hits(hit, probs, is_itc))
        else:
            ours.append(normal_slide_hits(probs))
    return ours, froc_2016(fp_lists, tp_lists, counts, corrected=rule == "corrected")


@pytest.mark.parametrize("rule", ["2016", "corrected"])
@pytest.mark.parametrize("digits", [None, 2, 4])
@pytest.mark.parametrize("seed", range(6))
def test_froc_equals_the_script_loops(rule, digits, seed):
    """Full-precision confidences (not float32-representable: the 2016 slots round them) and
    rounded ones (ties between false positives and lesions)."""
    cases = synthetic_slides(seed, digits=digits)
    ours, (fp_rates, sensitivities, at_targets, score) = ours_and_theirs(cases, rule)
    if sum(h.lesions for h in ours) == 0:
        pytest.skip("no lesion drawn")
    curve = froc_curve(ours, rule)
    np.testing.assert_array_equal(curve.fp_rates, fp_rates)
    np.testing.assert_array_equal(curve.sensitivities, sensitivities)
    np.testing.assert_array_equal(froc_sensitivities(curve), at_targets)
    assert froc_score(curve) == score


def test_2016_rule_drops_the_smallest_confidence_when_every_lesion_is_found():
    """No zero slot (one lesion, found, no ITC): the 2016 rule drops the smallest real
    confidence; the corrected rule keeps it."""
    hits = [slide_hits(np.array([1, 0, 0]), np.array([0.9, 0.3, 0.6]), np.array([False]))]
    fp_lists, tp_lists = [[0.3, 0.6]], [[np.float32(0.9)]]
    for rule in ("2016", "corrected"):
        curve = froc_curve(hits, rule)
        expected = froc_2016(fp_lists, tp_lists, [1], corrected=rule == "corrected")
        np.testing.assert_array_equal(curve.fp_rates, expected[0])
        assert froc_score(curve) == expected[3]
    assert list(froc_curve(hits, "2016").fp_rates) == [1.0, 0.0, 0.0]  # thresholds 0.6, 0.9
    assert list(froc_curve(hits, "corrected").fp_rates) == [2.0, 1.0, 0.0, 0.0]


def test_float32_slots_as_in_2016():
    """A lesion found at 0.1 (float32 0.100000001) and a false positive at 0.1 (float64): the
    2016 thresholds hold both values, the corrected rule one."""
    hits = [slide_hits(np.array([1, 0]), np.array([0.1, 0.1]), np.array([False])), normal_slide_hits([0.05])]
    assert len(froc_curve(hits, "2016").thresholds) == 2  # 0.05 dropped; 0.1 and float32(0.1)
    assert len(froc_curve(hits, "corrected").thresholds) == 2  # 0.05 and 0.1
    expected = froc_2016([[0.1], [0.05]], [[np.float32(0.1)], []], [1, 0])
    np.testing.assert_array_equal(froc_curve(hits, "2016").sensitivities, expected[1])


def test_no_detections_scores_zero_and_beyond_the_last_rate_is_the_highest_sensitivity():
    empty = [slide_hits(np.zeros(0, dtype=int), np.zeros(0), np.array([False, True])), normal_slide_hits([])]
    for rule in ("2016", "corrected"):
        curve = froc_curve(empty, rule)
        assert froc_score(curve) == 0.0
    # One lesion found at 0.8 and one FP on two slides (0.5 FP per slide at most).
    hits = [slide_hits(np.array([1, 0]), np.array([0.8, 0.4]), np.array([False])), normal_slide_hits([])]
    curve = froc_curve(hits, "corrected")
    assert list(froc_sensitivities(curve)) == [1.0] * 6
    assert froc_score(curve) == 1.0


def test_hits_keep_the_largest_confidence_and_ignore_itc():
    hits = slide_hits(np.array([0, 1, 1, 2, 3, 0]), np.array([0.1, 0.2, 0.7, 0.9, 0.4, 0.3]),
                      np.array([False, True, False]))
    assert list(hits.false_positives) == [0.1, 0.3]
    assert list(hits.lesion_confidences) == [0.7, 0.4]  # region 2 is ITC: its 0.9 is neither TP nor FP
    assert hits.itc_regions == 1


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="non-negative"):
        froc_curve([normal_slide_hits([-0.1]), slide_hits(np.array([1]), np.array([0.5]), np.array([False]))])
    with pytest.raises(ValueError, match="no lesion"):
        froc_curve([normal_slide_hits([0.1])])
    with pytest.raises(ValueError, match="finite"):
        normal_slide_hits([float("nan")])
    with pytest.raises(ValueError, match="rule"):
        froc_curve([normal_slide_hits([0.1])], rule="2017")
    with pytest.raises(ValueError, match="labels"):
        slide_hits(np.array([3]), np.array([0.5]), np.array([False]))
    with pytest.raises(ValueError, match="hit_labels"):  # 1.7 is no region (it was read as region 1)
        slide_hits(np.array([1.7, 0.2]), np.array([0.5, 0.6]), np.array([False]))


# ---- the every_score rule (the points FROC): scores of any sign, -inf for a missed lesion --------


def test_every_score_rule_is_the_corrected_rule_on_nonnegative_confidences():
    """On confidences >= 0 with no detection at 0, the rules differ only in the missed lesion's
    marker (0 or -inf): the same curve."""
    rng = np.random.default_rng(0)
    for _ in range(30):
        slides = []
        for _ in range(int(rng.integers(1, 6))):
            lesions = rng.random(int(rng.integers(0, 4))) + 0.01
            missed = rng.random(len(lesions)) < 0.3
            slides.append((rng.random(int(rng.integers(0, 9))) + 0.01, lesions, missed))
        if sum(len(lesions) for _, lesions, _ in slides) == 0:
            continue
        corrected = froc_curve([SlideHits(f, np.where(m, 0.0, s), 0) for f, s, m in slides], "corrected")
        every = froc_curve([SlideHits(f, np.where(m, -np.inf, s), 0) for f, s, m in slides], "every_score")
        for name in ("thresholds", "fp_rates", "sensitivities"):
            assert getattr(every, name).tolist() == getattr(corrected, name).tolist()


def test_every_score_weighted_sensitivities_are_bit_identical_to_the_curve():
    """Negative and tied scores, missed lesions, areas: each row of weights as the materialised
    slides' curve, exactly."""
    from evaluation.metrics.froc import mean_sensitivity, weighted_froc_sensitivities

    rng = np.random.default_rng(7)
    pool = np.array([-3.0, -0.5, 0.0, 0.25, 0.5, 2.0])
    targets = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    for trial in range(40):
        slides = []
        for _ in range(int(rng.integers(1, 8))):
            draw = (lambda k: rng.choice(pool, k)) if trial % 2 else (lambda k: rng.normal(0, 2, k))
            lesions = draw(int(rng.integers(0, 4)))
            lesions[rng.random(len(lesions)) < 0.3] = -np.inf
            slides.append(SlideHits(draw(int(rng.integers(0, 12))), lesions, 0, float(rng.choice([1.0, 0.5, 3.0]))))
        counts = rng.integers(0, 3, (25, len(slides)))
        sensitivities = weighted_froc_sensitivities(slides, counts, "every_score", targets)
        scores = mean_sensitivity(sensitivities)
        for row, at_targets, value in zip(counts, sensitivities, scores, strict=True):
            drawn = [s for s, times in zip(slides, row, strict=True) for _ in range(times)]
            if sum(s.lesions for s in drawn) == 0:
                assert np.isnan(value)
                continue
            expected = froc_sensitivities(froc_curve(drawn, "every_score"), targets)
            assert at_targets.tolist() == expected.tolist()


def test_every_score_rule_refuses_nan_and_infinite_false_positives():
    with pytest.raises(ValueError, match="finite"):
        froc_curve([SlideHits(np.array([np.inf]), np.array([0.5]), 0)], "every_score")
    with pytest.raises(ValueError, match="finite"):
        froc_curve([SlideHits(np.array([0.5]), np.array([np.nan]), 0)], "every_score")
    with pytest.raises(ValueError, match="non-negative"):
        froc_curve([SlideHits(np.array([0.5]), np.array([-np.inf]), 0)], "corrected")
