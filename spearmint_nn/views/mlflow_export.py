"""``export DIR --mlflow [URI]``: every job of an experiment as an MLflow run, for users who keep
all their runs in MLflow.

The optimizer stays where the jobs are (a login node, whose compute nodes may be offline) and
MLflow is only a sink: the export reads the folder as the other views do and writes what it
finds, so it can run during a search, after it, or on a copy of the folder elsewhere.

One MLflow experiment per spearmint-nn experiment, named after it (``experiment-name``, else
the folder's name); one run per job, found again by its tag ``spearmint_nn.job_id``, so that
exporting again updates the runs instead of adding new ones: a run gets what its job gained
since (the rest of its learning curve, its final values, its new state) and nothing twice. A run
holds the job's params (a vector variable one param per element, ``x.0``, ``x.1``), the values
of its tasks (objective and constraints) as metrics, its learning curve as the metric history
``learning_curve`` with the reports' steps, ``duration_s`` and ``attempts``, and its state,
failure kind and reason as tags (:data:`TAG`). Deleted runs are found too and left deleted.

Without a URI the store is ``$MLFLOW_TRACKING_URI``, the place an MLflow user has named for all
their runs, else a SQLite file in the experiment folder, ``mlflow.db``: nothing is written
outside the folder unless the user says where. (MLflow 3 refuses its old ``mlruns/`` file store
unless told to allow it, and recommends SQLite for a store without a server.)

MLflow is an optional extra (``pip install 'spearmint-nn[mlflow]'``) imported only here, only
when the command runs.
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import ConfigError
from ..experiment.config import ExperimentConfig
from ..experiment.curves import read_curve
from ..experiment.jobs import Job, JobState
from ..experiment.store import Store
from ..experiment.summaries import job_table

if TYPE_CHECKING:  # the client is imported only when an export runs
    from mlflow import MlflowClient
    from mlflow.entities import Run

TAG = "spearmint_nn."  # the prefix of the tags this export writes and owns
JOB_ID_TAG = TAG + "job_id"
# The job's creation time: a run found by its job id belongs to this experiment's job only if it
# agrees. Two searches of the same name exported to one store would otherwise write into each
# other's runs; the folder's path cannot tell them apart, since a folder may be moved or copied.
CREATED_TAG = TAG + "created"
FOLDER_TAG = TAG + "folder"
CURVE_METRIC = "learning_curve"
DEFAULT_STORE_FILE = "mlflow.db"
INSTALL_HINT = "pip install 'spearmint-nn[mlflow]' (in a clone: pip install -e '.[mlflow]')"

# A job's state -> its run's status (MLflow's RunStatus names).
RUN_STATUS = {JobState.PENDING: "SCHEDULED", JobState.RUNNING: "RUNNING", JobState.COMPLETE: "FINISHED",
              JobState.FAILED: "FAILED", JobState.STOPPED: "KILLED"}
TERMINAL = ("FINISHED", "FAILED", "KILLED")
# Columns of the job table that become tags, and those that go elsewhere or nowhere (the
# objective's "value" is a task's metric already; last_step/last_value are in the curve;
# best_so_far belongs to the search, not the job). Any other column is a param.
TAG_COLUMNS = ("state", "source", "feasible", "failure", "reason")
OTHER_COLUMNS = ("id", "value", "duration", "attempts", "last_step", "last_value", "best_so_far")
# MLflow's limits on one log_batch call, and on a tag's value (a failure's reason may be longer).
BATCH_METRICS, BATCH_PARAMS_TAGS = 1000, 100
MAX_TAG_CHARS = 8000
# A name MLflow accepts for a param or metric: letters, digits and _ - . / : and space.
_BAD_NAME_CHARS = re.compile(r"[^\w\-./: ]")


class MlflowMissing(RuntimeError):
    """The mlflow package is not installed."""


class ExportFailed(RuntimeError):
    """MLflow refused the store or a write: its message, in one line."""


@dataclasses.dataclass(frozen=True)
class JobRun:
    """What a job's run should hold (times in milliseconds, as MLflow counts them).

    metrics : name -> (value, timestamp), logged at step 0; curve : (step, value, timestamp)
    in the order the job reported, each with its own timestamp so that every point is told
    apart from the others, and a point already logged is known by its timestamp.
    """

    job_id: int
    status: str
    start_ms: int
    end_ms: int | None
    params: dict[str, str]
    tags: dict[str, str]
    metrics: dict[str, tuple[float, int]]
    curve: list[tuple[int, float, int]]


@dataclasses.dataclass
class ExportCounts:
    """What one export did: runs created, updated, and found up to date."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0


def folder_store(experiment: Path) -> str:
    """The store of an experiment folder: ``sqlite:///<folder>/mlflow.db``."""
    return f"sqlite:///{(experiment / DEFAULT_STORE_FILE).resolve()}"


