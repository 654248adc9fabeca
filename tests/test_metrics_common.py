"""Checks every registered metric must pass, chosen by its declaration (scikit-learn's
test_common.py): a metric declared with @metric (evaluation/metrics/registry.py) gets them all
without editing this file; a kind without inputs in tests/metric_kinds/ fails here.

- the declaration is complete (definition, peers it equals, citation, a known kind);
- symmetry where declared symmetric;
- padding with background changes nothing;
- spacing scaled by s scales the value by s, s², s^ndim or 1 as its unit says (with the
  parameters and the arrays in the spacing's units, e.g. a displacement field, scaled along);
- a case of weight 2 equals that case twice (metrics taking sample_weight), and a row of zero
  weights is NaN, in every family (a mean over no weight is undefined), beside a valid row;
- each declared empty case gives its declared default, and the value passed for it;
- 2D and 3D (or the kind's dimensions) give finite numbers on typical inputs;
- dtype and memory order do not change the result;
- no input is mutated;
- all of the above for each variant a metric declares in checked_variants, too;
- a switch (a parameter whose default is True or False), an empty policy's value and a length
  in the spacing's units refuse a value of the wrong type (a truthy string would pick a variant
  silently).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from evaluation.metrics.registry import KINDS, UNITS, all_metrics
from tests.metric_kinds import kind_modules


def declared_calls(metrics) -> dict:
    """Each metric called as its example says, and as each of its checked_variants says (merged
    over the example), under an id that names the variant: "describe(quantile_method='exclusive')"."""
    calls = {}
    for name, metric in metrics.items():
        calls[name] = metric
        for keywords in metric.checked_variants:
            described = ", ".join(f"{key}={value!r}" for key, value in keywords.items())
            calls[f"{name}({described})"] = dataclasses.replace(metric, example={**metric.example, **keywords})
    return calls


METRICS = declared_calls(all_metrics())
KIND_INPUTS = kind_modules()
NAMES = sorted(METRICS)
SPACINGS = {1: (1.0,), 2: (0.7, 1.3), 3: (0.7, 1.3, 2.1)}
RTOL = 1e-9  # the same computation on rescaled or reordered inputs: float rounding only


def values_of(result) -> list[float]:
    """The numbers of a result, flattened: a float, an array, a tuple, a dict or a dataclass."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [v for f in dataclasses.fields(result) for v in values_of(getattr(result, f.name))]
    if isinstance(result, dict):
        return [v for key in sorted(result, key=str) for v in values_of(result[key])]
    if isinstance(result, (tuple, list)):
        return [v for item in result for v in values_of(item)]
    if isinstance(result, np.ndarray) or np.isscalar(result):
        array = np.asarray(result)
        if array.dtype.kind in "biuf":
            return [float(v) for v in array.ravel()]
    return []


def assert_same(a, b, rtol=RTOL, scale=1.0):
    x, y = values_of(a), values_of(b)
    assert len(x) == len(y), (a, b)
    for u, v in zip(x, y, strict=True):
        if math.isnan(u) or math.isnan(v):
            assert math.isnan(u) and math.isnan(v), (a, b)
        else:
            assert u * scale == pytest.approx(v, rel=rtol, abs=1e-12), (a, b)


def kind_of(metric):
    if metric.kind not in KIND_INPUTS:
        pytest.fail(f"{metric.name}: no inputs for its kind {metric.kind!r}: add tests/metric_kinds/{metric.kind}.py")
    return KIND_INPUTS[metric.kind]


def call(metric, args, ndim, **kwargs):
    keywords = dict(metric.example)
    if metric.takes_spacing and "spacing" not in kwargs:
        keywords["spacing"] = SPACINGS[ndim]
    keywords.update(kwargs)
    return metric.function(*args, **keywords)


def cases(metric, ndim, seed=0):
    return kind_of(metric).examples(np.random.default_rng(seed), ndim)


def by_dimension(names):
    return [pytest.param(name, ndim, id=f"{name}-{ndim}d") for name in names
            for ndim in getattr(KIND_INPUTS.get(METRICS[name].kind), "ndims", (1,))]


@pytest.mark.parametrize("name", NAMES)
def test_declaration_is_complete(name):
    metric = METRICS[name]
    assert metric.kind in KINDS and metric.unit in UNITS
    assert metric.summary and metric.definition, f"{name}: its docstring gives a summary line, then the definition"
    assert metric.equals, f"{name}: say which peer's number it equals (equals=...)"
    assert metric.citation, f"{name}: cite where the definition comes from (citation=...)"
    kind_of(metric)


def test_registry_is_not_empty():
    assert len(METRICS) >= 1


@pytest.mark.parametrize(("name", "ndim"), by_dimension(NAMES))
def test_typical_inputs_give_numbers(name, ndim):
    metric = METRICS[name]
    for args in cases(metric, ndim):
        numbers = values_of(call(metric, args, ndim))
        assert numbers, f"{name} returned no numbers"
        if metric.returns == "float":
            assert all(math.isfinite(v) for v in numbers), (name, numbers)


@pytest.mark.parametrize(("name", "ndim"), by_dimension([n for n in NAMES if METRICS[n].symmetric]))
def test_symmetric(name, ndim):
    metric = METRICS[name]
    for args in cases(metric, ndim):
        assert_same(call(metric, kind_of(metric).swap(args), ndim), call(metric, args, ndim))


@pytest.mark.parametrize(("name", "ndim"), by_dimension(NAMES))
def test_padding_changes_nothing(name, ndim):
    metric = METRICS[name]
    kind = kind_of(metric)
    for args in cases(metric, ndim):
        padded = kind.pad(args)
        if padded is None:
            pytest.skip(f"kind {metric.kind} has no padding")
        assert_same(call(metric, padded, ndim), call(metric, args, ndim))


