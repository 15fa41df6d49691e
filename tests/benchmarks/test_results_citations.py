"""Every place that cites RESULTS.md by section names a section the cited version has."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "experiments/benchmarks/RESULTS.md"
# where RESULTS.md lived before the harness left the package: the commits a citation names predate the move
FORMER_RESULTS = "spearmint_nn/benchmarks/RESULTS.md"
# RESULTS.md, "Section" or RESULTS.md of <commit>, "Section" (a comma, a space or a bracket before the quote)
CITATION = re.compile(r'RESULTS\.md(?: of ([0-9a-f]{7,40}))?[ ,(]+"([^"]+)"')


def _sections(text: str) -> list[str]:
    """The headings and bold run-in headings of a RESULTS.md, without their backquotes."""
    found = re.findall(r"^#+ (.+)$", text, re.M) + re.findall(r"^\*\*(.+?)\*\*", text, re.M)
    return [title.replace("`", "") for title in found]


def _cited() -> list[tuple[str, str | None, str]]:
    files = [p for p in [*ROOT.joinpath("spearmint_nn").rglob("*"), *ROOT.joinpath("drivers").rglob("*"),
                         *ROOT.joinpath("experiments", "benchmarks").rglob("*"), ROOT / "README.md"]
             if p.suffix in (".py", ".md") and p.name != "RESULTS.md"]
    # an uncited version is the working tree's (findall gives "" for the absent commit, which
    # ``git show :path`` would read as the index's)
    return [(str(path.relative_to(ROOT)), commit or None, title) for path in files
            for commit, title in CITATION.findall(path.read_text()) if title != "section"]


def test_every_cited_section_exists_in_the_version_cited():
    cited = _cited()
    assert len(cited) > 10  # the pattern finds the citations there are
    versions: dict[str | None, list[str]] = {None: _sections((ROOT / RESULTS).read_text())}
    missing = []
    for where, commit, title in cited:
        if commit not in versions:
            for path in (RESULTS, FORMER_RESULTS):
                shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True,
                                       text=True)
                if not shown.returncode:
                    break
            else:
                pytest.skip(f"RESULTS.md of {commit} is not in this checkout's history")
            versions[commit] = _sections(shown.stdout)
        wanted = " ".join(re.sub(r"\n\s*#*", " ", title).replace("`", "").split())  # a title over comment lines
        if not any(wanted in heading for heading in versions[commit]):
            missing.append(f"{where}: RESULTS.md{' of ' + commit if commit else ''}, {title!r}")
    assert not missing, "cited sections that are not there:\n" + "\n".join(missing)
