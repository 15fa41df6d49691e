"""The packages' boundaries, as rules on their imports.

``problem/`` (the space, the tasks, the settings), ``stopping/`` (early stopping's rules, on
``problem`` alone) and ``experiment/`` (config.json, the job files, the store) are read by every
job process and every read-only command, so they import no torch and stand below the engine:
nothing from ``search/``, ``models/``, ``daemon/`` or above.

``search/`` is a few modules in the order data flows through them, and none imports from a later
stage than its own: the history and the model bank do not reach into the maximiser.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "spearmint_nn"

# The packages each torch-free package may not import, at any depth (a lazy import counts too).
FORBIDDEN = {
    "problem": ("torch", "spearmint_nn.search", "spearmint_nn.models", "spearmint_nn.daemon",
                "spearmint_nn.experiment", "spearmint_nn.views", "experiments", "spearmint_nn.runner",
                "spearmint_nn.stopping"),
    # early stopping's rules stand on problem alone: the config, the daemon and ask/tell use them
    "stopping": ("torch", "spearmint_nn.search", "spearmint_nn.models", "spearmint_nn.daemon",
                 "spearmint_nn.experiment", "spearmint_nn.views", "experiments", "spearmint_nn.runner"),
    "experiment": ("torch", "spearmint_nn.search", "spearmint_nn.models", "spearmint_nn.daemon",
                   "spearmint_nn.views", "experiments"),
}


# search/'s modules in the order of the flow: the geometry every stage uses, the history and
# what is fitted to it, the proposals, the reports, and the loop around them. A module imports
# only modules listed before it.
SEARCH_FLOW = ("candidates", "observations", "transforms", "related", "model_store", "model_bank",
               "acquisition", "maximize", "batch_draws", "exploration", "policy", "reports", "suggestion",
               "optimizer")
MAX_SEARCH_MODULES = 14


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it, as absolute names (``from . import x``
    counted as ``package.x``)."""
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def modules_of(package: str) -> list[Path]:
    return sorted((PACKAGE / package).glob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_the_torch_free_packages_import_nothing_above_them(package):
    wrong = [(module_name(path), name) for path in modules_of(package) for name in sorted(imported_modules(path))
             if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN[package])]
    assert not wrong, f"{package}/ imports what it stands below: {wrong}"


def test_importing_the_torch_free_packages_loads_neither_torch_nor_scipy():
    """Checked in a fresh interpreter: a module imported on the way (not only the package's own
    lines) would load torch too, and torch and scipy cost every job most of a second."""
    names = [module_name(path) for package in FORBIDDEN for path in modules_of(package)]
    check = ("import importlib, sys\n"
             f"for name in {names!r}:\n"
             "    importlib.import_module(name)\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'scipy'}))\n"
             "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['spearmint_nn', 'search'], "
             "['spearmint_nn', 'models'], ['spearmint_nn', 'daemon'])))\n")
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "[]"]


def test_search_has_a_few_modules_each_with_its_place_in_the_flow():
    modules = {path.stem for path in modules_of("search")} - {"__init__"}
    assert modules == set(SEARCH_FLOW), "place a new module of search/ in SEARCH_FLOW (or remove a gone one)"
    assert len(SEARCH_FLOW) <= MAX_SEARCH_MODULES


@pytest.mark.parametrize("stage", SEARCH_FLOW)
def test_no_search_module_imports_from_a_later_stage(stage):
    later = {f"spearmint_nn.search.{name}" for name in SEARCH_FLOW[SEARCH_FLOW.index(stage):]}
    imported = imported_modules(PACKAGE / "search" / f"{stage}.py")
    wrong = sorted(name for name in imported if name in later or name.rsplit(".", 1)[0] in later)
    assert not wrong, f"search.{stage} imports from its own or a later stage: {wrong}"
    above = sorted(name for name in imported
                   if name.split(".")[:2] in (["spearmint_nn", pkg] for pkg in ("experiment", "daemon", "views")))
    assert not above, f"search.{stage} imports from a package that stands on it: {above}"


def test_the_import_reader_sees_relative_and_lazy_imports():
    """The rule above holds only if the reader finds every import: relative ones and those inside
    functions."""
    path = PACKAGE / "problem" / "space.py"
    found = imported_modules(path)
    assert "spearmint_nn.errors" in found  # from ..errors import ...
    assert "scipy.stats" in found  # imported inside a method, to keep job start-up light


def test_the_product_imports_nothing_of_the_benchmark_harness():
    """The harness (experiments/benchmarks) stands outside the installed package and on it: a
    product module that imported it would fail on every user's machine."""
    modules = sorted(PACKAGE.rglob("*.py")) + sorted((PACKAGE.parent / "drivers").rglob("*.py"))
    wrong = [(str(path.relative_to(PACKAGE.parent)), name) for path in modules
             for name in sorted(imported_modules(path)) if name == "experiments" or name.startswith("experiments.")]
    assert not wrong, f"the product imports the harness: {wrong}"


def test_the_views_read_the_folder_s_formats_not_the_daemon_s_modules():
    """``status``, the reports and the plots read what the daemon writes (experiment/), so they
    work on any folder whether a daemon runs or not; none imports from ``daemon/``."""
    wrong = [(module_name(path), name) for path in modules_of("views") for name in sorted(imported_modules(path))
             if name == "spearmint_nn.daemon" or name.startswith("spearmint_nn.daemon.")]
    assert not wrong, f"views/ imports the daemon: {wrong}"