@pytest.mark.parametrize(("name", "ndim"), by_dimension([n for n in NAMES if METRICS[n].takes_spacing]))
def test_spacing_scales_the_value(name, ndim):
    metric = METRICS[name]
    s = 2.5
    power = {"none": 0, "length": 1, "area": 2, "volume": ndim}[metric.unit]
    scaled = {p: metric.example[p] * s for p in metric.scaled}
    in_new_unit = getattr(kind_of(metric), "scale", lambda args, s: args)  # arrays holding lengths (a field)
    for args in cases(metric, ndim):
        base = call(metric, args, ndim)
        bigger = call(metric, in_new_unit(args, s), ndim, spacing=tuple(s * v for v in SPACINGS[ndim]), **scaled)
        assert_same(base, bigger, scale=s ** power)


@pytest.mark.parametrize("name", [n for n in NAMES if METRICS[n].weighted])
def test_weight_two_is_the_case_twice_and_zero_weights_are_undefined(name):
    metric = METRICS[name]
    kind = kind_of(metric)
    ndim = kind.ndims[0]
    for args in cases(metric, ndim):
        n = kind.n_cases(args)
        index = n // 2
        repeated = kind.repeat(args, index)
        assert repeated is not None, f"kind {metric.kind} takes sample_weight but cannot repeat a case"
        weights = np.ones(n)
        weights[index] = 2
        assert_same(call(metric, args, ndim, sample_weight=weights), call(metric, repeated, ndim))
        # rows of weights at once (a bootstrap): each row as if given alone; a row of zero weights
        # is a mean over nothing, NaN, in every family
        rows = np.stack([np.ones(n), weights, np.zeros(n)])
        both = call(metric, args, ndim, sample_weight=rows)
        assert_same(both, [call(metric, args, ndim, sample_weight=row) for row in rows])
        if metric.returns == "float":
            assert math.isnan(call(metric, args, ndim, sample_weight=np.zeros(n)))


def empty_cases():
    return [pytest.param(name, ndim, case, id=f"{name}-{ndim}d-{case}") for name in NAMES
            for ndim in getattr(KIND_INPUTS.get(METRICS[name].kind), "ndims", (1,)) for case in METRICS[name].empty]


@pytest.mark.parametrize(("name", "ndim", "case"), empty_cases())
def test_empty_policy(name, ndim, case):
    metric = METRICS[name]
    empties = kind_of(metric).empties(ndim)
    assert case in empties, f"kind {metric.kind} makes no {case!r} input"
    args = empties[case]
    declared = metric.empty[case]
    result = call(metric, args, ndim)
    if declared == "diagonal":
        spacing = np.asarray(SPACINGS[ndim])
        declared = float(np.sqrt(((np.asarray(np.shape(args[0])) * spacing) ** 2).sum()))
    assert_same(result, float(declared))
    assert_same(call(metric, args, ndim, **{case: 0.125}), 0.125)


@pytest.mark.parametrize(("name", "ndim"), by_dimension(NAMES))
def test_dtype_and_memory_order_change_nothing(name, ndim):
    metric = METRICS[name]
    kind = kind_of(metric)
    for args in cases(metric, ndim):
        expected = call(metric, args, ndim)
        for dtype in kind.dtypes:
            converted = list(args)
            for i in kind.arrays:
                converted[i] = np.asarray(args[i]).astype(dtype)
            assert_same(call(metric, tuple(converted), ndim), expected)
        fortran = list(args)
        for i in kind.arrays:
            fortran[i] = np.asfortranarray(args[i])
        assert_same(call(metric, tuple(fortran), ndim), expected)
        strided = list(args)
        for i in kind.arrays:  # a non-contiguous view of the same values
            array = np.asarray(args[i])
            doubled = np.repeat(array, 2, axis=-1) if array.ndim else array
            strided[i] = doubled[..., ::2] if array.ndim else array
        assert_same(call(metric, tuple(strided), ndim), expected)


@pytest.mark.parametrize(("name", "ndim"), by_dimension(NAMES))
def test_inputs_are_not_mutated(name, ndim):
    metric = METRICS[name]
    kind = kind_of(metric)
    for args in cases(metric, ndim):
        copies = [np.array(args[i], copy=True) for i in kind.arrays]
        frozen = list(args)
        for i in kind.arrays:
            frozen[i] = np.array(args[i], copy=True)
            frozen[i].flags.writeable = False  # writing into one raises
        call(metric, tuple(frozen), ndim)
        for i, copy in zip(kind.arrays, copies, strict=True):
            assert np.array_equal(frozen[i], copy, equal_nan=True)


def typed_parameters():
    """(metric, parameter, values of the wrong type): every switch (a parameter whose default is
    True or False), every empty policy's value and every length in the spacing's units."""
    params = []
    for name in NAMES:
        metric = METRICS[name]
        switches = [p for p, declared in metric.parameters.items() if isinstance(declared.default, bool)]
        for parameter in switches:
            params.append(pytest.param(name, parameter, ("no", 0, None), id=f"{name}-{parameter}"))
        for parameter in (*metric.empty, *metric.scaled):
            params.append(pytest.param(name, parameter, (True, "0.5", None), id=f"{name}-{parameter}"))
    return params


@pytest.mark.parametrize(("name", "parameter", "wrong_values"), typed_parameters())
def test_switches_numbers_and_lengths_refuse_the_wrong_type(name, parameter, wrong_values):
    metric = METRICS[name]
    ndim = kind_of(metric).ndims[0]
    args = cases(metric, ndim)[0]
    for wrong in wrong_values:
        with pytest.raises(ValueError, match=parameter):
            call(metric, args, ndim, **{parameter: wrong})
