"""Topology of binary masks: centreline Dice (clDice) from skeletons, Betti numbers and their
errors. Arrays in, numbers out; 2D and 3D.

Both rest on scikit-image, as the challenges that use them do: `skeletonize` (Zhang's thinning
in 2D, Lee's in 3D, by default) and `euler_number`. scikit-image is imported inside the
functions: an evaluation image that uses these metrics installs it and what it needs
(CLDICE_PACKAGES, BETTI_PACKAGES, declared in the challenge folder's RUNTIME_PACKAGES; the
segmentation kind checks that), the others do not pay for it. Empty masks follow the library's
empty rule (evaluation.metrics).
"""

from __future__ import annotations

import numpy as np

from evaluation.metrics.overlap import union_box
from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    as_bool,
    check_choice,
    check_connectivity,
    check_empty_policy,
    check_empty_value,
    check_masks,
)

# The packages of requirements.txt these functions import, each with everything it needs (the
# image installs with --no-deps): clDice (skeleton) scikit-image and its runtime requirements; the
# Betti numbers those and cc3d (components: metrics.instances.connected_components). A challenge
# using them declares these in its RUNTIME_PACKAGES (tests/test_image_requirements.py checks them
# against the installed packages' metadata).
CLDICE_PACKAGES = ("numpy", "scipy", "scikit-image", "networkx", "pillow", "imageio", "tifffile", "lazy-loader",
                   "packaging")
BETTI_PACKAGES = (*CLDICE_PACKAGES, "connected-components-3d")
SKELETON_METHODS = (None, "zhang", "lee")
# Betti numbers need a foreground connectivity whose complement (the background's) is defined
# by the Euler number: 4/8 in 2D, 6/26 in 3D.
BETTI_CONNECTIVITIES = {2: (4, 8), 3: (6, 26)}


def skeleton(mask, method: str | None = None) -> np.ndarray:
    """The skeleton of a binary 2D or 3D mask (scikit-image's skeletonize): method None is
    Zhang's thinning in 2D and Lee's in 3D; "lee" is Lee's in 2D too. Thinning visits the axes
    in the array's order, so the skeleton depends on it: transpose the mask to change it."""
    from skimage.morphology import skeletonize

    mask = as_bool(mask, "mask")
    if mask.ndim not in (2, 3):
        raise ValueError(f"a skeleton needs a 2D or 3D mask, got {mask.ndim} dimension(s)")
    check_choice(method, "method", SKELETON_METHODS)
    if method == "zhang" and mask.ndim == 3:
        raise ValueError("method 'zhang' is 2D only; 3D skeletons use 'lee' (or None)")
    mask = np.ascontiguousarray(mask)
    if not mask.flags.writeable:  # skeletonize takes only writeable buffers (it never writes into them)
        mask = mask.copy()
    return skeletonize(mask, method=method).astype(bool)


@metric(kind="masks", better="higher", symmetric=True,
        empty={"both_empty": 1.0, "truth_empty": 0.0, "prediction_empty": 0.0},
        variants={"skeleton_empty": "the value when a nonempty mask has an empty skeleton (NaN by default, as "
                                    "the peers' 0/0)",
                  "method": "the skeleton: None (Zhang in 2D, Lee in 3D, as skimage.morphology.skeletonize), "
                            "'zhang' (2D) or 'lee'"},
        equals=("panoptica 2.1.7 metrics.cldice (skimage skeletonize)",
                "the clDice authors' numpy cl_score / clDice (skimage skeletonize, skeletonize_3d)"),
        citation="Shit et al., clDice, CVPR 2021", example={"skeleton_empty": 0.0})
def cldice(prediction, truth, both_empty: float = 1.0, truth_empty: float = 0.0, prediction_empty: float = 0.0,
           skeleton_empty: float = float("nan"), method: str | None = None) -> float:
    """Centreline Dice: the harmonic mean of topology precision and topology sensitivity.

    Tprec = |S(P) ∩ G| / |S(P)| (the share of the predicted skeleton inside the truth), Tsens =
    |S(G) ∩ P| / |S(G)| (the share of the true skeleton inside the prediction), clDice = 2 Tprec
    Tsens / (Tprec + Tsens), 0 when both are 0. S is `skeleton(mask, method)`: the array's axis
    order matters in 3D (Lee's thinning), transpose both masks to change it. A skeleton score
    is undefined when its skeleton is empty: for an empty mask `both_empty`, `truth_empty`
    (prediction not empty) and `prediction_empty` (truth not empty) give the value; a nonempty
    mask can have an empty skeleton too (Lee's thinning removes a 2×2×2 or 4×4×4 cube
    entirely), and `skeleton_empty` is the value then (NaN, as the peers' 0/0, by default).
    """
    prediction, truth = check_masks(prediction, truth)
    values = {**check_empty_policy(both_empty, truth_empty, prediction_empty),
              "skeleton_empty": check_empty_value(skeleton_empty, "skeleton_empty")}
    predicted, true = prediction.any(), truth.any()
    if not (predicted and true):
        return values["prediction_empty" if true else "truth_empty" if predicted else "both_empty"]
    box = union_box(prediction, truth, margin=1)  # the whole masks' skeletons, at the cost of the box
    prediction, truth = prediction[box], truth[box]
    predicted_skeleton, true_skeleton = skeleton(prediction, method), skeleton(truth, method)
    if not (predicted_skeleton.any() and true_skeleton.any()):
        return values["skeleton_empty"]
    precision = np.count_nonzero(predicted_skeleton & truth) / np.count_nonzero(predicted_skeleton)
    sensitivity = np.count_nonzero(true_skeleton & prediction) / np.count_nonzero(true_skeleton)
    if precision + sensitivity == 0:
        return 0.0
    return float(2.0 * precision * sensitivity / (precision + sensitivity))


