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
