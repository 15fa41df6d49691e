"""Scale: per-event work does not grow with the number of finished jobs, and hundreds of pending
jobs are fantasised in one batched update.

The daemon test runs the real daemon (in this process, so that file opens can be counted with a
Python audit hook) over an experiment holding 10,000 finished jobs, with real local jobs.
"""
from __future__ import annotations

import io
import os
import sys
import threading
import time

import pytest

import numpy as np
import torch

from spearmint_nn.search.acquisition import LogExpectedImprovement, condition_on_pending
from experiments.benchmarks.daemon_scale import generate_jobs, make_experiment
from experiments.benchmarks.functions import FUNCTIONS
from spearmint_nn.experiment.config import load_config
from spearmint_nn.daemon.build import build_daemon
from spearmint_nn.daemon.loop import Daemon
from spearmint_nn.daemon.proposer import Proposer
from spearmint_nn.daemon.event_log import EventLog
from spearmint_nn.daemon import summaries as summaries_module
from spearmint_nn.daemon.summaries import SummaryWriter
from spearmint_nn.experiment.store import Store
from helpers.experiments import write_finished_experiment
from spearmint_nn.models.dngo import DNGO
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.suggestion import Suggestion
from spearmint_nn.views.progress import DaemonProgress

N_FINISHED = 10_000
SMALL_DNGO = {"n_samples": 4, "train_steps": 150, "warm_steps": 30, "burn_in": 6, "reburn_in": 2}

# ---- counting file operations of this process ---------------------------------------------------

_recording: list[tuple[str, str]] | None = None


def _audit(event: str, args: tuple) -> None:
    if _recording is not None and event in ("open", "os.listdir", "os.scandir"):
        path = args[0] if args else None
        if isinstance(path, (str, bytes, os.PathLike)):
            _recording.append((event, os.fsdecode(path)))


sys.addaudithook(_audit)  # audit hooks cannot be removed; it records only while _recording is set


@pytest.mark.slow
def test_daemon_events_touch_only_the_changed_jobs_with_10000_finished(tmp_path):
    new_jobs = 8
    # 10,000 complete jobs made through the Store API (with fsync off while generating), then
    # real local jobs of 0.4 s each
    folder = make_experiment(tmp_path / "exp", (0.4, 0.4), **{
        "max-finished-jobs": N_FINISHED + new_jobs, "max-concurrent": 4, "polling-time": 0.3})
    generate_jobs(folder, N_FINISHED)
    daemon = build_daemon(load_config(folder), stream=io.StringIO())

    polls: list[tuple[list[str], set[str]]] = []
    real_poll = daemon.driver.poll

    def counting_poll(ids):
        running = {j.scheduler_id for j in daemon.store.jobs("running") if j.scheduler_id}
        polls.append((list(ids), running))
        return real_poll(ids)

    daemon.driver.poll = counting_poll
    started = {}

    def on_event(kind, message, fields):
        global _recording
        if kind == "state":  # loading and replay are done: from here on, only events
            started["at"] = time.monotonic()
            _recording = []

    global _recording
    progress = DaemonProgress(daemon.config, stream=io.StringIO(), interactive=False)  # as `run` has it

    def on_start(reporter, store):
        progress.attach(reporter, store)
        reporter.add_listener(on_event)

    daemon._on_start = on_start
    try:
        assert daemon.run() == 0
    finally:
        opened, _recording = _recording, None
    elapsed = time.monotonic() - started["at"]

    counts = daemon.store.counts()
    assert counts["complete"] == N_FINISHED + new_jobs and counts["running"] == counts["pending"] == 0
    state = str(folder / ".spearmint")
    old_files = [p for _, p in opened if p.startswith(state) and _old_job_file(p)]
    assert old_files == [], f"events read files of old jobs: {old_files[:5]}"
    growing = ("complete", "failed", "inputs", "results")
    listed = [p for e, p in opened if e != "open" and os.path.basename(p.rstrip("/")) in growing]
    assert listed == [], f"events listed folders that grow with finished jobs: {listed[:5]}"
    # each new job costs a bounded number of opens (its files, the summaries, /proc), not O(N)
    assert len(opened) < 120 * new_jobs, len(opened)

    # one driver poll per cycle, each for every running job at once
    assert polls and all(sorted(ids) == sorted(running) for ids, running in polls)
    assert max(len(ids) for ids, _ in polls) >= 2
    assert len(polls) <= elapsed / 0.3 + 2


def _old_job_file(path: str) -> bool:
    """A job, input or result file of one of the pre-existing N_FINISHED jobs."""
    name = os.path.basename(path)
    folder = os.path.basename(os.path.dirname(path))
    return (folder in ("complete", "failed", "inputs", "results", "pending", "running")
            and name[:6].isdigit() and int(name[:6]) <= N_FINISHED)


def test_summaries_are_rewritten_at_most_a_tenth_of_the_time(monkeypatch, tmp_path):
    writes = []

    def slow_write(store, config, model_best=None):
        time.sleep(0.05)
        writes.append(1)

    monkeypatch.setattr(summaries_module, "write_summaries", slow_write)
    monkeypatch.setattr(summaries_module, "write_live_page", lambda snap, path, running: None)
    config = load_config(write_finished_experiment(tmp_path, 3), check_driver=False)
    writer = SummaryWriter(store=Store(config.paths).load_all(), config=config)
    writer.write_if_due()  # the live page's first
    assert writer.seconds_until_due() > 30 and writes == []  # nothing stale: only the page's heartbeat
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:  # an event every 10 ms
        writer.mark_stale()
        writer.write_if_due()
        time.sleep(0.01)
    # 1.5 s with 0.05 s rewrites spaced by >= 0.45 s: 4 at most (every event would be ~25)
    assert 2 <= len(writes) <= 4
    assert writer.seconds_until_due() < 1  # the last changes are still due...
    writer.finish()  # ...and the exit's write is unconditional
    assert len(writes) <= 5 and writer.seconds_until_due() > 30


