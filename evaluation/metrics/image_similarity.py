"""Image similarity within a mask (image synthesis: a synthetic CT against the real one, say): two
images of one shape, N-D, and an optional mask of the voxels to score; arrays in, numbers out.

The intermediate is the voxel-wise comparison restricted to the mask: absolute and squared
differences for MAE and PSNR, the SSIM map for SSIM. Definitions are scikit-image's
(`peak_signal_noise_ratio`, `structural_similarity`); the mask follows SynthRAD's evaluation
(SynthRAD2023/metrics, image_metrics.py): MAE and PSNR over the mask's voxels, SSIM the mean of
the full-image SSIM map over the mask's voxels, leaving out, as scikit-image's mean does, the
strip of half a window along the image's border. Without a mask every voxel counts and the
numbers are scikit-image's own. (SynthRAD 2025 ranks a masked multi-scale SSIM instead, which is
not computed here.)

What SynthRAD does before scoring (clipping both images to [−1024, 3000] HU, filling the voxels
outside the mask with −1024, shifting by +1024 for SSIM) is preprocessing for the caller: these
functions score the images they are given. Images are computed in float64 whatever their dtype
(scikit-image computes float32 images in float32), converted slab by slab, never whole.

`data_range` (PSNR, SSIM) is never guessed from the dtype: a number > 0 (e.g. 4095 for CT in
[−1024, 3071]), or "truth": the truth's max − min over the whole image, as SynthRAD 2023 does when
no range is given. Per-image metrics: no `sample_weight` (a challenge's mean over cases weights them).
"""

from __future__ import annotations

import math

import numpy as np

from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    as_bool,
    check_empty_value,
    check_flag,
    check_in_range,
    check_integer,
    check_nonnegative,
    check_numbers,
    check_same_shape,
)

SYNTHRAD_2023 = "Huijben et al., Medical Image Analysis, 2024 (SynthRAD2023 challenge report)"
# Voxels per slab of the SSIM map: about 10 float64 temporaries of 8 MiB each, whatever the volume.
_SLAB_VOXELS = 1 << 20


def _images(prediction, truth, mask) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    prediction, truth = check_numbers(prediction, "prediction"), check_numbers(truth, "truth")
    if mask is None:
        check_same_shape(prediction=prediction, truth=truth)
    else:
        mask = as_bool(mask, "mask")
        check_same_shape(prediction=prediction, truth=truth, mask=mask)
    if prediction.ndim < 1:
        raise ValueError("images must have at least 1 dimension")
    return prediction, truth, mask


