"""evaluation.metrics.image_similarity against scikit-image: peak_signal_noise_ratio of the mask's
voxels, structural_similarity (its mean without a mask; with a mask, the mean of its full=True map
over the mask inside the border strip it leaves out, as SynthRAD2023's evaluation does), on 1D to
4D images, uniform and Gaussian windows, masks touching the border, and the slab-by-slab path.

Tolerances: 0 where the computation is the same; 1e-12 absolute on SSIM when the map is computed
slab by slab on a crop (scipy's uniform filter keeps a running sum that then starts elsewhere)."""

import math

import numpy as np
import pytest
from skimage.metrics import peak_signal_noise_ratio as skimage_psnr
from skimage.metrics import structural_similarity as skimage_ssim
from skimage.util import crop

import evaluation.metrics.image_similarity as module
from evaluation.metrics.image_similarity import (
    image_mean_absolute_error,
    peak_signal_noise_ratio,
    structural_similarity,
)


def ct_pair(rng, shape):
    truth = np.clip(rng.normal(0, 400, shape).round(), -1024, 3071)
    truth[tuple(slice(n // 4, n // 2) for n in shape)] = 1000
    prediction = np.clip(truth + rng.normal(0, 80, shape).round(), -1024, 3071)
    return prediction, truth


def masked_ssim_of_skimage(prediction, truth, mask, **options):
    """The mean of scikit-image's SSIM map over the mask, leaving out the strip its mean leaves out."""
    _, ssim_map = skimage_ssim(prediction, truth, full=True, **options)
    win_size = options.get("win_size") or (11 if options.get("gaussian_weights") else 7)
    pad = (win_size - 1) // 2
    return crop(ssim_map, pad)[crop(mask, pad)].mean(dtype=np.float64)


SHAPES = [(64,), (40, 37), (31, 28), (18, 17, 16), (12, 11, 13), (9, 8, 7, 9)]
OPTIONS = [{}, {"gaussian_weights": True}, {"gaussian_weights": True, "use_sample_covariance": False},
           {"win_size": 5}, {"win_size": 3, "K1": 0.02, "K2": 0.05}]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_ssim_equals_scikit_image(shape, options):
    rng = np.random.default_rng(len(shape) * 100 + shape[0])
    prediction, truth = ct_pair(rng, shape)
    window = options.get("win_size") or (11 if options.get("gaussian_weights") else 7)
    if min(shape) < window:
        pytest.skip("the window exceeds the image")
    expected = skimage_ssim(prediction, truth, data_range=4095.0, **options)
    assert structural_similarity(prediction, truth, data_range=4095.0, **options) == expected
    mask = rng.random(shape) < 0.4
    mask[(0,) * len(shape)] = True  # in the border strip: left out
    ours = structural_similarity(prediction, truth, mask, data_range=4095.0, **options)
    assert ours == pytest.approx(masked_ssim_of_skimage(prediction, truth, mask, data_range=4095.0, **options),
                                 abs=1e-12)


@pytest.mark.parametrize("slab_voxels", [1, 37, 600])
@pytest.mark.parametrize("gaussian", [False, True])
def test_ssim_slab_by_slab_equals_scikit_image(slab_voxels, gaussian, monkeypatch):
    monkeypatch.setattr(module, "_SLAB_VOXELS", slab_voxels)
    rng = np.random.default_rng(slab_voxels)
    prediction, truth = ct_pair(rng, (29, 24, 23))
    options = {"data_range": 4095.0, "gaussian_weights": gaussian}
    assert structural_similarity(prediction, truth, **options) == pytest.approx(
        skimage_ssim(prediction, truth, **options), abs=1e-12)
    for mask in (rng.random(truth.shape) < 0.3, truth > 500):  # scattered; a block off the border
        assert structural_similarity(prediction, truth, mask, **options) == pytest.approx(
            masked_ssim_of_skimage(prediction, truth, mask, **options), abs=1e-12)


def test_synthrad_2023_masked_ssim_procedure():
    """SynthRAD2023's ImageMetrics.ssim: clip both images to [−1024, 3000], fill outside the mask
    with −1024, shift by +1024, SSIM map with data_range 4024, mean over the mask after cropping
    3 voxels. The same preprocessing, then our call, gives the same number."""
    rng = np.random.default_rng(3)
    prediction, truth = ct_pair(rng, (20, 22, 19))
    mask = np.zeros(truth.shape, dtype=bool)
    mask[2:17, 4:20, 3:18] = rng.random((15, 16, 15)) < 0.9

    def synthrad_preprocess(image):
        image = np.clip(image, -1024.0, 3000.0)
        return np.where(mask, image, -1024.0) + 1024.0

    gt, pred = synthrad_preprocess(truth), synthrad_preprocess(prediction)
    _, ssim_map = skimage_ssim(gt, pred, data_range=4024.0, full=True)
    theirs = crop(ssim_map, 3)[crop(mask, 3)].mean(dtype=np.float64)
    assert structural_similarity(pred, gt, mask, data_range=4024.0) == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_psnr_and_mae_equal_scikit_image_and_synthrad(shape):
    rng = np.random.default_rng(sum(shape))
    prediction, truth = ct_pair(rng, shape)
    mask = rng.random(shape) < 0.5
    for data_range in (4095.0, 1.0, 123.5):
        assert peak_signal_noise_ratio(prediction, truth, data_range=data_range) == skimage_psnr(
            truth, prediction, data_range=data_range)
        assert peak_signal_noise_ratio(prediction, truth, mask, data_range=data_range) == pytest.approx(
            skimage_psnr(truth[mask], prediction[mask], data_range=data_range), rel=1e-14)
    # "truth": the truth's range over the whole image (SynthRAD2023's psnr without a range).
    assert peak_signal_noise_ratio(prediction, truth, mask, data_range="truth") == pytest.approx(
        skimage_psnr(truth[mask], prediction[mask], data_range=truth.max() - truth.min()), rel=1e-14)
    assert structural_similarity(prediction, truth, data_range="truth") == skimage_ssim(
        prediction, truth, data_range=truth.max() - truth.min())
    # SynthRAD's mae: np.sum(np.abs(gt * mask - pred * mask)) / mask.sum()
    binary = mask.astype(float)
    synthrad = np.sum(np.abs(truth * binary - prediction * binary)) / binary.sum()
    assert image_mean_absolute_error(prediction, truth, mask) == pytest.approx(synthrad, rel=1e-13)
    assert image_mean_absolute_error(prediction, truth) == pytest.approx(np.abs(prediction - truth).mean(), rel=1e-15)


def test_integer_images_and_masks_of_any_dtype_give_the_same_numbers():
    rng = np.random.default_rng(8)
    prediction, truth = ct_pair(rng, (21, 20, 19))
    mask = rng.random(truth.shape) < 0.5
    for metric in (image_mean_absolute_error, peak_signal_noise_ratio, structural_similarity):
        options = {} if metric is image_mean_absolute_error else {"data_range": 4095}
        expected = metric(prediction, truth, mask, **options)
        assert metric(prediction.astype(np.int16), truth.astype(np.int16), mask.astype(np.uint8), **options) == expected


def test_empty_masks_identical_images_and_constant_images():
    rng = np.random.default_rng(2)
    prediction, truth = ct_pair(rng, (15, 16))
    empty = np.zeros(truth.shape, dtype=bool)
    for metric, options in ((image_mean_absolute_error, {}), (peak_signal_noise_ratio, {"data_range": 4095}),
                            (structural_similarity, {"data_range": 4095})):
        assert math.isnan(metric(prediction, truth, empty, **options))
        assert metric(prediction, truth, empty, empty_mask=-1.0, **options) == -1.0
    border_only = empty.copy()
    border_only[0, :] = True  # only the strip SSIM leaves out
    assert math.isnan(structural_similarity(prediction, truth, border_only, data_range=4095))
    assert peak_signal_noise_ratio(truth, truth, data_range=4095) == math.inf
    with np.errstate(divide="ignore"):
        assert skimage_psnr(truth, truth, data_range=4095) == math.inf
    assert peak_signal_noise_ratio(truth, truth, data_range=4095, identical=100.0) == 100.0
    constant = np.full((9, 9), 7.0)
    assert structural_similarity(constant, constant, data_range=1.0) == 1.0 == skimage_ssim(constant, constant,
                                                                                           data_range=1.0)


def test_bad_arguments_raise_value_errors_naming_the_problem():
    image = np.zeros((9, 9))
    with pytest.raises(ValueError, match="one shape"):
        image_mean_absolute_error(image, np.zeros((9, 8)))
    with pytest.raises(ValueError, match="one shape"):
        peak_signal_noise_ratio(image, image, np.zeros((8, 9), dtype=bool), data_range=1)
    with pytest.raises(ValueError, match="prediction must be finite"):
        image_mean_absolute_error(np.full((9, 9), np.nan), image)
    with pytest.raises(ValueError, match="mask holds NaN"):
        image_mean_absolute_error(image, image, np.full((9, 9), np.nan))
    for data_range in (0, -1.0, np.inf, "range", None):
        with pytest.raises(ValueError, match="data_range"):
            peak_signal_noise_ratio(image, image + 1, data_range=data_range)
        with pytest.raises(ValueError, match="data_range"):
            structural_similarity(image, image + 1, data_range=data_range)
    with pytest.raises(ValueError, match="not constant"):
        peak_signal_noise_ratio(image + 1, image, data_range="truth")
    with pytest.raises(TypeError, match="data_range"):
        peak_signal_noise_ratio(image, image)  # never guessed from the dtype
    for win_size in (4, 1, 11, 2.0):
        with pytest.raises(ValueError, match="win_size"):
            structural_similarity(image, image, data_range=1, win_size=win_size)
    with pytest.raises(ValueError, match="sigma"):
        structural_similarity(np.zeros((20, 20)), np.zeros((20, 20)), data_range=1, gaussian_weights=True, sigma=0)
    with pytest.raises(ValueError, match="K2"):
        structural_similarity(image, image, data_range=1, K2=-0.1)
    with pytest.raises(ValueError, match="empty_mask must be a number"):
        image_mean_absolute_error(image, image, empty_mask="zero")


def test_window_parameters_that_are_not_numbers_are_named():
    image = np.zeros((20, 20))
    with pytest.raises(ValueError, match="sigma must be a number"):
        structural_similarity(image, image, data_range=1, gaussian_weights=True, sigma="wide")
    with pytest.raises(ValueError, match="K1 must be a number"):
        structural_similarity(image, image, data_range=1, K1="small")
