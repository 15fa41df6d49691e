"""The ``spearmint-nn`` command: one function per subcommand, the parser built in one place.

Adding a subcommand: write ``cmd_<name>(args) -> int`` and register it with its arguments in
:func:`build_parser`. Exit codes: 0 success, 1 runtime failure (lock held, driver broken),
2 bad config or bad arguments (nothing written).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from .experiment.config import ExperimentConfig, load_config, read_json_strict
from .daemon.loop import Daemon, DaemonBusy, acquire_lock, cancel_jobs, counts_toward_budget, make_driver
from .errors import ConfigError, DaemonError
from .experiment.failures import group_failures
from .experiment.layout import ExperimentPaths
from .views.progress import printable_tail, read_model_best
from .daemon.reporting import Reporter
from .experiment.store import BadValues, Store, best_summary, check_values, is_feasible
from .files import atomic_write_json, read_json

RECENT_FAILURES = 5
# Failure groups in ``status --json``: the largest ones, enough for any real run; thousands of
# failures whose reasons differ in more than numbers would otherwise make the object huge.
JSON_FAILURE_GROUPS = 50
# The status text lists the largest groups, with the last lines of the output of the very
# largest: what a user needs to see why jobs fail, in one screen. ``report --failures`` lists
# every group with all the output kept.
STATUS_FAILURE_GROUPS = 8
STATUS_TAILED_GROUPS = 3
STATUS_TAIL_LINES = 5


# ---- run --------------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    from .views.progress import DaemonProgress

    config = load_config(args.experiment, driver_override=args.driver)
    progress = DaemonProgress(config)  # live line on a terminal, plain progress lines elsewhere
    try:
        return Daemon(config, cancel_on_exit=args.cancel_on_exit, on_start=progress.attach).run()
    finally:
        progress.close()


# ---- status -----------------------------------------------------------------------------------

def daemon_state(paths: ExperimentPaths) -> dict[str, Any]:
    """What daemon.json says, with ``running`` true/false (null when it ran on another host)."""
    info = read_json(paths.daemon_info)
    if not isinstance(info, dict) or info.get("command") != "run":
        return {"running": False}
    running: bool | None = None
    if info.get("host") == socket.gethostname() and isinstance(info.get("pid"), int):
        try:
            os.kill(info["pid"], 0)
            running = True
        except ProcessLookupError:
            running = False
        except PermissionError:
            running = True
    return {"running": running, "host": info.get("host"), "pid": info.get("pid"), "started": info.get("started")}


def status_summary(config: ExperimentConfig, store: Store) -> dict[str, Any]:
    """The object printed by ``status --json`` (schema in the README)."""
    now = time.time()
    best = store.best(config)
    failures = sorted(store.jobs("failed"), key=lambda j: j.get("finished", 0))[-RECENT_FAILURES:]
    groups = group_failures(store.jobs("failed"))
    return {
        "experiment": str(config.experiment_dir),
        "name": config.name,
        "daemon": daemon_state(config.paths),
        "counts": store.counts(),
        "finished": sum(1 for j in store.jobs(("complete", "failed")) if counts_toward_budget(j, config.ignored_failures)),
        "max_finished_jobs": config.max_finished_jobs,
        "objective": config.objective,
        "best": best_summary(best) if best else None,
        "model_best": read_model_best(config.paths, store),
        "running": [{"id": j["id"], "scheduler_id": j.get("scheduler_id"), "driver": j.get("driver"),
                     "age_s": round(now - j.get("submitted", now), 1)} for j in store.jobs("running")],
        "recent_failures": [{"id": j["id"], "failure": j.get("failure"), "reason": j.get("reason")} for j in failures],
        "feasibility": feasibility_counts(config, store),
        "failures_by_kind": dict(Counter(j.get("failure") or "unknown" for j in store.jobs("failed")).most_common()),
        "failure_groups": [group.as_dict() for group in groups[:JSON_FAILURE_GROUPS]],
        "failure_group_count": len(groups),
    }


def feasibility_counts(config: ExperimentConfig, store: Store) -> dict[str, int]:
    """Finished jobs as the constraint model sees them: feasible, infeasible (complete but a
    constraint < 0), failed (an infeasible observation of "job success") and ignored (failed
    for a reason that says nothing about the point: the config's ``ignore-failures``)."""
    counts = {"feasible": 0, "infeasible": 0, "failed": 0, "ignored": 0}
    for job in store.jobs(("complete", "failed")):
        if job["state"] == "complete":
            counts["feasible" if is_feasible(job, config.constraints) else "infeasible"] += 1
        else:
            counts["failed" if counts_toward_budget(job, config.ignored_failures) else "ignored"] += 1
    return counts


def _format_status(summary: dict[str, Any]) -> str:
    daemon = summary["daemon"]
    if daemon["running"]:
        who = f"running (host {daemon['host']}, pid {daemon['pid']})"
    elif daemon["running"] is None:
        who = f"last started on host {daemon['host']} (pid {daemon['pid']}), state unknown from here"
    else:
        who = "not running"
    counts = summary["counts"]
    budget = summary["max_finished_jobs"]
    lines = [f"experiment {summary['name']} ({summary['experiment']}); daemon {who}",
             "jobs: " + ", ".join(f"{n} {state}" for state, n in counts.items())
             + f"; {summary['finished']}/{budget if budget is not None else 'unlimited'} finished"]
    lines += _best_lines(summary)
    feas = summary["feasibility"]
    lines.append(f"feasible: {feas['feasible']}, infeasible (constraint < 0): {feas['infeasible']}, "
                 f"failed: {feas['failed']}, failed but not about the point: {feas['ignored']}")
    if summary["running"]:
        lines.append("running:")
        lines += [f"  job {r['id']:>6}  {r['driver']} {r['scheduler_id']}  age {r['age_s']:.0f} s" for r in summary["running"]]
    if summary["failure_groups"]:
        shown = summary["failure_groups"][:STATUS_FAILURE_GROUPS]
        lines.append(_failures_heading(summary["failures_by_kind"], summary["failure_group_count"]))
        lines += _failure_group_lines(shown, STATUS_TAILED_GROUPS, STATUS_TAIL_LINES)
        more = summary["failure_group_count"] - len(shown)
        if more:
            jobs = summary["counts"]["failed"] - sum(g["count"] for g in shown)
            lines.append(f"  ... {more} more group(s) with {jobs} job(s): "
                         f"spearmint-nn report {summary['experiment']} --failures lists them all")
    return "\n".join(lines)


def _params_line(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v[0] if isinstance(v, list) and len(v) == 1 else v}" for k, v in params.items())


def _best_lines(summary: dict[str, Any]) -> list[str]:
    """The best job; for a noisy objective also the model's best, each labelled as what it is
    (the lowest observation of a noisy objective is its luckiest draw, not its best point)."""
    best, by_model, objective = summary["best"], summary.get("model_best"), summary["objective"]
    if not best:
        return ["best: no complete job yet"]
    label = "best observed (luckiest draw)" if by_model else "best"
    lines = [f"{label}: {objective} = {best['value']:.6g} (job {best['id']}) {_params_line(best['params'])}"]
    if by_model:
        spread = f" +- {by_model['std']:.3g}" if by_model["std"] is not None else ""
        notes = [f"job {by_model['id']}"]
        if by_model["value"] is not None:
            notes.append(f"observed there {by_model['value']:.6g}")
        if by_model["observations"] is not None:
            notes.append(f"model of {by_model['observations']} observations")
        lines.append(f"best by the model's posterior mean: {objective} = {by_model['mean']:.6g}{spread} "
                     f"({'; '.join(notes)}) {_params_line(by_model['params'])}")
    return lines


def _failures_heading(by_kind: dict[str, int], n_groups: int) -> str:
    kinds = ", ".join(f"{kind} {n}" for kind, n in by_kind.items())
    return (f"failures: {sum(by_kind.values())} job(s) ({kinds}) in {n_groups} group(s) "
            "of the same kind, reason and place:")


def _failure_group_lines(groups: list[dict[str, Any]], tailed: int | None = None,
                        tail_lines: int = 1000) -> list[str]:
    """Failure groups (``FailureGroup.as_dict()``, largest first) as text, one line per group;
    under the first ``tailed`` groups (None: all) the last ``tail_lines`` lines of the job's
    output, where the real reason of a failure usually is (a wrapper that caught its own
    exception and returned NaN printed the traceback there)."""
    lines = []
    for rank, group in enumerate(groups):
        jobs = f"job {group['first_job']}" if group["count"] == 1 else f"jobs {group['first_job']}..{group['last_job']}"
        where = f" at {group['location']}" if group["location"] else ""
        reason = group["reason"] or "no reason recorded"
        lines.append(f"  {group['count']:>5} x {group['kind']}{where}: {reason} ({jobs})")
        if tailed is None or rank < tailed:
            lines += [f"          | {line}" for line in printable_tail(group["output_tail"] or "", tail_lines)]
    return lines


def _open_for_reading(experiment: str) -> tuple[ExperimentConfig, Store]:
    config = load_config(experiment, check_driver=False)
    return config, Store(config.paths).load_all()


def cmd_status(args: argparse.Namespace) -> int:
    config, store = _open_for_reading(args.experiment)
    if args.watch:
        from .views.progress import progress_text, watch

        def render(snap: Any) -> str:
            summary = status_summary(snap.config or config, snap.store)
            return json.dumps(summary) if args.json else _format_status(summary) + "\n" + progress_text(snap)
        watch(args.experiment, render, interval_s=args.interval)
        return 0
    summary = status_summary(config, store)
    print(json.dumps(summary, indent=1) if args.json else _format_status(summary))
    return 0


# ---- report -----------------------------------------------------------------------------------

def cmd_report(args: argparse.Namespace) -> int:
    if args.plot is not None or args.svg or args.html:
        from .views.html_report import write_reports
        from .views.plots import PlotsUnavailable

        try:
            for path in write_reports(args.experiment, plot=args.plot, svg=args.svg, html=args.html):
                print(f"wrote {path}")
        except PlotsUnavailable as exc:
            print(f"spearmint-nn: {exc}", file=sys.stderr)
            return 1
        if not args.failures:
            return 0
    config, store = _open_for_reading(args.experiment)
    if args.failures:
        failed = store.jobs("failed")
        if not failed:
            print("no failed jobs")
            return 0
        groups = [group.as_dict() for group in group_failures(failed)]
        by_kind = dict(Counter(job.get("failure") or "unknown" for job in failed).most_common())
        print("\n".join([_failures_heading(by_kind, len(groups))] + _failure_group_lines(groups)))
        return 0
    header, rows = store.table(config)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
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
    reporter = Reporter(paths.log)
    try:
        store = Store(paths).load_all(repair=True)
        ids = args.jobs or [j["id"] for j in store.jobs(("pending", "running"))]
        done = cancel_jobs(store, make_driver(config), ids, reporter, "cancelled by the user")
        store.write_summaries(config)
        skipped = sorted(set(ids) - set(done))
        if skipped:
            print(f"not pending or running, left alone: {' '.join(map(str, skipped))}")
        print(f"cancelled {len(done)} job(s)")
    finally:
        reporter.close()
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
            check_values(raw_values, list(config.tasks))
        except BadValues as exc:
            if exc.failure != "nan":  # NaN imports a failed evaluation
                raise ConfigError("value", str(exc)) from None
    store = Store(config.paths)
    store.create_dirs()
    drop = config.paths.job_dir("pending") / f"add-{time.time_ns()}-{os.getpid()}.json"
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
        store.write_summaries(config)
    finally:
        lock.release()
    print(f"job {job['id']}: {job['state']}" + (f" ({job['failure']}: {job['reason']})" if job["state"] == "failed" else ""))
    return 0 if job["state"] != "failed" or job.get("failure") == "nan" else 2


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
                   help="on SIGINT/SIGTERM cancel running jobs instead of leaving them to finish")
    p = command("status", cmd_status, "counts per state, best so far, running jobs and the failures "
                "grouped by how they failed")
    p.add_argument("--json", action="store_true", help="print one JSON object (schema in the README)")
    p.add_argument("--watch", action="store_true", help="refresh until the search is over or Ctrl-C "
                   "(in place on a terminal; with --json one object per line)")
    p.add_argument("--interval", type=float, default=2.0, metavar="SECONDS", help="refresh period of --watch")
    p = command("report", cmd_report, "the table of all jobs as CSV on stdout, with the best value so far; "
                "or the failures grouped, plots and a one-file HTML report")
    p.add_argument("--plot", nargs="?", const="", metavar="PATH",
                   help="write the plots to PATH (default .spearmint/report.png; needs spearmint-nn[plot])")
    p.add_argument("--svg", action="store_true", help="write the plots as SVG instead of PNG")
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report to PATH")
    p.add_argument("--failures", action="store_true",
                   help="instead of the CSV, print the failed jobs grouped by kind, reason and place, "
                   "each group with the last lines of its output")
    p = command("cancel", cmd_cancel, "cancel pending/running jobs (all of them when no JOB is given)")
    p.add_argument("jobs", metavar="JOB", nargs="*", type=int, help="job ids")
    p = command("add", cmd_add, "import a result obtained elsewhere, or queue a point to run")
    p.add_argument("params_file", metavar="PARAMS.json",
                   help="params ({\"x\": [1.0], ...}) or {\"params\": ..., \"value\": ...}")
    p.add_argument("value", nargs="?", help="the objective value, or a JSON object task -> value; "
                   "omit it to queue the point for running")
    p = sub.add_parser("init", help="create a new experiment folder (config.json and wrapper.py) that runs as it is",
                       description="create a new experiment folder (config.json and wrapper.py) that runs as it is")
    p.add_argument("experiment", metavar="NAME", help="the folder to create (must not exist or be empty)")
    p.set_defaults(func=cmd_init)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        print(f"spearmint-nn: {exc}", file=sys.stderr)
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
