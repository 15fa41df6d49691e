"""CurvePoint files: the parser the daemon and views share (spearmint_nn.experiment.curves), the job
side's writer (spearmint_nn.job.report) and the runner's attempt marks, on real files."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers.experiments import quick_config, write_experiment
from spearmint_nn import job
from spearmint_nn.stopping.curve import CurvePoint
from spearmint_nn.experiment.curves import (MAX_LINE_BYTES, curve_summary, parse, parse_line, read_curve,
                                            read_since, report_names)
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.files import atomic_write_json
from spearmint_nn.runner import run_job


def test_good_lines_are_reports_with_int_steps_kept_as_ints():
    chunk = parse(b"1 0.5\n2\t0.25\n  3   1e-3  \n4.5 -2\n.5 +7.\r\n")
    assert chunk.reports == [CurvePoint(1, 0.5), CurvePoint(2, 0.25), CurvePoint(3, 1e-3), CurvePoint(4.5, -2.0), CurvePoint(0.5, 7.0)]
    assert isinstance(chunk.reports[0].step, int) and isinstance(chunk.reports[3].value, float)
    assert chunk.garbage == 0 and chunk.first_garbage is None
    assert chunk.consumed == len(b"1 0.5\n2\t0.25\n  3   1e-3  \n4.5 -2\n.5 +7.\r\n")


@pytest.mark.parametrize("line", ["1", "1 2 3", "nan 1", "1 nan", "1 inf", "1 -Infinity", "one 2", "1 0x10",
                                  "1_000 2", "1 2e999", "1,5 2", "1 [2]"])
def test_a_line_that_is_not_two_finite_numbers_is_no_report(line):
    assert parse_line(line) is None


def test_garbage_comments_and_blank_lines_are_skipped_and_the_first_garbage_is_quoted():
    chunk = parse(b"1 0.5\nloss=0.3\n\n# a comment\n2 nan\n\xff\xfe 1\n3 0.1\n")
    assert chunk.reports == [CurvePoint(1, 0.5), CurvePoint(3, 0.1)]
    assert chunk.garbage == 3 and chunk.first_garbage == "'loss=0.3'"


def test_a_half_last_line_is_left_unread_until_its_newline_comes(tmp_path):
    path = tmp_path / "000001.txt"
    path.write_bytes(b"1 0.5\n2 0.2")  # the writer is in the middle of its second line
    first = read_since(path)
    assert first.reports == [CurvePoint(1, 0.5)] and first.consumed == len(b"1 0.5\n") and first.garbage == 0
    with open(path, "ab") as handle:
        handle.write(b"5\n3 0.1\n")
    second = read_since(path, first.consumed, first.attempt)
    assert second.reports == [CurvePoint(2, 0.25), CurvePoint(3, 0.1)]  # "2 0.2" + "5": read whole, once
    assert first.consumed + second.consumed == path.stat().st_size
    assert read_since(path, path.stat().st_size).consumed == 0  # nothing new: nothing read


def test_offsets_continue_the_attempt_in_force(tmp_path):
    path = tmp_path / "000001.txt"
    path.write_bytes(b"1 0.5\n# attempt 2\n2 0.4\n")
    first = read_since(path)
    assert [r.attempt for r in first.reports] == [1, 2] and first.attempt == 2
    with open(path, "ab") as handle:
        handle.write(b"3 0.3\n#attempt 3\n4 0.2\n")
    second = read_since(path, first.consumed, first.attempt)
    assert [(r.step, r.attempt) for r in second.reports] == [(3, 2), (4, 3)]


def test_a_huge_line_without_newline_is_skipped_as_garbage_not_reread_forever(tmp_path):
    path = tmp_path / "000001.txt"
    path.write_bytes(b"x" * (MAX_LINE_BYTES + 1))
    chunk = read_since(path)
    assert chunk.consumed == MAX_LINE_BYTES + 1 and chunk.garbage == 1 and chunk.reports == []


def test_absent_files_and_folders_read_as_nothing(tmp_path):
    assert read_curve(tmp_path / "000009.txt") == [] and report_names(tmp_path / "reports") == set()
    (tmp_path / "000012.txt").write_text("")
    (tmp_path / "notes.txt").write_text("")
    assert report_names(tmp_path) == {12}


def test_summary_is_the_count_and_the_last_report_written():
    assert curve_summary([]) == {}
    assert curve_summary([CurvePoint(5, 0.1), CurvePoint(3, 0.4)]) == {"reports": 2, "last_step": 3, "last_value": 0.4}


# ---- the job side ------------------------------------------------------------------------------

def test_report_appends_lines_that_read_back_exactly(tmp_path, monkeypatch):
    path = tmp_path / "000001.txt"
    monkeypatch.setenv(job.REPORT_FILE_VARIABLE, str(path))
    job.report(1, 0.1)
    job.report(np.int64(2), np.float64(1 / 3))  # numpy scalars, as a training loop has them
    job.report(2.5, np.array([7.25]))  # an array (or tensor) of one element counts as its number
    job.report(3, math.nan)  # a diverged training: written, and skipped by readers
    assert path.read_text().splitlines()[:3] == ["1 0.1", f"2 {1 / 3!r}", "2.5 7.25"]
    chunk = read_since(path)
    assert chunk.reports == [CurvePoint(1, 0.1), CurvePoint(2, 1 / 3), CurvePoint(2.5, 7.25)] and chunk.garbage == 1


def test_report_rejects_what_is_not_a_number_and_does_nothing_outside_a_job(tmp_path, monkeypatch):
    monkeypatch.setenv(job.REPORT_FILE_VARIABLE, str(tmp_path / "r.txt"))
    for step, value in (("1", 0.5), (1, "0.5"), (True, 0.5), (1, [0.5, 0.6]), (1, None)):
        with pytest.raises(TypeError, match="must be a number"):
            job.report(step, value)
    assert not (tmp_path / "r.txt").exists()
    monkeypatch.delenv(job.REPORT_FILE_VARIABLE)
    job.report(1, 0.5)  # main run by hand: no error, no file
    assert not (tmp_path / "r.txt").exists()


def test_reports_of_concurrent_processes_never_interleave_within_a_line(tmp_path):
    path = tmp_path / "000001.txt"
    env = {**os.environ, job.REPORT_FILE_VARIABLE: str(path)}
    code = ("import sys\nfrom spearmint_nn import job\nk = int(sys.argv[1])\n"
            "for i in range(300):\n    job.report(i, k + i / 1000)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(k)], env=env) for k in (1, 2, 3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    chunk = read_since(path)
    assert chunk.garbage == 0 and len(chunk.reports) == 900
    for k in (1, 2, 3):
        assert [r.step for r in chunk.reports if int(r.value) == k] == list(range(300))


# ---- the runner ---------------------------------------------------------------------------------

WRAPPER = """
import os
from spearmint_nn import job

