"""The rule of the daemon's design, read from the code: one module moves a job to an end state,
and the policies decide without writing a job file (spearmint_nn/daemon/DESIGN.md).

A new way for a job to end is a method of ``JobEnds`` (spearmint_nn/daemon/job_ends.py); a new
policy returns its decision to the loop, which hands it to ``JobEnds``."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = (ROOT / "spearmint_nn", ROOT / "drivers")
OWNER = ROOT / "spearmint_nn" / "daemon" / "job_ends.py"
END_STATES = {"COMPLETE", "FAILED", "STOPPED"}
# The policies of the daemon (spearmint_nn/daemon/policies/): each is handed what it needs and
# returns decisions.
POLICIES = ROOT / "spearmint_nn" / "daemon" / "policies"
# What writes job files (the store) or files at all (the writers of spearmint_nn.files).
WRITERS = {"Store", "atomic_write_json", "atomic_write_bytes", "create_json_once"}
# site_limits writes its own status file for `spearmint-nn status` (site_limit.json), no job file.
OWN_FILES = {"site_limits": {"atomic_write_json"}}


def _moves_to_an_end(source: str) -> list[int]:
    """The lines of the calls ``<anything>.move(<id>, <an end state>, ...)`` in ``source``, the
    state spelled ``JobState.FAILED`` or ``"failed"``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "move" \
                and len(node.args) >= 2:
            state = node.args[1]
            name = state.attr if isinstance(state, ast.Attribute) else getattr(state, "value", None)
            if isinstance(name, str) and name.upper() in END_STATES:
                found.append(node.lineno)
    return found


def _imported(source: str) -> set[str]:
    """Every module and name ``source`` imports (modules as written, dots of relative ones kept)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_only_the_owner_moves_a_job_to_an_end_state():
    movers = {path: _moves_to_an_end(path.read_text(encoding="utf-8"))
              for package in PACKAGES for path in sorted(package.rglob("*.py"))}
    outside = sorted(f"{path.relative_to(ROOT)}:{line}" for path, lines in movers.items() if path != OWNER
                     for line in lines)
    assert outside == [], f"a job moved to an end state outside daemon/job_ends.py: {outside}"
    assert movers[OWNER], "the owner's own moves are found (else the rule reads nothing)"


def test_the_policies_import_nothing_that_writes_job_files():
    policies = sorted(POLICIES.glob("*.py"))
    assert len(policies) >= 6  # (__init__, early stopping, re-attempts, before success, site limits, ...)
    for path in policies:
        imported = _imported(path.read_text(encoding="utf-8"))
        wrong = sorted(n for n in imported if (n in WRITERS or n.endswith("experiment.store"))
                       and n not in OWN_FILES.get(path.stem, ()))
        assert not wrong, f"daemon/policies/{path.name} imports a writer: {wrong}"


def test_the_readers_see_what_the_rules_are_about():
    """The rules hold only if the readers find such calls and imports, however they are spelled."""
    source = ("from ..experiment.store import Store\n"
              "store.move(1, JobState.FAILED)\nstore.move(2, 'stopped', reason='x')\nstore.move(3, JobState.PENDING)\n")
    assert _moves_to_an_end(source) == [2, 3]
    assert {"..experiment.store", "Store"} <= _imported(source)