def job_runs(config: ExperimentConfig, store: Store) -> list[JobRun]:
    """The run of every job, from the job table that ``report`` prints and the jobs' curves."""
    jobs = store.jobs()
    header, rows = job_table(jobs, config)
    return [_job_run(job, dict(zip(header, row)), config) for job, row in zip(jobs, rows)]


def _job_run(job: Job, row: dict[str, Any], config: ExperimentConfig) -> JobRun:
    created_ms = _ms(job.fields.get("created")) or 0
    start_ms = _ms(job.fields.get("started")) or _ms(job.submitted) or created_ms
    end_ms = _ms(job.finished)
    params = {metric_name(re.sub(r"\[(\d+)\]$", r".\1", column)): str(cell) for column, cell in row.items()
              if cell != "" and column not in TAG_COLUMNS + OTHER_COLUMNS and not column.startswith("task:")}
    tags = {TAG + column: str(row[column])[:MAX_TAG_CHARS] for column in TAG_COLUMNS if row.get(column, "") != ""}
    tags[JOB_ID_TAG] = str(job.id)
    tags[CREATED_TAG] = repr(job.fields.get("created"))
    if job.fields.get("host"):
        tags[TAG + "host"] = str(job.fields["host"])
    stamp = end_ms or start_ms
    metrics = {metric_name(column[len("task:"):]): (float(cell), stamp) for column, cell in row.items()
               if column.startswith("task:") and cell != ""}
    if job.duration is not None:
        metrics["duration_s"] = (job.duration, stamp)
    if job.attempts is not None:
        metrics["attempts"] = (float(job.attempts), stamp)
    reports = read_curve(config.paths.report_file(job.id))
    # MLflow's steps are integers; a curve with a fractional step (epoch 0.5) is logged by the
    # reports' order instead, which keeps its shape.
    integral = all(float(point.step).is_integer() for point in reports)
    curve = [(int(point.step) if integral else index, point.value, created_ms + index)
             for index, point in enumerate(reports)]
    return JobRun(job.id, RUN_STATUS[job.state], start_ms, end_ms, params, tags, metrics, curve)


def metric_name(name: str) -> str:
    """``name`` as MLflow accepts it for a param or a metric (other characters become ``_``)."""
    return _BAD_NAME_CHARS.sub("_", name)


def _ms(seconds: Any) -> int | None:
    return int(seconds * 1000) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None


# ---- writing to MLflow ------------------------------------------------------------------------

def export(config: ExperimentConfig, store: Store, tracking_uri: str | None = None) -> tuple[str, str, ExportCounts]:
    """Create or update the run of every job in the MLflow store at ``tracking_uri`` (None:
    ``$MLFLOW_TRACKING_URI``, else :func:`folder_store`); returns the store's URI, the MLflow
    experiment's id and what was done. Raises :class:`MlflowMissing`,
    :class:`ExportFailed`, and ConfigError when the MLflow experiment of this name holds another
    search's runs (nothing is written then)."""
    try:
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException
    except ImportError:
        raise MlflowMissing(f"export --mlflow needs the mlflow package: {INSTALL_HINT}") from None
    runs = job_runs(config, store)
    folder = config.paths.experiment.resolve()
    in_folder = not tracking_uri and not os.environ.get("MLFLOW_TRACKING_URI")
    tracking_uri = folder_store(folder) if in_folder else tracking_uri or os.environ["MLFLOW_TRACKING_URI"]
    try:
        client = MlflowClient(tracking_uri)
        # In the folder's own store, MLflow's artifact folder too lies in the experiment folder
        # (the export writes no artifacts, but what MLflow writes later for this experiment would).
        artifacts = (folder / "mlartifacts").as_uri() if in_folder else None
        experiment_id = _experiment(client, config.name, folder, artifacts)
        existing = _runs_by_job(client, experiment_id)
        _check_same_search(config, runs, existing)
        if client.get_experiment(experiment_id).tags.get(FOLDER_TAG) != str(folder):  # moved: say where it is now
            client.set_experiment_tag(experiment_id, FOLDER_TAG, str(folder))
        counts = ExportCounts()
        for run in runs:
            found = existing.get(run.job_id)
            if found is None:
                _create(client, experiment_id, run)
                counts.created += 1
            elif _update(client, found, run):
                counts.updated += 1
            else:
                counts.unchanged += 1
    except MlflowException as exc:
        raise ExportFailed(" ".join(str(exc.message).split())) from None
    return tracking_uri, experiment_id, counts


