"""DNGO + integrated EI against Sobol random search, and DNGO's time per suggestion vs N.

Branin (50 and 200 evaluations) and Hartmann6 (100 and 200); regret thresholds 1e-3 (Branin)
and 1e-2 (Hartmann6). See :mod:`experiments.benchmarks.quality` for what is measured.

    python -m experiments.benchmarks.dngo [--seeds 10] [--evals branin:50,200 hartmann6:100,200]
        [--methods dngo,sobol] [--timing-sizes 100,500,2000,5000] [--workers 1] [--json out.json]
"""
from __future__ import annotations

from typing import Any

from . import quality

REGRET_THRESHOLDS = {"branin": 1e-3, "hartmann3": 1e-3, "hartmann6": 1e-2}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return quality.main(
        argv, name="dngo", description=__doc__.split("\n\n")[0],
        default_evals=["branin:50,200", "hartmann6:100,200"], default_methods="dngo,sobol",
        default_timing_sizes="100,500,2000,5000", default_timing_methods="dngo",
        thresholds=REGRET_THRESHOLDS,
    )


if __name__ == "__main__":
    main()
