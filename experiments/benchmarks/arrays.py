"""Job arrays against one submission per job, on a real SLURM: scheduler calls and seconds.

``--jobs`` trivial jobs (``/bin/true``) go through the SLURM driver twice: once as job arrays
(``submit_many``: one ``sbatch --array`` per ``array-size`` jobs) and once with ``array-size``
1 (one ``sbatch`` per job). Each way is then polled once (the daemon's one status call for all
running jobs) and cancelled with one ``scancel``. Every scheduler command the driver runs is
counted and timed, and the queue entries ``squeue`` shows for the jobs (without ``-r``, as a
user or a site's ``MaxJobs`` sees them) are counted.

The jobs are submitted held (``--hold``) and cancelled by their ids at the end: what is measured
is the scheduler's side of submitting and polling, and a shared cluster is not handed a thousand
jobs to run. Needs ``sbatch`` on PATH (``tests/cluster/slurm-up.sh`` starts the project's own).

    python -m experiments.benchmarks.arrays [--jobs 500] [--array-size 1000] [--json out.json]
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from spearmint_nn.drivers.base import JobSpec, SubmitError
from spearmint_nn.drivers.batch import CommandResult
from spearmint_nn.drivers.slurm import SlurmDriver

from .command_line import benchmark_parser
from .provenance import write_json


class CountingSlurm(SlurmDriver):
    """The SLURM driver, counting and timing each scheduler command it runs."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()

    def call(self, argv: Sequence[str], *args: Any, **kwargs: Any) -> CommandResult:
        start = time.perf_counter()
        try:
            return super().call(argv, *args, **kwargs)
        finally:
            self.calls[argv[0]] += 1
            self.seconds[argv[0]] += time.perf_counter() - start


def specs(folder: Path, count: int) -> list[JobSpec]:
    state = folder / ".spearmint"
    return [JobSpec(job_id=i, command=["/bin/true"], workdir=folder, stdout=state / "output" / f"{i:06d}.out",
                    stderr=state / "output" / f"{i:06d}.err", script_path=state / "scripts" / f"{i:06d}.sh",
                    name=f"bench-{folder.name}-{i}") for i in range(1, count + 1)]


def measure(folder: Path, count: int, array_size: int) -> dict[str, Any]:
    """Submit, poll once and cancel ``count`` held jobs with ``array-size`` ``array_size``."""
    folder.mkdir(parents=True)
    driver = CountingSlurm({"extra-args": ["--hold"], "array-size": array_size}, folder / ".spearmint")
    driver.max_concurrent = count
    jobs = specs(folder, count)
    start = time.perf_counter()
    answers = driver.submit_many(jobs)
    submit_s = time.perf_counter() - start
    ids = [a for a in answers if not isinstance(a, SubmitError)]
    failed = [str(a) for a in answers if isinstance(a, SubmitError)]
    try:
        name_prefix = f"bench-{folder.name}-"
        listing = subprocess.run(["squeue", "-h", "-o", "%i|%j"], capture_output=True, text=True, timeout=120).stdout
        entries = sum(1 for line in listing.splitlines() if line.partition("|")[2].startswith(name_prefix))
        start = time.perf_counter()
        statuses = driver.poll(ids)
        poll_s = time.perf_counter() - start
    finally:
        start = time.perf_counter()
        driver.cancel(ids)
        cancel_s = time.perf_counter() - start
    return {"array_size": array_size, "jobs": count, "submitted": len(ids), "failed": failed[:3],
            "sbatch_calls": driver.calls["sbatch"], "submit_s": round(submit_s, 2),
            "queue_entries": entries, "poll_calls": driver.calls["squeue"] + driver.calls["sacct"],
            "poll_s": round(poll_s, 2), "polled_queued": sum(s.state.value == "queued" for s in statuses.values()),
            "scancel_calls": driver.calls["scancel"], "cancel_s": round(cancel_s, 2)}


def report(runs: Sequence[dict[str, Any]]) -> str:
    rows = [("array-size", "array_size"), ("jobs submitted", "submitted"), ("sbatch calls", "sbatch_calls"),
            ("seconds to submit", "submit_s"), ("queue entries (squeue without -r)", "queue_entries"),
            ("status calls, seconds of one poll", None), ("scancel calls, seconds", None)]
    lines = ["| | " + " | ".join("arrays" if r["array_size"] > 1 else "one per job" for r in runs) + " |",
             "|---|" + "---|" * len(runs)]
    for title, key in rows:
        if key is not None:
            cells = [str(r[key]) for r in runs]
        elif title.startswith("status"):
            cells = [f"{r['poll_calls']}, {r['poll_s']} s" for r in runs]
        else:
            cells = [f"{r['scancel_calls']}, {r['cancel_s']} s" for r in runs]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = benchmark_parser("arrays", __doc__.splitlines()[0], json=True)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--array-size", type=int, default=1000, help="the arrays' driver.array-size")
    # not the common --workdir: the folders are made inside it and removed afterwards
    parser.add_argument("--workdir", help="where the temporary experiment folders go (default: the system's)")
    args = parser.parse_args(argv)
    version = subprocess.run(["sbatch", "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        runs = [measure(Path(work) / "arrays", args.jobs, args.array_size),
                measure(Path(work) / "single", args.jobs, 1)]
    print(report(runs))
    summary = {"scheduler": version, "runs": runs}
    if args.json:
        write_json(args.json, summary)
    return 0 if all(not r["failed"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