def _experiment(client: "MlflowClient", name: str, folder: Path, artifact_location: str | None) -> str:
    found = client.get_experiment_by_name(name)
    if found is None:
        return client.create_experiment(name, artifact_location=artifact_location, tags={FOLDER_TAG: str(folder)})
    if found.lifecycle_stage == "deleted":
        raise ExportFailed(f"the MLflow experiment {name!r} is deleted: restore it "
                           f"(mlflow experiments restore --experiment-id {found.experiment_id}) or delete it for good "
                           "(mlflow gc), then export again")
    return found.experiment_id


def _runs_by_job(client: "MlflowClient", experiment_id: str) -> dict[int, "Run"]:
    """Every run of the experiment that carries a job id, deleted ones included, page by page."""
    from mlflow.entities import ViewType

    found: dict[int, Run] = {}
    token = None
    while True:
        page = client.search_runs([experiment_id], run_view_type=ViewType.ALL, max_results=1000, page_token=token)
        for run in page:
            job_id = run.data.tags.get(JOB_ID_TAG, "")
            if job_id.isdigit():
                found.setdefault(int(job_id), run)
        token = page.token
        if not token:
            return found


def _check_same_search(config: ExperimentConfig, runs: list[JobRun], existing: dict[int, "Run"]) -> None:
    for run in runs:
        other = existing.get(run.job_id)
        if other is not None and other.data.tags.get(CREATED_TAG, run.tags[CREATED_TAG]) != run.tags[CREATED_TAG]:
            raise ConfigError("experiment-name", f"the MLflow experiment {config.name!r} holds the runs of another "
                              f"search (its job {run.job_id} was created at another time): give this one "
                              "another experiment-name in config.json")


def _create(client: "MlflowClient", experiment_id: str, run: JobRun) -> None:
    # the tags with the run: each kind of record MLflow's SQL store writes costs a commit, which
    # on a slow disk is most of an export's time
    created = client.create_run(experiment_id, start_time=run.start_ms, tags=run.tags, run_name=f"job {run.job_id}")
    _write(client, created.info.run_id, run, params=run.params, tags={}, metrics=run.metrics, curve=run.curve)
    _set_status(client, created.info.run_id, run)


def _update(client: "MlflowClient", found: "Run", run: JobRun) -> bool:
    """Write what the run lacks of its job; whether there was anything."""
    run_id, data = found.info.run_id, found.data
    params = {key: value for key, value in run.params.items() if key not in data.params}
    tags = {key: value for key, value in run.tags.items() if data.tags.get(key) != value}
    gone = [key for key in data.tags if key.startswith(TAG) and key not in run.tags]  # e.g. a late result's failure
    metrics = {key: value for key, value in run.metrics.items() if data.metrics.get(key) != value[0]}
    status_changed = found.info.status != run.status
    curve: list[tuple[int, float, int]] = []
    # The status is written last, so a run already ended holds its whole curve: only a run
    # still open (or one an earlier export left half written) may lack some of it.
    if run.curve and (found.info.status not in TERMINAL or status_changed):
        logged = {metric.timestamp for metric in client.get_metric_history(run_id, CURVE_METRIC)}
        curve = [point for point in run.curve if point[2] not in logged]
    if not (params or tags or gone or metrics or curve or status_changed):
        return False
    for key in gone:
        client.delete_tag(run_id, key)
    _write(client, run_id, run, params=params, tags=tags, metrics=metrics, curve=curve)
    if status_changed:
        _set_status(client, run_id, run)
    return True


def _write(client: "MlflowClient", run_id: str, run: JobRun, *, params: dict[str, str], tags: dict[str, str],
           metrics: dict[str, tuple[float, int]], curve: Iterable[tuple[int, float, int]]) -> None:
    from mlflow.entities import Metric, Param, RunTag

    all_metrics = ([Metric(key, value, stamp, 0) for key, (value, stamp) in metrics.items()]
                   + [Metric(CURVE_METRIC, value, stamp, step) for step, value, stamp in curve])
    all_params = [Param(key, value) for key, value in params.items()]
    all_tags = [RunTag(key, value) for key, value in tags.items()]
    # in batches within MLflow's limits: a long curve takes several
    while all_metrics or all_params or all_tags:
        client.log_batch(run_id, metrics=all_metrics[:BATCH_METRICS - 2 * BATCH_PARAMS_TAGS],
                         params=all_params[:BATCH_PARAMS_TAGS], tags=all_tags[:BATCH_PARAMS_TAGS])
        all_metrics = all_metrics[BATCH_METRICS - 2 * BATCH_PARAMS_TAGS:]
        all_params, all_tags = all_params[BATCH_PARAMS_TAGS:], all_tags[BATCH_PARAMS_TAGS:]


def _set_status(client: "MlflowClient", run_id: str, run: JobRun) -> None:
    if run.status in TERMINAL:
        client.set_terminated(run_id, run.status, end_time=run.end_ms)
    else:
        client.update_run(run_id, status=run.status)
