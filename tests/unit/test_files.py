"""create_json_once: one creator per path, also where NFSv3 answers EEXIST to a LINK that worked."""
from __future__ import annotations

import json
import os

import pytest

from spearmint_nn.experiment.claims import take_claim
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.files import TMP_SUFFIX, create_json_once


@pytest.fixture
def link_then_eexist(monkeypatch):
    """os.link that creates the link and then fails with EEXIST, as a retransmitted NFSv3 LINK
    does when the server has forgotten the first one: the name exists, made by this very call."""
    real_link = os.link
    calls = []

    def link(src, dst, *args, **kwargs):
        real_link(src, dst, *args, **kwargs)
        calls.append(dst)
        raise FileExistsError(17, "File exists", str(dst))

    monkeypatch.setattr(os, "link", link)
    return calls


def test_a_link_answered_eexist_that_succeeded_is_a_creation(tmp_path, link_then_eexist):
    path = tmp_path / "000007.json"
    assert create_json_once(path, {"mine": True}) is True
    assert link_then_eexist == [path]
    assert json.loads(path.read_text()) == {"mine": True}
    assert path.stat().st_nlink == 1  # the temporary name is gone
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TMP_SUFFIX)]


def test_a_name_that_exists_is_not_created_again(tmp_path):
    path = tmp_path / "000007.json"
    assert create_json_once(path, {"first": 1}) is True
    assert create_json_once(path, {"second": 2}) is False
    assert json.loads(path.read_text()) == {"first": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["000007.json"]


def test_a_name_that_exists_stays_taken_even_when_link_answers_eexist_on_it(tmp_path, monkeypatch):
    # The other side of the check: a real EEXIST leaves the temporary file with one link.
    path = tmp_path / "000007.json"
    path.write_text('{"holder": 1}')
    real_link = os.link
    monkeypatch.setattr(os, "link", lambda src, dst: real_link(src, dst))
    assert create_json_once(path, {"mine": True}) is False
    assert json.loads(path.read_text()) == {"holder": 1}


def test_a_claim_whose_link_was_answered_eexist_is_ours(tmp_path, link_then_eexist):
    paths = ExperimentPaths(tmp_path)
    paths.state.mkdir()
    claim = take_claim(paths, 42)
    assert (claim.ours, claim.attempt) == (True, 1)
    assert json.loads(paths.claim_file(42).read_text())["pid"] == os.getpid()
    assert not paths.claim_file(42, 2).exists()  # not mistaken for a claim held by another