def _data_range(data_range, truth: np.ndarray) -> float:
    if isinstance(data_range, str):
        if data_range != "truth":
            raise ValueError(f"data_range must be a number > 0 or 'truth', got {data_range!r}")
        data_range = float(truth.max()) - float(truth.min()) if truth.size else 0.0  # no int16 overflow
        if data_range <= 0:
            raise ValueError("data_range='truth' needs a truth that is not constant (its max − min is 0)")
        return data_range
    try:
        value = float(data_range)
    except (TypeError, ValueError):
        raise ValueError(f"data_range must be a number > 0 or 'truth', got {data_range!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"data_range must be a finite number > 0, got {data_range!r}")
    return value


def _selected(prediction, truth, mask):
    """The scored voxels of both images, as float64 (only they are converted)."""
    if mask is not None:
        prediction, truth = prediction[mask], truth[mask]
    return prediction.astype(np.float64).ravel(), truth.astype(np.float64).ravel()


@metric(kind="images", better="lower", symmetric=True, empty={"empty_mask": math.nan},
        equals=("SynthRAD2023/metrics ImageMetrics.mae", "numpy mean of |prediction − truth| over the mask"),
        citation=SYNTHRAD_2023)
def image_mean_absolute_error(prediction, truth, mask=None, empty_mask: float = math.nan) -> float:
    """Mean absolute error of two images within a mask: the mean of |prediction − truth| over the
    mask's voxels.

    Σ_{v in M} |p_v − t_v| / |M|, in the images' unit (HU for CT), M the mask's nonzero voxels
    (every voxel without a mask). An empty mask gives `empty_mask` (NaN by default).
    """
    empty_mask = check_empty_value(empty_mask, "empty_mask")
    prediction, truth, mask = _images(prediction, truth, mask)
    prediction, truth = _selected(prediction, truth, mask)
    return float(np.abs(prediction - truth).mean()) if prediction.size else empty_mask


@metric(kind="images", better="higher", symmetric=True, example={"data_range": 4095.0},
        empty={"empty_mask": math.nan, "identical": math.inf},
        variants={"data_range": "a number > 0, or 'truth': the truth's max − min over the whole image (SynthRAD 2023)"},
        equals=("skimage.metrics.peak_signal_noise_ratio of the mask's voxels",
                "SynthRAD2023/metrics ImageMetrics.psnr (on its clipped images)"),
        citation="Huynh-Thu and Ghanbari, Electronics Letters 44(13), 2008")
def peak_signal_noise_ratio(prediction, truth, mask=None, *, data_range, identical: float = math.inf,
                            empty_mask: float = math.nan) -> float:
    """Peak signal-to-noise ratio of two images within a mask, in dB.

    10 · log10(R² / MSE), MSE = Σ_{v in M} (p_v − t_v)² / |M| over the mask's voxels (every voxel
    without a mask) and R = `data_range`: a number > 0, or "truth" for the truth's max − min over
    the whole image. As scikit-image's `peak_signal_noise_ratio` of the mask's voxels. Identical
    images (MSE 0) give `identical` (+inf by default, as scikit-image); an empty mask gives
    `empty_mask` (NaN by default).
    """
    identical = check_empty_value(identical, "identical")
    empty_mask = check_empty_value(empty_mask, "empty_mask")
    prediction, truth, mask = _images(prediction, truth, mask)
    peak = _data_range(data_range, truth)
    prediction, truth = _selected(prediction, truth, mask)
    if not prediction.size:
        return empty_mask
    error = float(((prediction - truth) ** 2).mean())
    return identical if error == 0 else float(10.0 * np.log10(peak ** 2 / error))


def _ssim_map(x: np.ndarray, y: np.ndarray, *, win_size: int, gaussian_weights: bool, sigma: float,
              use_sample_covariance: bool, c1: float, c2: float) -> np.ndarray:
    """scikit-image's SSIM map (structural_similarity(full=True)) of two images, in float64."""
    from scipy.ndimage import gaussian_filter, uniform_filter

    x, y = x.astype(np.float64), y.astype(np.float64)

    if gaussian_weights:
        def local_mean(image):
            return gaussian_filter(image, sigma=sigma, truncate=3.5, mode="reflect")
    else:
        def local_mean(image):
            return uniform_filter(image, size=win_size)
    n = win_size ** x.ndim
    covariance_norm = n / (n - 1) if use_sample_covariance else 1.0
    ux, uy = local_mean(x), local_mean(y)
    vx = covariance_norm * (local_mean(x * x) - ux * ux)
    vy = covariance_norm * (local_mean(y * y) - uy * uy)
    vxy = covariance_norm * (local_mean(x * y) - ux * uy)
    return ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux ** 2 + uy ** 2 + c1) * (vx + vy + c2))


@metric(kind="images", better="higher", symmetric=True, example={"data_range": 4095.0},
        empty={"empty_mask": math.nan},
        variants={"gaussian_weights": "False: a uniform win_size window (7); True: a Gaussian of sigma 1.5, "
                                      "truncated at 3.5 sigma (an 11-voxel window)",
                  "use_sample_covariance": "True: covariances normalised by N − 1 (scikit-image); False: by N "
                                           "(Wang et al.)",
                  "data_range": "a number > 0, or 'truth': the truth's max − min over the whole image"},
        equals=("skimage.metrics.structural_similarity (no mask; with a mask, the mean of its full=True map "
                "over the mask inside the border strip)",
                "SynthRAD2023/metrics ImageMetrics.ssim (on its clipped, filled and shifted images)"),
        citation="Wang et al., IEEE Transactions on Image Processing 13(4), 2004")
