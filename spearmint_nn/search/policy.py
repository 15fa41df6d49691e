"""When the search changes course, decided from counts and the history alone: which surrogate
``model="auto"`` uses (:func:`auto_model_choice`), and when a stuck search starts afresh, the
segment of the observations the objective model is fitted to (:func:`restart_index`)."""
from __future__ import annotations

import math
from typing import Sequence

from ..problem.settings import AUTO_FINAL, AUTO_START

# The auto rule's thresholds (measured: see auto_model_choice).
AUTO_GP_MAX_OBSERVATIONS = 200
AUTO_GP_MAX_IN_FLIGHT = 50
# ... and the GP's proposals may keep at most this share of the workers waiting (waiting_share),
# judged on this many asynchronous proposals in a row.
AUTO_GP_MAX_WAITING_SHARE = 0.1
PACE_CALLS = 5
# No restart before this many initial designs' worth of evaluations (see restart_index).
RESTART_EARLIEST_DESIGNS = 10


def auto_model_choice(n_observed: int, n_in_flight: int, waiting: float = 0.0) -> str:
    """The surrogate ``model="auto"`` uses: "gp" while it is the better and affordable model, else "dngo".

    With few observations the GP is clearly the stronger model (10 seeds, RESULTS.md "GP vs DNGO vs
    random": regret 1e-3 on Branin within 40 evaluations in 9 runs of 10 against DNGO's 1,
    Hartmann6 in a median of 44 against 53). Its refit grows as N^3 per sampler step (a warm
    suggestion on Hartmann6 at N = 200: 3.3 s against DNGO's 1.4 s, a cold one 25 s) and its fantasies
    condition S x F Cholesky factors of size N + J, while DNGO's cost is nearly flat in N and
    its fantasies are rank-J updates. So the GP is used while N < 200 finished observations and
    at most 50 jobs are in flight (pending plus the batch being proposed); DNGO from then on.
    With 50 in flight the GP is still the better model and affordable (batches of 50 on
    Hartmann6, RESULTS.md "`benchmarks.parallel`": -3.311 against DNGO's -3.266 at 200
    evaluations, -2.83 against -2.23 at 100; 31 s against 23 s a call of 50).

    ``waiting`` is the share of the workers that the GP's recent proposals kept waiting
    (:func:`waiting_share`); above ``AUTO_GP_MAX_WAITING_SHARE`` DNGO takes over however few the
    observations: a better model that idles a tenth of the cluster loses against simulated time
    (Levy 20-D with 50 workers, RESULTS.md: the GP's proposals took 16 s for 5 waiting workers at
    N = 100, a third of the workers' time went waiting, DNGO's take 2 s).
    """
    if (n_observed >= AUTO_GP_MAX_OBSERVATIONS or n_in_flight > AUTO_GP_MAX_IN_FLIGHT
            or waiting > AUTO_GP_MAX_WAITING_SHARE):
        return AUTO_FINAL
    return AUTO_START


def waiting_share(calls: Sequence[tuple[float, int, int]]) -> float:
    """The share of the workers kept waiting by the proposals ``calls``: (seconds, points asked,
    jobs in flight counting those asked) of consecutive asynchronous proposals; 0 unless there are
    ``PACE_CALLS`` of them and each asked for 2 points or more.

    A proposal asks for as many points as workers are free. When each asks for several, the
    completions piled up while the one before ran: the proposer is working back to back and the
    cluster waits on it. Then over the calls' time each call's n free workers of W waited at
    least its s seconds, a share sum(s n / W) / sum(s) of the worker time. One call for a single
    point says the proposer was idle at some time, keeping pace; without a clock the optimizer
    cannot say how long, so it takes no share.
    """
    if len(calls) < PACE_CALLS or any(n < 2 for _, n, _ in calls):
        return 0.0
    seconds = sum(s for s, _, _ in calls)
    return sum(s * n / w for s, n, w in calls) / seconds if seconds > 0 else 0.0


def restart_index(objective: Sequence[float], restart_after: int, earliest: int, budget: int | None,
                  round_size: int = 1) -> int:
    """Index of the first observation of the current search segment: 0, or where the search last restarted.

    ``objective`` (N,) holds the objective of each observation in the order observed, NaN where
    the job failed or was infeasible. ``round_size`` is how many jobs the search runs at once: a
    round of that many results is what one result is to a sequential search (each proposal of a
    round saw the same results), so the counts below are in rounds. At each count i of
    observations (0 <= i <= N) the search restarts, starting a segment at i, when all of these hold:

    - none of the segment's last ``restart_after`` rounds of observations improved on the
      segment's best value (``restart_after`` = 0: never restart);
    - the segment has had ``earliest`` rounds of observations: a search, first or restarted,
      that is still converging is not interrupted;
    - with a ``budget``, at least as many evaluations remain as were spent (budget - i >= i): a
      fresh search then has as much as the stuck one had. Without one, the segment has gone
      longer without improving than it took to find its best (i - last improvement >
      last improvement - start): a basin that still yields improvements at the pace it did is
      being refined, not stuck, and with no budget there is time to let it finish.

    Why: a model sure of the basin it sits in keeps EI there, however long the search goes on
    (DNGO and the GP alike on Hartmann6, whose second-best basin holds -3.20 against the global
    -3.32); the observations say nothing about the better basin, so only a search that forgets
    them reaches it (a restart that kept them and only ruled out a ball around the old best hugged
    the ball's rim: search/DESIGN.md, "Why forget"). It is computed from the history alone, so a
    restarted daemon that observes the same results in the same order finds the same segment.
    """
    if restart_after <= 0:
        return 0
    stall, earliest = restart_after * round_size, earliest * round_size
    start, best, last_improvement = 0, math.inf, 0
    for i in range(len(objective) + 1):
        time_left = (budget - i >= i) if budget is not None else (i - last_improvement > last_improvement - start)
        if i - last_improvement >= stall and i - start >= earliest and time_left:
            start, best, last_improvement = i, math.inf, i
        if i < len(objective) and objective[i] < best:  # False for NaN
            best, last_improvement = objective[i], i
    return start
