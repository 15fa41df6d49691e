"""Where a job's result goes when its result file is refused, and where the daemon finds it
(spearmint_nn.experiment.spare_results); the real refusals (mounts) are in
tests/system/test_results_kept.py."""
from __future__ import annotations

import errno
import json

import pytest

from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.results import JobResult, ResultStatus
from spearmint_nn.experiment.spare_results import SPARE_NAME, find_spare, is_storage_error, reserved_space
from spearmint_nn.files import RESERVED_SUFFIX, create_json_once, reserve_space


def _paths(tmp_path) -> ExperimentPaths:
    paths = ExperimentPaths(tmp_path)
    for folder in (paths.results, paths.output, paths.checkpoint_dir(3)):
        folder.mkdir(parents=True, exist_ok=True)
    return paths


def _result(job_id: int = 3, value: float = 1.25) -> JobResult:
    return JobResult(id=job_id, status=ResultStatus.OK, values={"main": value}, started=10.0, ended=12.5)


def test_a_result_printed_on_the_output_is_found_the_last_of_its_own_job(tmp_path):
    paths = _paths(tmp_path)
    other = json.dumps(_result(4, 9.0).to_json())
    paths.stdout_file(3).write_text(
        "epoch 1\nspearmint-nn result 3: {\"id\": 3, \"status\": \"ok\", \"values\": {\"main\": 0.5}}\n"
        f"spearmint-nn result 4: {other}\n"  # another job's line (a mixed-up output file): not this job's
        f"spearmint-nn result 3: {json.dumps(_result().to_json())}\n")
    result, where = find_spare(paths, 3)
    assert result.values == {"main": 1.25} and where == ".spearmint/output/000003.out"


def test_the_checkpoint_folder_comes_first_and_a_broken_copy_is_none(tmp_path):
    paths = _paths(tmp_path)
    paths.stdout_file(3).write_text(f"spearmint-nn result 3: {json.dumps(_result(3, 7.0).to_json())}\n")
    (paths.checkpoint_dir(3) / SPARE_NAME).write_text(json.dumps(_result().to_json()))
    assert find_spare(paths, 3)[0].values == {"main": 1.25}
    (paths.checkpoint_dir(3) / SPARE_NAME).write_text('{"id": 3, "status": "o')  # cut short
    paths.stdout_file(3).write_text("spearmint-nn result 3: {\"id\": 3, \"sta\n")
    assert find_spare(paths, 3) is None
    assert find_spare(paths, 5) is None  # no folder, no output


def test_reserved_space_is_overwritten_in_place_and_given_back(tmp_path):
    target = tmp_path / "000003.json"
    reserved = reserve_space(target, 64 * 1024)
    assert reserved.stat().st_size == 64 * 1024 and reserved.name.endswith(RESERVED_SUFFIX)
    assert create_json_once(target, {"id": 3}, reserved)
    assert json.loads(target.read_text()) == {"id": 3} and not reserved.exists()
    assert not create_json_once(target, {"id": 4}, reserve_space(target, 1024))  # taken: the first stays
    assert json.loads(target.read_text()) == {"id": 3}
    assert [p.name for p in tmp_path.iterdir()] == ["000003.json"]  # no reservation left behind


def test_space_a_killed_attempt_reserved_is_given_back_by_the_next(tmp_path):
    paths = _paths(tmp_path)
    stale = paths.results / f".000003.json.4242{RESERVED_SUFFIX}"
    stale.write_bytes(b" " * 1000)
    with reserved_space(paths, 3) as reserved:
        assert not stale.exists() and reserved.exists()
    assert not reserved.exists()


@pytest.mark.parametrize("code, storage", [(errno.ENOSPC, True), (errno.EDQUOT, True), (errno.EROFS, True),
                                           (errno.ENOENT, False), (errno.EACCES, False)])
def test_only_a_refused_write_is_the_storage_s_fault(code, storage):
    assert is_storage_error(OSError(code, "x")) is storage
    assert not is_storage_error(ValueError("x"))
