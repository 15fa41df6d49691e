"""The ``spearmint-nn`` command: one function per subcommand, the parser built in one place.

Adding a subcommand: write ``cmd_<name>(args) -> int`` and register it with its arguments in
:func:`build_parser`. Exit codes: 0 success, 1 runtime failure (lock held, a filesystem
without locks, driver broken), 2 bad config or bad arguments (nothing written), 3 the daemon
stopped because another daemon took its folder over or its state folder was deleted or replaced
(:data:`~spearmint_nn.experiment.lock.LOST_EXIT`), 75 ``run`` stopped by the warning before its
batch job's time limit, to be run again (:mod:`spearmint_nn.daemon.events.signals`), 141 the reader of stdout went away
(``report DIR | head``), as a shell reports for a Unix tool that SIGPIPE ended.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from .daemon.build import make_driver
from .daemon.job_ends import JobEnds
from .daemon.build import build_daemon
from .daemon.event_log import EventLog
from .experiment.summaries import job_table, write_summaries
from .errors import ConfigError, DaemonError
from .experiment.config import ExperimentConfig, load_config, read_json_strict
from .experiment.failures import group_failures
from .experiment.jobs import BadValues, JobState, check_values
from .experiment.layout import ExperimentPaths
from .experiment.lock import DaemonBusy, acquire_lock
from .experiment.store import Store
from .files import atomic_write_json
from .views.status import Snapshot, failure_group_lines, failures_by_kind, failures_heading, status_summary, status_text

CLOSED_PIPE_EXIT = 128 + signal.SIGPIPE


# ---- run --------------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    from .views.progress import DaemonProgress

    config = load_config(args.experiment, driver_override=args.driver)
    progress = DaemonProgress(config)  # live line on a terminal, plain progress lines elsewhere
    try:
        return build_daemon(config, cancel_on_exit=args.cancel_on_exit, on_start=progress.attach).run()
    finally:
        progress.close()


# ---- status -----------------------------------------------------------------------------------

def _open_for_reading(experiment: str) -> tuple[ExperimentConfig, Store]:
    """The config and the jobs, for commands that only read. A config.json that does not
    validate (an edit in progress while the search runs) reads as the copy the daemon validated
    at its start, where there is one, said in one line."""
    try:
        config = load_config(experiment, check_driver=False)
    except ConfigError as exc:
        if not ExperimentPaths(experiment).config_in_force.exists():
            raise
        config = load_config(experiment, check_driver=False, in_force=True)
        print(f"spearmint-nn: {exc}; shown with the settings the daemon validated at its start "
              f"(.spearmint/config.json)", file=sys.stderr)
    return config, Store(config.paths).load_all()


def cmd_status(args: argparse.Namespace) -> int:
    config, store = _open_for_reading(args.experiment)
    if args.watch:
        from .views.progress import SPARK_ASCII, SPARK_BLOCKS, pace_text, progress_text, watch

        blocks = SPARK_BLOCKS if (sys.stdout.encoding or "").lower().replace("-", "") == "utf8" else SPARK_ASCII

        def render(snap: Snapshot) -> str:
            if snap.config is None:  # config.json edited into an invalid state while watching
                snap = Snapshot(snap.experiment, snap.store, config, taken_at=snap.taken_at)
            summary = status_summary(snap)
            if args.json:
                return json.dumps(summary)
            return "\n".join([status_text(summary), pace_text(snap, chars=blocks), progress_text(snap)])
        watch(args.experiment, render, interval_s=args.interval)
        return 0
    summary = status_summary(Snapshot(config.paths.experiment, store, config))
    print(json.dumps(summary, indent=1) if args.json else status_text(summary))
    return 0


# ---- report -----------------------------------------------------------------------------------

def cmd_report(args: argparse.Namespace) -> int:
    if args.optimum is not None and args.plot is None and not args.svg and not args.html:
        print("spearmint-nn: --optimum draws regret in the plots: give it with --plot or --html", file=sys.stderr)
        return 2
    if args.plot is not None or args.svg or args.html:
        from .views.html_report import write_reports
        from .views.plots import PlotsUnavailable

        try:
            for path in write_reports(args.experiment, plot=args.plot, svg=args.svg, html=args.html,
                                      optimum=args.optimum):
                print(f"wrote {path}")
        except PlotsUnavailable as exc:
            print(f"spearmint-nn: {exc}", file=sys.stderr)
            return 1
        if not args.failures:
            return 0
    config, store = _open_for_reading(args.experiment)
    if args.failures:
        failed = store.jobs(JobState.FAILED)
        if not failed:
            print("no failed jobs")
            return 0
        groups = [group.as_dict() for group in group_failures(failed)]
        print("\n".join([failures_heading(failures_by_kind(failed), len(groups))] + failure_group_lines(groups)))
        return 0
    header, rows = job_table(store.jobs(), config)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return 0


# ---- serve ------------------------------------------------------------------------------------

def cmd_serve(args: argparse.Namespace) -> int:
    from .views.page_server import make_server

    with make_server(args.experiment, args.port) as server:
        port = server.server_address[1]
        print(f"serving the report page of {args.experiment} at http://127.0.0.1:{port}/ (Ctrl-C stops); "
              f"from another machine: ssh -L {port}:localhost:{port} <this host>", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:  # the way to stop it
            pass
    return 0


# ---- cancel -----------------------------------------------------------------------------------

def cmd_cancel(args: argparse.Namespace) -> int:
    config = load_config(args.experiment)
    paths = config.paths
    if not paths.state.is_dir():
        print("nothing to cancel: the experiment has not started")
        return 0
    try:
        lock = acquire_lock(paths, "cancel")
    except DaemonBusy as exc:
        paths.requests.mkdir(exist_ok=True)
        request = paths.requests / f"cancel-{time.time_ns()}-{os.getpid()}.json"
        atomic_write_json(request, {"ids": list(args.jobs) if args.jobs else "all"})
        print(f"asked the daemon to cancel {'jobs ' + ' '.join(map(str, args.jobs)) if args.jobs else 'all jobs'} ({exc})")
        return 0
    log = EventLog(paths.log)
    try:
        store = Store(paths).load_all(repair=True)
        ids = args.jobs or [j.id for j in store.jobs((JobState.PENDING, JobState.RUNNING))]
        # No model listens: the next daemon shows every finished job to its own.
        done = JobEnds(config, store, make_driver(config), log).cancel(ids, "cancelled by the user")
        write_summaries(store, config)
        skipped = sorted(set(ids) - set(done))
        if skipped:
            print(f"not pending or running, left alone: {' '.join(map(str, skipped))}")
        print(f"cancelled {len(done)} job(s)")
    finally:
        log.close()
        lock.release()
    return 0


# ---- add --------------------------------------------------------------------------------------

def cmd_add(args: argparse.Namespace) -> int:
    """Import a result obtained elsewhere (params file + value), or queue params to run."""
    config = load_config(args.experiment)
    params = read_json_strict(Path(args.params_file), "params file")
    payload = params if isinstance(params, dict) and "params" in params else {"params": params}
    if args.value is not None:
        try:
            payload["values"] = json.loads(args.value)
        except ValueError:
            raise ConfigError("value", f"must be a JSON number or object task -> number (got {args.value!r})") from None
    config.space.validate(payload["params"])
    raw_values = payload.get("values", payload.get("value"))
    if raw_values is not None:
        try:
            check_values(raw_values, list(config.tasks.names))
        except BadValues as exc:
            if exc.failure != "nan":  # NaN imports a failed evaluation
                raise ConfigError("value", str(exc)) from None
    store = Store(config.paths)
    store.create_dirs()
    drop = config.paths.job_dir(JobState.PENDING) / f"add-{time.time_ns()}-{os.getpid()}.json"
    try:
        lock = acquire_lock(config.paths, "add")
    except DaemonBusy:
        atomic_write_json(drop, payload)
        print(f"handed {drop.name} to the running daemon, which takes it in at its next wake")
        return 0
    try:
        atomic_write_json(drop, payload)
        store.load_all(repair=True)
        job = store.intake_dropped(drop, config)
        write_summaries(store, config)
    finally:
        lock.release()
    failed = job.state is JobState.FAILED
    print(f"job {job.id}: {job.state}" + (f" ({job.failure}: {job.reason})" if failed else ""))
    return 0 if not failed or job.failure == "nan" else 2


# ---- export ---------------------------------------------------------------------------------

def cmd_export(args: argparse.Namespace) -> int:
    from .views import mlflow_export

    config, store = _open_for_reading(args.experiment)
    try:
        uri, experiment_id, counts = mlflow_export.export(config, store, args.mlflow or None)
    except mlflow_export.MlflowMissing as exc:
        print(f"spearmint-nn: {exc}", file=sys.stderr)
        return 2
    except mlflow_export.ExportFailed as exc:
        print(f"spearmint-nn: MLflow: {exc}", file=sys.stderr)
        return 1
    print(f"MLflow experiment {config.name!r} (id {experiment_id}) at {uri}: {counts.created} runs created, "
          f"{counts.updated} updated, {counts.unchanged} up to date")
    print(f"look at them: mlflow ui --backend-store-uri {uri}")
    return 0


# ---- init -------------------------------------------------------------------------------------

def cmd_init(args: argparse.Namespace) -> int:
    from .scaffold import create_experiment

    for path in create_experiment(args.experiment):
        print(f"wrote {path}")
    print(f"try it: spearmint-nn run {args.experiment}   (then edit wrapper.py and config.json)")
    return 0


# ---- parser -----------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spearmint-nn", description="Bayesian optimization of experiments "
                                     "described by a Spearmint-style config.json, on a laptop or an HPC cluster.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, func: Callable[[argparse.Namespace], int], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("experiment", metavar="DIR", help="experiment folder holding config.json")
        p.set_defaults(func=func)
        return p

    p = command("run", cmd_run, "run the daemon: propose, run and record jobs until the budget is spent")
    p.add_argument("--driver", help="driver name, overriding driver.name of config.json (local, slurm, sge, ...)")
    p.add_argument("--cancel-on-exit", action="store_true",
                   help="on SIGINT/SIGTERM cancel running jobs instead of leaving them to finish "
                        "(SIGUSR1, the warning before the daemon's own batch job's time limit, never does: "
                        "it stops the daemon with exit status 75, run it again to go on)")
    p = command("status", cmd_status, "counts per state, best so far, running jobs and the failures "
                "grouped by how they failed")
    p.add_argument("--json", action="store_true", help="print one JSON object (schema in the README)")
    p.add_argument("--watch", action="store_true", help="refresh until the search is over and its daemon "
                   "has exited, the daemon stops, or Ctrl-C (in place on a terminal; with --json one object per line)")
    p.add_argument("--interval", type=float, default=2.0, metavar="SECONDS", help="refresh period of --watch")
    p = command("report", cmd_report, "the table of all jobs as CSV on stdout, with the best value so far; "
                "or the failures grouped, plots and a one-file HTML report")
    p.add_argument("--plot", nargs="?", const="", metavar="PATH",
                   help="write the plots to PATH (default .spearmint/report.png; needs spearmint-nn[plot])")
    p.add_argument("--svg", action="store_true", help="write the plots as SVG instead of PNG")
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report to PATH")
    p.add_argument("--optimum", type=float, metavar="VALUE",
                   help="the objective's known optimum (its maximum with direction maximize): the plots show "
                        "the regret on a log scale")
    p.add_argument("--failures", action="store_true",
                   help="instead of the CSV, print the failed jobs grouped by kind, reason and place, "
                   "each group with the last lines of its output")
    p = command("serve", cmd_serve, "serve the report page the daemon keeps current (.spearmint/report.html) "
                "on 127.0.0.1, read only, for a browser on this machine or through a forwarded port")
    p.add_argument("--port", type=int, default=8765, help="the port (default 8765; 0 picks a free one)")
    p = command("cancel", cmd_cancel, "cancel pending/running jobs (all of them when no JOB is given)")
    p.add_argument("jobs", metavar="JOB", nargs="*", type=int, help="job ids")
    p = command("add", cmd_add, "import a result obtained elsewhere, or queue a point to run")
    p.add_argument("params_file", metavar="PARAMS.json",
                   help="params ({\"x\": [1.0], ...}) or {\"params\": ..., \"value\": ...}")
    p.add_argument("value", nargs="?", help="the objective value, or a JSON object task -> value; "
                   "omit it to queue the point for running")
    p = command("export", cmd_export, "write every job as a run of an experiment tracker, again without "
                "duplicates: params, values, learning curve, state")
    p.add_argument("--mlflow", nargs="?", const="", required=True, metavar="TRACKING_URI",
                   help="to MLflow (needs spearmint-nn[mlflow]): the store at TRACKING_URI, else at "
                        "$MLFLOW_TRACKING_URI, else the SQLite file DIR/mlflow.db")
    p = sub.add_parser("init", help="create a new experiment folder (config.json and wrapper.py) that runs as it is",
                       description="create a new experiment folder (config.json and wrapper.py) that runs as it is")
    p.add_argument("experiment", metavar="NAME", help="the folder to create (must not exist or be empty)")
    p.set_defaults(func=cmd_init)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # here, where a reader gone away is caught, not at the interpreter's exit
        return code
    except BrokenPipeError:  # `report DIR | head`: the reader has what it wanted, nothing to say
        _drop_stdout()
        return CLOSED_PIPE_EXIT
    except ConfigError as exc:
        for problem in exc.each:  # every problem found in config.json, each on a line of its own
            print(f"spearmint-nn: {problem}", file=sys.stderr)
        return 2
    except (DaemonBusy, DaemonError) as exc:
        print(f"spearmint-nn: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a read-only state folder: one line, not a traceback
        where = f": {exc.filename}" if exc.filename else ""
        print(f"spearmint-nn: cannot go on: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # before the daemon's own handler is installed
        return 130


def _drop_stdout() -> None:
    """Point stdout at /dev/null: the interpreter flushes it at exit, and what is still in its
    buffer would fail on the closed pipe again, with a message."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
