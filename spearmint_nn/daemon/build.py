"""The daemon's parts, built in one place from the config: the daemon is handed them.

Everything here is built before the daemon holds the experiment folder, so nothing built may
write to it: the log opens ``daemon.log`` at its first line (after the lock is taken), and
the site limits forget a stopped daemon's file only when told to. Two parts are made by the
daemon at its start instead, because they act as soon as they exist: the proposal thread
(:class:`~spearmint_nn.daemon.proposer.Proposer`, which owns the optimizer from then on and
writes the related experiments' summary) and the heartbeat lock.

A test or a tool hands in its own driver (one that injects faults, or counts calls) with
``driver``: the daemon uses whatever driver it is handed, with the config's settings.
"""
from __future__ import annotations

from typing import Callable, TextIO

from ..drivers.base import Driver, driver_class
from ..experiment.config import ExperimentConfig
from ..experiment.store import Store
from .event_log import EventLog
from .events.curves import CurveReader
from .events.late_results import LateResults
from .job_ends import JobEnds
from .loop import Daemon, DaemonParts
from .policies.early_stopping import EarlyStopping
from .policies.site_limits import SiteLimits
from .proposer import make_optimizer
from .scheduler_calls import SchedulerCalls
from .submitter import Submitter
from .summaries import SummaryWriter

def make_driver(config: ExperimentConfig) -> Driver:
    """The config's driver, with the warning before the time limit that its ``resume`` key asks
    for, and its max-concurrent (a job array runs no more tasks at once)."""
    return driver_class(config.driver_name)(config.driver_options, config.paths.state,
                                            warning=config.resume.warning if config.resume is not None else None,
                                            max_concurrent=config.max_concurrent)


def build_parts(config: ExperimentConfig, driver: Driver | None = None, stream: TextIO | None = None) -> DaemonParts:
    """The daemon's parts for ``config`` (``driver``: one to use instead of the config's;
    ``stream``: where console lines go, stderr by default). Raises ConfigError for a setting
    the optimizer rejects, before anything is written."""
    # The optimizer first: an option it rejects is a config error before anything else is made.
    optimizer = make_optimizer(config)
    driver = make_driver(config) if driver is None else driver
    store = Store(config.paths)
    log = EventLog(config.paths.log, stream)
    summaries = SummaryWriter(store, config, log)
    calls = SchedulerCalls(config.polling_time)
    submitter = Submitter(config, driver, store, log, calls)
    curves = CurveReader(store, log)
    return DaemonParts(
        config=config, optimizer=optimizer, driver=driver, calls=calls, store=store, log=log, summaries=summaries,
        submitter=submitter, site_limits=SiteLimits(config.paths, log, driver.name), curves=curves,
        early_stopping=EarlyStopping(config, curves.curve), late_results=LateResults(store),
        # the model listens once the proposal thread is started (Daemon.run); only jobs this
        # daemon submitted count toward a streak of identical failures
        ends=JobEnds(config, store, driver, log, curves, summaries, submitted_here=submitter.submitted_here))


def build_daemon(config: ExperimentConfig, driver: Driver | None = None, stream: TextIO | None = None,
                 cancel_on_exit: bool = False,
                 on_start: Callable[[EventLog, Store], None] | None = None) -> Daemon:
    """``spearmint-nn run``'s daemon for ``config``: its parts built (:func:`build_parts`), then
    :meth:`Daemon.run <spearmint_nn.daemon.loop.Daemon.run>` (returns an exit code)."""
    return Daemon(build_parts(config, driver, stream), cancel_on_exit=cancel_on_exit, on_start=on_start)
