"""Settings: dataclass defaults, config.json overrides, and errors that name the setting."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, dataclass

import pytest

from evaluation.errors import SetupError
from evaluation.reading.values import json_type
from evaluation.settings import Settings, setting


@dataclass(frozen=True)
class DemoSettings(Settings):
    count: int = setting(3, minimum=1, doc="how many")
    ratio: float = setting(0.5, minimum=0.0, doc="a fraction")
    mode: str = setting("image", choices=("image", "patient"), doc="the scheme")
    flag: bool = setting(False, doc="a switch")
    names: list[str] = setting(["a", "b"], doc="some names")
    sizes: tuple[int, ...] = setting((1, 2), doc="some sizes")


def write_config(directory, content):
    (directory / "config.json").write_text(content if isinstance(content, str) else json.dumps(content))


def test_defaults_from_the_dataclass(tmp_path):
    settings = DemoSettings.from_ground_truth(tmp_path)  # no config.json
    assert settings == DemoSettings()
    assert settings.as_dict() == {"count": 3, "ratio": 0.5, "mode": "image", "flag": False,
                                  "names": ["a", "b"], "sizes": [1, 2]}


def test_mutable_defaults_are_not_shared():
    first, second = DemoSettings(), DemoSettings()
    first.names.append("c")
    assert second.names == ["a", "b"]
    assert DemoSettings().names == ["a", "b"]


def test_config_json_overrides(tmp_path):
    write_config(tmp_path, {"count": 10, "mode": "patient", "flag": True, "names": ["x"], "sizes": [5, 6, 7]})
    settings = DemoSettings.from_ground_truth(tmp_path)
    assert settings.count == 10 and settings.mode == "patient" and settings.flag is True
    assert settings.names == ["x"]
    assert settings.sizes == (5, 6, 7)  # a JSON list becomes the declared tuple
    assert settings.ratio == 0.5  # not in config.json: the default


def test_int_accepted_for_float(tmp_path):
    write_config(tmp_path, {"ratio": 2})
    settings = DemoSettings.from_ground_truth(tmp_path)
    assert settings.ratio == 2.0 and type(settings.ratio) is float


def test_unknown_keys_named(tmp_path):
    write_config(tmp_path, {"count": 4, "zeta": 1, "colour": "red"})
    with pytest.raises(SetupError) as error:
        DemoSettings.from_ground_truth(tmp_path)
    message = str(error.value)
    assert "config.json" in message and "'colour', 'zeta'" in message
    assert "count, ratio, mode, flag, names, sizes" in message  # says what is allowed


@pytest.mark.parametrize("name, value, expected", [
    ("count", True, "a whole number, not a boolean"),  # bool is not an int here
    ("count", 2.5, "a whole number, not a number"),
    ("count", "3", "a whole number, not text"),
    ("count", None, "a whole number, not null"),
    ("ratio", "0.5", "a number, not text"),
    ("ratio", False, "a number, not a boolean"),
    ("mode", 1, "text, not a number"),
    ("flag", 1, "true or false, not a number"),
    ("flag", "true", "true or false, not text"),
    ("names", "a", "a list, not text"),
    ("sizes", {"a": 1}, "a list, not an object"),
])
def test_wrong_types_name_the_setting(tmp_path, name, value, expected):
    write_config(tmp_path, {name: value})
    with pytest.raises(SetupError) as error:
        DemoSettings.from_ground_truth(tmp_path)
    assert f"setting {name!r} must be {expected}" in str(error.value)


@pytest.mark.parametrize("name, value, item", [("names", ["a", 2], "names[1]"), ("sizes", [1, True], "sizes[1]")])
def test_wrong_item_types_name_the_item(tmp_path, name, value, item):
    write_config(tmp_path, {name: value})
    with pytest.raises(SetupError) as error:
        DemoSettings.from_ground_truth(tmp_path)
    assert f"setting '{item}' must be" in str(error.value)


def test_choices_enforced(tmp_path):
    write_config(tmp_path, {"mode": "slide"})
    with pytest.raises(SetupError) as error:
        DemoSettings.from_ground_truth(tmp_path)
    assert "'mode' is 'slide'" in str(error.value) and "'image', 'patient'" in str(error.value)


@pytest.mark.parametrize("name, value", [("count", 0), ("count", -5), ("ratio", -0.1)])
def test_minimum_enforced(tmp_path, name, value):
    write_config(tmp_path, {name: value})
    with pytest.raises(SetupError, match=rf"'{name}' is {value}; it must be at least"):
        DemoSettings.from_ground_truth(tmp_path)


@pytest.mark.parametrize("name, value", [("count", 1), ("ratio", 0), ("ratio", 0.0)])
def test_minimum_itself_is_allowed(tmp_path, name, value):
    write_config(tmp_path, {name: value})
    assert getattr(DemoSettings.from_ground_truth(tmp_path), name) == value


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "must be a JSON object"),
    ('{"count": ', "not valid JSON"),
    ("", "not valid JSON"),
])
def test_unusable_config_json(tmp_path, content, message):
    write_config(tmp_path, content)
    with pytest.raises(SetupError) as error:
        DemoSettings.from_ground_truth(tmp_path)
    assert "config.json" in str(error.value) and message in str(error.value)


def test_empty_config_gives_defaults(tmp_path):
    write_config(tmp_path, {})
    assert DemoSettings.from_ground_truth(tmp_path) == DemoSettings()


def test_replace_checks_limits():
    settings = DemoSettings()
    assert settings.replace(count=9).count == 9
    assert settings.count == 3  # frozen: a new object
    with pytest.raises(SetupError, match="'count'"):
        settings.replace(count=0)
    with pytest.raises(FrozenInstanceError):
        settings.count = 5  # type: ignore[misc]


@dataclass(frozen=True)
class PairSettings(Settings):
    low: int = setting(1, doc="low")
    high: int = setting(2, doc="high")

    def check(self) -> None:
        super().check()
        if self.low > self.high:
            raise SetupError(f"config.json: 'low' ({self.low}) must not exceed 'high' ({self.high}).")


def test_subclass_rules_spanning_fields(tmp_path):
    write_config(tmp_path, {"low": 5})
    with pytest.raises(SetupError, match="'low' \\(5\\) must not exceed 'high' \\(2\\)"):
        PairSettings.from_ground_truth(tmp_path)


def test_base_settings_has_no_settings(tmp_path):
    assert Settings.from_ground_truth(tmp_path).as_dict() == {}
    write_config(tmp_path, {"seed": 1})
    with pytest.raises(SetupError, match=r"unknown setting.*'seed'.*are none"):
        Settings.from_ground_truth(tmp_path)


def test_describe_lists_defaults_and_docs():
    described = DemoSettings.describe()
    assert [name for name, _, _ in described] == ["count", "ratio", "mode", "flag", "names", "sizes"]
    assert described[0] == ("count", 3, "how many")
    assert described[-1] == ("sizes", [1, 2], "some sizes")


def test_as_dict_is_plain_json(tmp_path):
    write_config(tmp_path, {"sizes": [3], "ratio": 1})
    settings = DemoSettings.from_ground_truth(tmp_path)
    assert json.loads(json.dumps(settings.as_dict())) == settings.as_dict()
    assert settings.as_dict()["sizes"] == [3]


@pytest.mark.parametrize("value, name", [(None, "null"), (True, "a boolean"), (1, "a number"), (1.5, "a number"),
                                         ("x", "text"), ([], "a list"), ({}, "an object")])
def test_json_type(value, name):
    assert json_type(value) == name


# ---- bounds declared on the fields; numbers always finite -------------------------------------


@dataclass(frozen=True)
class BoundedSettings(Settings):
    iou: float = setting(0.3, minimum=0.0, maximum=1.0, doc="a threshold")
    level: float = setting(95.0, above=0.0, below=100.0, doc="a percentage")
    seconds: float | None = setting(None, above=0.0, doc="optional")
    weights: list[float] = setting([1.0], minimum=0.0, doc="per item")


@pytest.mark.parametrize("config, expected", [
    ('{"iou": NaN}', "config.json: setting 'iou' is NaN; it must be a finite number."),
    ('{"iou": Infinity}', "config.json: setting 'iou' is Infinity; it must be a finite number."),
    ('{"seconds": -Infinity}', "config.json: setting 'seconds' is -Infinity; it must be a finite number."),
    ('{"iou": 5}', "config.json: setting 'iou' is 5.0; it must be at most 1."),
    ('{"iou": -0.1}', "config.json: setting 'iou' is -0.1; it must be at least 0."),
    ('{"level": 100}', "config.json: setting 'level' is 100.0; it must be below 100."),
    ('{"level": 0}', "config.json: setting 'level' is 0.0; it must be above 0."),
    ('{"seconds": 0}', "config.json: setting 'seconds' is 0.0; it must be above 0."),
    ('{"weights": [1, -2]}', "config.json: setting 'weights' is -2.0; it must be at least 0."),
    ('{"weights": [1, NaN]}', "config.json: setting 'weights[1]' is NaN; it must be a finite number."),
    ('{"iou": ' + "9" * 400 + "}", "config.json: setting 'iou' is an integer of 400 digits, too large to be a number."),
    ('{"iou": 0.5, "iou": 0.6}', "The phase's settings: config.json gives the key \"iou\" twice in one object."),
])
def test_bounds_and_finiteness_are_declared_not_hand_written(tmp_path, config, expected):
    write_config(tmp_path, config)
    with pytest.raises(SetupError) as error:
        BoundedSettings.from_ground_truth(tmp_path)
    assert str(error.value) == expected


def test_values_on_the_bounds_are_accepted(tmp_path):
    write_config(tmp_path, {"iou": 1, "level": 99.9, "seconds": 1e-9, "weights": [0, 2]})
    settings = BoundedSettings.from_ground_truth(tmp_path)
    assert settings.iou == 1.0 and settings.seconds == 1e-9 and settings.weights == [0.0, 2.0]


def test_a_broken_config_link_is_reported_not_skipped(tmp_path):
    (tmp_path / "config.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(SetupError, match=r"config.json is missing\.$"):
        DemoSettings.from_ground_truth(tmp_path)
