"""The package's layers: no module imports one of a layer above its own, at the top of the file or
inside a function, so that a challenge never depends on a command and the platform contract
knows nothing of any challenge (README.md, "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lowest first. A module belongs to the layer of the longest prefix naming it.
LAYERS = (
    # what knows nothing of a challenge: the platform contract, reading, the metric library and
    # what a challenge declares
    ("evaluation", "evaluation.errors", "evaluation.interruption", "evaluation.machine", "evaluation.settings",
     "evaluation.platform", "evaluation.reading", "evaluation.metrics", "evaluation.declarations",
     "evaluation.charts"),
    ("evaluation.framework",),  # the challenge's base class: declaration and pure hooks
    ("evaluation.scheduling", "evaluation.run", "evaluation.kinds", "evaluation.launch"),  # the run; the kinds
    # the challenges themselves, and their folders' RUNTIME_PACKAGES read as text (the image's build
    # runs image_requirements alone, before any package is installed)
    ("evaluation.challenges", "evaluation.image_requirements"),
    # the commands: the image's, the phase pack, the final ranking, the examples, the scaffold
    ("evaluation.cli", "evaluation.__main__", "evaluation.phase", "evaluation.leaderboard", "evaluation.examples",
     "evaluation.new"),
)

# The one arrow up, by design: a Dask worker builds the challenge it is sent by its name, through
# the registry of challenges (evaluation.challenges.challenge_class), inside that function only.
ALLOWED = {("evaluation.scheduling", "evaluation.challenges")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str) -> int | None:
    found = [(len(prefix), number) for number, layer in enumerate(LAYERS) for prefix in layer
             if name == prefix or name.startswith(prefix + ".")]
    return max(found)[1] if found else None


def imported(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import of the package in the file."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(source: str, package: str) -> list[tuple[str, int]]:
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                names.append((".".join([*base, node.module] if node.module else base), node.lineno))
            else:
                names.append((node.module or "", node.lineno))
    return [(name, line) for name, line in names if name == "evaluation" or name.startswith("evaluation.")]


def modules() -> list[Path]:
    return sorted(path for path in (ROOT / "evaluation").rglob("*.py") if "templates" not in path.parts)


def upward_imports(name: str, targets: list[tuple[str, int]]) -> list[str]:
    return [f"{name}:{line} imports {target}" for target, line in targets
            if layer_of(target) > layer_of(name) and not any(
                (name == a or name.startswith(a + ".")) and (target == b or target.startswith(b + "."))
                for a, b in ALLOWED)]


def test_every_module_has_a_layer():
    assert [module_name(p) for p in modules() if layer_of(module_name(p)) is None] == []


def test_no_import_runs_up_a_layer():
    assert [arrow for path in modules() for arrow in upward_imports(module_name(path), imported(path))] == []


def test_the_check_sees_an_arrow_up():
    """The check itself: imports inside a function and relative ones are resolved and found."""
    source = ("from . import locations\n"
              "def f():\n    from evaluation.leaderboard import cli\n    from ..run import evaluate\n")
    found = imports_in(source, "evaluation.platform")
    assert found == [("evaluation.platform", 1), ("evaluation.leaderboard", 3), ("evaluation.run", 4)]
    assert upward_imports("evaluation.platform.outputs", found) == [
        "evaluation.platform.outputs:3 imports evaluation.leaderboard",
        "evaluation.platform.outputs:4 imports evaluation.run"]
    assert upward_imports("evaluation.scheduling", [("evaluation.challenges", 9)]) == []  # the one allowed
