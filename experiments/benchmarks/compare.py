"""DNGO vs the Spearmint GP (with and without input warping) vs Sobol random search.

Problems: Branin, Hartmann3, Hartmann6 and ``log4`` (a 4-D bowl in log10(x) whose optimum sits
near the lower bounds of a linear-scale box, the case input warping is for); regret threshold
1e-3 everywhere. Then the seconds of one warm suggestion at N observations of Hartmann6, per
model. See :mod:`experiments.benchmarks.quality` for what is measured.

    python -m experiments.benchmarks.compare [--seeds 10] [--methods dngo,gp,gp-nowarp,sobol]
        [--evals branin:30,40 hartmann3:22,30 hartmann6:55,80 log4:30,40]
        [--timing-sizes 25,50,100,200] [--workers 1] [--json out.json]
"""
from __future__ import annotations

from typing import Any

from . import quality


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return quality.main(
        argv, name="compare", description=__doc__.split("\n\n")[0],
        default_evals=["branin:30,40", "hartmann3:22,30", "hartmann6:55,80", "log4:30,40"],
        default_methods="dngo,gp,gp-nowarp,sobol",
        default_timing_sizes="25,50,100,200", default_timing_methods="gp,gp-nowarp,dngo",
        thresholds={},
    )


if __name__ == "__main__":
    main()
