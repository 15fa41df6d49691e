"""How the batch drivers tell a refusal for a site's limit from other failed submissions.

The fixtures were captured from the project's own schedulers (tests/cluster/slurm-up.sh with
AccountingStorageEnforce=limits,qos; tests/cluster/sge-up.sh), each the stderr of a submission
over a cap set for the purpose:

- ``sbatch_assoc_max_submit.stderr``: ``sacctmgr modify user root where account=limits set
  MaxSubmitJobs=1``, a second ``sbatch -A limits`` (exit 1);
- ``sbatch_qos_max_submit_per_user.stderr``: QOS ``limits`` with ``MaxSubmitJobsPerUser=1``;
- ``sbatch_qos_max_submit_per_account.stderr``: the same QOS with ``MaxSubmitJobsPerAccount=1``;
- ``sbatch_assoc_grp_submit.stderr``: the association with ``GrpSubmitJobs=0``;
- ``sbatch_qos_max_wall_deny.stderr``: QOS ``MaxWall=1`` with ``Flags=DenyOnLimit`` and
  ``--time=5``: the same second line, but no wait ever lets this job in (not a site limit);
- ``qsub_max_u_jobs.stderr`` / ``qsub_max_jobs.stderr``: the global configuration's
  ``max_u_jobs 1`` / ``max_jobs 1`` and a second ``qsub`` (exit 25);
- ``squeue_assoc_max_jobs.txt``: ``MaxJobs=1``, two jobs submitted: 308 runs, 309 waits with
  reason AssocMaxJobsLimit.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from spearmint_nn.drivers.base import JobSpec, SiteLimitError, SubmitError
from spearmint_nn.drivers.sge import SgeDriver
from spearmint_nn.drivers.slurm import SlurmDriver, parse_squeue

from helpers.scheduler_output import FIXTURES, fake_bin, fake_client, read_fixture


def spec_for(tmp_path: Path) -> JobSpec:
    exp = tmp_path / "exp"
    return JobSpec(job_id=7, command=["/bin/true"], workdir=exp, stdout=exp / "out/7.out", stderr=exp / "out/7.err",
                   script_path=exp / "scripts/7.sh", name="branin-7")


def refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver_class: type, command: str, fixture: str,
            exit_code: int) -> SubmitError:
    """What the driver raises when its submit command prints ``fixture`` to stderr and exits ``exit_code``."""
    fake_client(fake_bin(tmp_path, monkeypatch), command, f"cat {FIXTURES / fixture} >&2\nexit {exit_code}\n")
    with pytest.raises(SubmitError) as err:
        driver_class({}, tmp_path).submit(spec_for(tmp_path))
    return err.value


@pytest.mark.parametrize("fixture", ["sbatch_assoc_max_submit.stderr", "sbatch_qos_max_submit_per_user.stderr",
                                     "sbatch_qos_max_submit_per_account.stderr", "sbatch_assoc_grp_submit.stderr"])
def test_sbatch_over_a_submit_cap_is_a_site_limit(tmp_path, monkeypatch, fixture):
    err = refusal(tmp_path, monkeypatch, SlurmDriver, "sbatch", fixture, 1)
    assert isinstance(err, SiteLimitError), err
    assert "Job violates accounting/QOS policy" in str(err)  # the scheduler's words, for the log and status


def test_sbatch_over_a_qos_wall_time_is_a_rejection_not_a_site_limit(tmp_path, monkeypatch):
    # the same "Job violates accounting/QOS policy" line; only the limit named above it differs
    err = refusal(tmp_path, monkeypatch, SlurmDriver, "sbatch", "sbatch_qos_max_wall_deny.stderr", 1)
    assert not isinstance(err, SiteLimitError) and not err.transient
    assert "QOSMaxWallDurationPerJobLimit" in str(err)


@pytest.mark.parametrize("fixture", ["qsub_max_u_jobs.stderr", "qsub_max_jobs.stderr"])
def test_qsub_over_max_u_jobs_or_max_jobs_is_a_site_limit(tmp_path, monkeypatch, fixture):
    err = refusal(tmp_path, monkeypatch, SgeDriver, "qsub", fixture, 25)
    assert isinstance(err, SiteLimitError), err
    assert "jobs are allowed per" in str(err)


def test_other_refusals_are_not_site_limits(tmp_path, monkeypatch):
    err = refusal(tmp_path, monkeypatch, SgeDriver, "qsub", "qstat_j_unknown.txt", 1)
    assert not isinstance(err, SiteLimitError)
    slurm = SlurmDriver({}, tmp_path)
    for message in ("sbatch: error: Batch job submission failed: Invalid account or account/partition combination "
                    "specified", "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"):
        assert not slurm.is_site_limit(message)


def test_a_job_queued_for_a_running_jobs_cap_waits_for_the_site_limit():
    got = parse_squeue(read_fixture("squeue_assoc_max_jobs.txt"))
    assert got["309"].site_limit and "AssocMaxJobsLimit" in got["309"].reason
    assert not got["308"].site_limit
    # waiting for resources or held by the user is not a limit of the site
    assert not any(status.site_limit for status in parse_squeue(read_fixture("squeue_active.txt")).values())
