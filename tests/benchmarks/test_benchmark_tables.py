"""The README's and RESULTS.md's benchmark tables are what the result files say."""
from __future__ import annotations

import pytest

from spearmint_nn.benchmarks.tables import BEGIN, DOCUMENTS, END, TABLES, _spans, main, regenerate

pytestmark = pytest.mark.skipif(not all(p.exists() for p in DOCUMENTS.values()),
                                reason="the documents are in a checkout, not in an installed package")


def test_every_generated_table_in_the_documents_matches_its_result_files(capsys):
    assert main(["--check"]) == 0, capsys.readouterr().out


def test_every_table_is_in_a_document_and_the_readme_figures_are_generated():
    texts = "\n".join(path.read_text() for path in DOCUMENTS.values())
    assert [name for name in TABLES if BEGIN.format(name) not in texts] == []
    readme = DOCUMENTS["README.md"].read_text()
    for name in ("readme-batch50", "readme-async", "readme-async-crossovers", "readme-busy-cluster",
                 "readme-transfer"):
        assert BEGIN.format(name) in readme and END.format(name) in readme


def test_a_hand_edited_cell_is_found_and_regenerated():
    text = DOCUMENTS["README.md"].read_text()
    edited = text.replace("| Optuna TPE (constant liar) | -3.018", "| Optuna TPE (constant liar) | -3.118", 1)
    assert edited != text
    fixed, changed = regenerate(edited)
    assert changed == ["readme-batch50"] and fixed == text


def test_a_block_of_an_unknown_table_or_without_its_end_is_an_error():
    with pytest.raises(ValueError, match="no generated table 'nothing'"):
        regenerate(BEGIN.format("nothing") + "\n" + END.format("nothing"))
    with pytest.raises(ValueError, match="has no end marker"):
        regenerate(BEGIN.format("readme-batch50") + "\n| a |")


def test_crossover_points_read_as_spans():
    assert _spans([100, 150, 250, 300, 350], 50) == "100-150, 250-350"
    assert _spans([75], 15) == "75" and _spans([], 15) == ""