def test_one_refit_for_several_completions():
    problem = FUNCTIONS["branin"]
    opt = Optimizer(problem.variables, model="dngo", seed=0, model_options=SMALL_DNGO)
    rng = np.random.default_rng(0)
    for x in rng.random((12, 2)):
        params = opt.space.decode(x[None])[0]
        opt.observe(params, problem(params))
    opt.suggest(1)
    fits = []
    real_fit = opt.models.objective.fit
    opt.models.objective.fit = lambda X, y: (fits.append(len(y)), real_fit(X, y))
    for x in rng.random((7, 2)):
        params = opt.space.decode(x[None])[0]
        opt.observe(params, problem(params))
    batch = opt.suggest(3)
    assert fits == [19] and len(batch) == 3


def test_completions_are_recorded_while_the_proposer_is_busy():
    release, entered = threading.Event(), threading.Event()

    class SlowOptimizer:
        n_observed = 0

        def observe(self, params, value, duration=None):
            self.n_observed += 1

        def propose(self, n, pending=()):
            entered.set()
            release.wait(10)
            return Suggestion(points=[{"x": [0.0]}] * n, predicted_durations=[None] * n, seconds=0.0,
                              refit_seconds=None, n_observed=self.n_observed, segment_start=0, warpings=None,
                              chosen_by=["sobol"] * n)

        def forget(self, params):
            return True

    optimizer = SlowOptimizer()
    wake = threading.Event()
    proposer = Proposer(optimizer, EventLog(None, io.StringIO()), wake)
    try:
        proposer.request(2, [])
        assert entered.wait(5) and proposer.busy
        start = time.perf_counter()
        for i in range(200):  # what the main loop does for each completion while a fit runs
            proposer.observe(i, {"x": [float(i)]}, 1.0, None)
            assert proposer.take() is None
        assert time.perf_counter() - start < 0.5  # nothing waited for the busy optimizer
        assert optimizer.n_observed == 0
        release.set()
        assert wake.wait(5)
        assert proposer.take() == [{"x": [0.0]}] * 2
        wake.clear()
        proposer.request(1, [])  # the queued results reach the optimizer before the next suggest
        assert wake.wait(5) and proposer.busy  # done, and busy until its proposal is taken
        assert optimizer.n_observed == 200
        assert proposer.take() == [{"x": [0.0]}] and not proposer.busy
    finally:
        release.set()
        proposer.close()


def test_fantasies_over_800_pending_jobs_change_the_acquisition():
    problem = FUNCTIONS["hartmann6"]
    rng = np.random.default_rng(1)
    X = torch.as_tensor(rng.random((200, 6)))
    y = torch.as_tensor([problem({"x": x}) for x in X.numpy()])
    y = (y - y.mean()) / y.std()
    model = DNGO(6, seed=0, **SMALL_DNGO)
    model.fit(X, y)
    best = float(y.min())
    # 800 pending jobs, a quarter of them packed around the point EI likes best
    candidates = torch.as_tensor(rng.random((4000, 6)))
    plain = LogExpectedImprovement(model, best)
    with torch.no_grad():
        top = candidates[int(torch.argmax(plain(candidates)))]
    near = (top + 0.01 * torch.as_tensor(rng.standard_normal((200, 6)))).clamp(0, 1)
    pending = torch.cat([near, torch.as_tensor(rng.random((600, 6)))])
    start = time.perf_counter()
    fantasised, best_rows = condition_on_pending(model, best, pending, 10, torch.Generator().manual_seed(0))
    with torch.no_grad():
        mean, var = fantasised.posterior(candidates)
        after = LogExpectedImprovement(fantasised, best_rows)(candidates)
    elapsed = time.perf_counter() - start
    with torch.no_grad():
        before = plain(candidates)
        _, latent_before = model.posterior(top[None], observation_noise=False)
        _, latent_after = fantasised.posterior(top[None], observation_noise=False)
    assert mean.shape == var.shape == (SMALL_DNGO["n_samples"] * 10, 4000)
    assert fantasised.fantasy_values.shape == (SMALL_DNGO["n_samples"] * 10, 800)
    assert bool((best_rows <= best + 1e-12).all())
    assert elapsed < 20.0
    # with 200 jobs running next to it, the model is nearly sure of f at the former favourite...
    assert float(latent_after.mean()) < 0.1 * float(latent_before.mean())
    # ...and the acquisition changed
    assert float((after - before).abs().mean()) > 0.1


def test_suggest_with_800_pending_jobs_stays_out_of_them():
    problem = FUNCTIONS["hartmann6"]
    rng = np.random.default_rng(2)
    opt = Optimizer(problem.variables, model="dngo", seed=0, model_options=SMALL_DNGO, n_candidates=1000)
    for x in rng.random((100, 6)):
        opt.observe({"x": x}, problem({"x": x}))
    pending = [{"x": x} for x in rng.random((800, 6))]
    start = time.perf_counter()
    batch = opt.suggest(2, pending=pending)
    assert time.perf_counter() - start < 60.0
    taken = {tuple(np.round(p["x"], 9)) for p in pending}
    assert len(batch) == 2 and all(tuple(np.round(b["x"], 9)) not in taken for b in batch)
    assert not np.allclose(batch[0]["x"], batch[1]["x"])