def structural_similarity(prediction, truth, mask=None, *, data_range, win_size: int | None = None,
                          gaussian_weights: bool = False, sigma: float = 1.5, use_sample_covariance: bool = True,
                          K1: float = 0.01, K2: float = 0.03, empty_mask: float = math.nan) -> float:
    """Structural similarity (SSIM) of two images within a mask: the mean of scikit-image's SSIM
    map over the mask's voxels, N-D.

    The map is scikit-image's `structural_similarity(full=True)` of the whole images:
    (2 μx μy + C1)(2 σxy + C2) / ((μx² + μy² + C1)(σx² + σy² + C2)) with local means, variances and
    covariance over a window (uniform of `win_size`, 7 by default, or Gaussian of `sigma` 1.5
    truncated at 3.5 sigma with `gaussian_weights`; reflected at the border; covariances
    normalised by N − 1 unless `use_sample_covariance=False`), C1 = (K1 R)², C2 = (K2 R)², R the
    `data_range` (a number > 0, or "truth" for the truth's max − min over the whole image). The
    value is the mean of the map over the mask's voxels that lie at least (win_size − 1) / 2 voxels
    from every border of the image (the strip scikit-image's mean leaves out; SynthRAD's masked
    SSIM does the same); without a mask, over all those voxels: scikit-image's number. No such
    voxel in the mask gives `empty_mask` (NaN by default).
    """
    empty_mask = check_empty_value(empty_mask, "empty_mask")
    gaussian_weights = check_flag(gaussian_weights, "gaussian_weights")
    use_sample_covariance = check_flag(use_sample_covariance, "use_sample_covariance")
    prediction, truth, mask = _images(prediction, truth, mask)
    peak = _data_range(data_range, truth)
    if gaussian_weights:
        sigma = check_in_range(sigma, "sigma", 0.0, math.inf, low_open=True)
        radius = int(3.5 * sigma + 0.5)  # scipy's Gaussian radius at truncate=3.5
        win_size = 2 * radius + 1 if win_size is None else win_size
    else:
        win_size = 7 if win_size is None else win_size
    win_size = check_integer(win_size, "win_size", low=3)
    if win_size % 2 == 0:
        raise ValueError(f"win_size must be odd (a window centred on its voxel), got {win_size!r}")
    if not gaussian_weights:
        radius = (win_size - 1) // 2
    if any(n < win_size for n in prediction.shape):
        raise ValueError(f"win_size {win_size} exceeds the image's extent {prediction.shape}")
    K1, K2 = check_nonnegative(K1, "K1"), check_nonnegative(K2, "K2")
    pad = (win_size - 1) // 2
    inside = np.zeros(prediction.shape, dtype=bool)
    inside[tuple(slice(pad, n - pad) for n in prediction.shape)] = True
    selected = inside if mask is None else inside & mask
    if not selected.any():
        return empty_mask
    # The map at a voxel depends only on the window around it: compute it on the selected voxels'
    # bounding box widened by the filter's radius, slab by slab along the first axis (bounded memory).
    box = [np.flatnonzero(selected.any(axis=tuple(a for a in range(selected.ndim) if a != axis)))
           for axis in range(selected.ndim)]
    low = [int(b[0]) for b in box]
    high = [int(b[-1]) + 1 for b in box]
    rest = tuple(slice(max(lo - radius, 0), min(hi + radius, n))
                 for lo, hi, n in zip(low[1:], high[1:], prediction.shape[1:], strict=True))
    inner = tuple(slice(lo - r.start, hi - r.start) for lo, hi, r in zip(low[1:], high[1:], rest, strict=True))
    step = max(1, _SLAB_VOXELS // max(1, math.prod(s.stop - s.start for s in rest)))
    options = dict(win_size=win_size, gaussian_weights=gaussian_weights, sigma=sigma,
                   use_sample_covariance=use_sample_covariance, c1=(K1 * peak) ** 2, c2=(K2 * peak) ** 2)
    total, count = 0.0, 0
    for start in range(low[0], high[0], step):
        stop = min(start + step, high[0])
        first, last = max(start - radius, 0), min(stop + radius, prediction.shape[0])
        window = (slice(first, last), *rest)
        ssim = _ssim_map(prediction[window], truth[window], **options)
        keep = selected[(slice(start, stop), *rest)][(slice(None), *inner)]
        values = ssim[(slice(start - first, stop - first), *inner)][keep]
        total += float(values.sum(dtype=np.float64))
        count += values.size
    return total / count