def main(job_id, params):
    for step in range(3):
        job.report(step, 10.0 - step)
    return os.environ["SPEARMINT_REPORT_FILE"]  # not a number: fails, but says where it wrote
"""


def test_the_runner_points_the_job_at_its_report_file_and_marks_later_attempts(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(), {"wrapper.py": WRAPPER})
    paths = ExperimentPaths(folder)
    for sub in (paths.inputs, paths.results):
        sub.mkdir(parents=True)
    atomic_write_json(paths.input_file(1), {"x": [1.0], "y": [2.0]})
    before = os.environ.get(job.REPORT_FILE_VARIABLE)
    run_job(folder, 1)
    assert os.environ.get(job.REPORT_FILE_VARIABLE) == before  # the caller's environment is left as found
    with open(paths.report_file(1), "ab") as handle:
        handle.write(b"3 6.5")  # the first attempt was killed in the middle of a line
    paths.result_file(1).unlink()
    run_job(folder, 1, attempt=2)
    assert paths.report_file(1).read_text() == "0 10.0\n1 9.0\n2 8.0\n3 6.5\n# attempt 2\n0 10.0\n1 9.0\n2 8.0\n"
    reports = read_curve(paths.report_file(1))
    assert [(r.step, r.attempt) for r in reports] == [(0, 1), (1, 1), (2, 1), (3, 1), (0, 2), (1, 2), (2, 2)]
