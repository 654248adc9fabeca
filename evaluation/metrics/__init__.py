"""Pure metric functions: arrays in, numbers out, validation at the top, no I/O.

docs/metrics.md documents every public metric (definition, variants, empty policy, the peer
whose number it equals, a citation); its reference part is generated from the registry.

Layout by concept: one module per family, each deriving its metrics from one intermediate.

    module              intermediate                          derived
    classification      the weighted ranking curve            ROC AUC (partial), AP, PPV at recall,
                        (counts per distinct score)           sensitivity at specificity and back
    confusion           the weighted confusion counts         accuracy, balanced accuracy, recall,
                                                              specificity, precision, NPV, F1, kappa
    overlap             per-label voxel counts, one pass      Dice, Jaccard, volume similarity,
                                                              absolute volume difference
    surface             both directed surface distances       HD (any percentile), ASSD/MASD, NSD
    topology            skeletons, Betti numbers              clDice, Betti-number errors
    instances           the overlaps of instance pairs        matching (TP/FP/FN, F1), PQ; lesion
                        (connected components)                volumes and count from the components
    points              point pairs within a radius           matching (TP/FP/FN, F1), FROC, CPM
    froc                each image's (slide's) hits           FROC curve and score, bootstrap rows
    regression          residuals and ranks                   MAE, RMSE, R², Pearson, Spearman,
                                                              percentage errors
    landmarks           radial errors                         mean radial error, success detection rate
    survival            concordant and comparable pairs       Harrell's C-index
    image_similarity    masked voxel differences, SSIM map    MAE, PSNR, SSIM within a mask
    registration        Jacobian determinants, moved points   SDlogJ, folding share, TRE
    calibration         binned probabilities                  expected calibration error, Brier score
    aggregation         weighted per-case values              mean, median, describe, over labels

registry.py (`@metric`: what the common tests, the docs and the challenges read), validation.py
(the one place arguments are checked) and resampling.py (bootstrap draws as rows of weights) serve
them all.

Conventions, the same in every family:

- Arrays in, numbers out. Masks are numpy arrays of any dimension (2D and 3D at least), any
  nonzero value foreground; label maps are integer arrays. Names follow scikit-learn:
  `y_true`, `y_score`, `y_pred`; masks and images are `prediction` and `truth`.
- `spacing`: one physical size per axis in the array's axis order; None is 1 per axis (voxel
  units). Distances are in the spacing's units, volumes in its units cubed.
- `sample_weight`: the weight of each case, (cases,), or (rows, cases) for many weightings at
  once (a bootstrap resample is a row of counts: a case of weight 2 counts as that case twice);
  a metric given rows returns one value per row. A row of zero weights, or no case at all, is a
  mean over nothing: NaN (validation.weight_totals). Per-case metrics take no weights: the
  aggregation over cases does.
- Bad arguments raise ValueError naming the argument and the problem (validation.py); a
  switch is True or False, never a truthy string.
- Every threshold says whether it is strict or inclusive, by an `inclusive` parameter or in its
  definition (a tolerance counts a distance equal to it).
- The empty rule, for every metric of two masks, label maps, instance maps or point sets: each
  empty case is a parameter, `both_empty` (neither has anything), `truth_empty` (only the
  prediction has) and `prediction_empty` (only the truth has). The defaults: both empty is the
  best value (nothing to find, nothing found: Dice 1, NSD 1, F1 1, distances 0, volumes 0); one
  empty is what the formula gives where it gives a number (Dice 0, NSD 0, recall 0 of a missed
  truth) and NaN where it gives none (surface distances: there is no surface to measure to;
  0/0). Pass a number (a penalty), NaN, or for distances "diagonal" (the image's diagonal in the
  spacing's units). Other undefined cases are named parameters too (`zero_division`,
  `constant_truth`, `empty_mask`...), NaN by default unless a peer's convention says otherwise.

A heavy library (scipy, cc3d, OpenCV...) is imported inside the function that uses it, never at
the top of a module: a run pays only for what its challenge uses (evaluation/challenges/__init__.py).
"""
