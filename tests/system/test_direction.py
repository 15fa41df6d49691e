"""``"direction": "maximize"`` in config.json: a real daemon run whose every summary takes the
highest value as the best, in the wrapper's own sign."""
from __future__ import annotations

import csv
import io
import json

from helpers.experiments import BRANIN_WRAPPER, all_jobs, cli, quick_config
from spearmint_nn.experiment.config import load_config, search_settings

# minus Branin: its maximum is -0.397887
NEGATIVE_BRANIN = BRANIN_WRAPPER.replace("return ((y", "return -((y")


def test_a_maximised_objective_is_best_at_its_highest_value_everywhere(make_experiment, tmp_path):
    folder = make_experiment(quick_config(**{"direction": "maximize", "max-finished-jobs": 8}),
                             {"wrapper.py": NEGATIVE_BRANIN})
    assert search_settings(load_config(folder)).direction == "maximize"  # the search maximises too
    result = cli("run", folder, timeout=300)
    assert result.returncode == 0, result.stderr
    values = {job_id: job["value"] for job_id, (state, job) in all_jobs(folder).items() if state == "complete"}
    assert len(values) == 8 and all(v < 0 for v in values.values())  # kept in the wrapper's sign
    best_id = max(values, key=values.get)

    best = json.loads((folder / ".spearmint" / "best.json").read_text())
    assert (best["id"], best["value"]) == (best_id, values[best_id])
    summary = json.loads(cli("status", folder, "--json").stdout)
    assert summary["direction"] == "maximize"
    assert (summary["best"]["id"], summary["best"]["value"]) == (best_id, values[best_id])
    assert f"best: main = {values[best_id]:.6g} (job {best_id})" in cli("status", folder).stdout
    assert f"best {values[best_id]:.6g} (job {best_id})" in (folder / ".spearmint" / "daemon.log").read_text()

    rows = list(csv.DictReader(io.StringIO((folder / ".spearmint" / "results.csv").read_text())))
    running = [float(row["best_so_far"]) for row in rows]
    assert running == [max(float(r["value"]) for r in rows[: i + 1]) for i in range(len(rows))]

    report = tmp_path / "report.html"
    assert cli("report", folder, "--html", report, timeout=300).returncode == 0
    assert "main (maximised)" in report.read_text()