def _betti(mask: np.ndarray, connectivity: int) -> tuple[int, ...]:
    from skimage.measure import euler_number

    from evaluation.metrics.instances import connected_components

    full = {2: 8, 3: 26}[mask.ndim]
    box = union_box(mask, mask, margin=1)  # with background around it: the whole mask's numbers
    mask = mask if box is None else mask[box]
    components = connected_components(mask, connectivity)[1]
    euler = int(euler_number(mask, connectivity=1 if connectivity in (4, 6) else mask.ndim))
    if mask.ndim == 2:
        return components, components - euler  # χ = b0 − b1
    # Cavities: background components enclosed by the mask, with the complementary connectivity;
    # the padding joins everything outside into one component.
    background = ~np.pad(mask, 1)
    cavities = connected_components(background, 6 if connectivity == full else 26)[1] - 1
    return components, components + cavities - euler, cavities  # χ = b0 − b1 + b2


@metric(kind="mask", better=None, returns="tuple",
        variants={"connectivity": "the foreground's: 4 or 8 in 2D, 6 or 26 in 3D (None: 8 or 26); the "
                                  "background's is the complementary one (8/4, 26/6)"},
        equals=("skimage.measure.euler_number (χ = b0 − b1 + b2) and skimage.measure.label (b0, cavities)",),
        citation="Kong and Rosenfeld, Digital topology, Computer Vision, Graphics, and Image Processing 48, 1989",
        example={"connectivity": None})
def betti_numbers(mask, connectivity=None) -> tuple[int, ...]:
    """Betti numbers of a binary mask: (b0, b1) in 2D, (b0, b1, b2) in 3D.

    b0: connected components (foreground `connectivity`: 4 or 8 in 2D, 6 or 26 in 3D, None the
    full one); b2 (3D): cavities, the background components enclosed by the mask, background
    taken with the complementary connectivity (26 for 6, 6 for 26; 8 for 4 and 4 for 8 in 2D);
    b1: holes in 2D, tunnels in 3D, from the Euler characteristic χ (scikit-image's
    euler_number at the same connectivity): b1 = b0 − χ in 2D, b0 + b2 − χ in 3D. The image
    outside the array counts as background.
    """
    mask = as_bool(mask, "mask")
    if mask.ndim not in BETTI_CONNECTIVITIES:
        raise ValueError(f"Betti numbers need a 2D or 3D mask, got {mask.ndim} dimension(s)")
    connectivity = check_connectivity(connectivity, mask.ndim, BETTI_CONNECTIVITIES[mask.ndim])
    return _betti(mask, connectivity)


@metric(kind="masks", better="lower", symmetric=True, returns="tuple",
        variants={"connectivity": "as betti_numbers"},
        equals=("|differences| of skimage.measure.euler_number / label based Betti numbers",),
        citation="Hu et al., Topology-preserving deep image segmentation, NeurIPS 2019 (Betti error)",
        example={"connectivity": None})
def betti_number_errors(prediction, truth, connectivity=None) -> tuple[int, ...]:
    """Absolute differences of the Betti numbers of two masks: (|Δb0|, |Δb1|[, |Δb2|]).

    Each mask's Betti numbers as betti_numbers(mask, connectivity).
    """
    prediction, truth = check_masks(prediction, truth)
    if prediction.ndim not in BETTI_CONNECTIVITIES:
        raise ValueError(f"Betti numbers need 2D or 3D masks, got {prediction.ndim} dimension(s)")
    connectivity = check_connectivity(connectivity, prediction.ndim, BETTI_CONNECTIVITIES[prediction.ndim])
    return tuple(abs(p - t) for p, t in zip(_betti(prediction, connectivity), _betti(truth, connectivity),
                                            strict=True))
