"""The daemon benchmark's slot-use mode, run small: both runs happen and the table shows them."""
import json

from experiments.benchmarks.daemon_scale import main


def test_slot_use_runs_without_and_with_a_ready_point(tmp_path, capsys):
    out = tmp_path / "slots.json"
    assert main(["--start-runs", "0", "--concurrent", "0", "--restart-jobs", "0", "--slot-use", "5",
                 "--slot-seeds", "1", "--slot-job-seconds", "0.3,0.5", "--workdir", str(tmp_path / "work"),
                 "--json", str(out)]) == 0
    runs = json.loads(out.read_text())["slot_use"]
    assert [run["ready_points"] for run in runs] == [0, 1]
    assert all(run["jobs"] == 5 and 0 < run["busy_share"] <= 1 for run in runs)
    assert "| points kept ready | seed |" in capsys.readouterr().out
