"""``spearmint-nn init NAME``: a new experiment folder that runs as it is.

It holds ``config.json`` (every key explained in the README) and ``wrapper.py``, a
``main(job_id, params)`` template whose stand-in objective takes a fraction of a second, so
``spearmint-nn run NAME`` works at once; the user then replaces the stand-in by their training
code, the variables by their own, and chooses the objective's likelihood (NOISELESS as written,
GAUSSIAN for a noisy training; the wrapper's comment says how to tell).
"""
from __future__ import annotations

import json
from pathlib import Path

from .errors import ConfigError

WRAPPER_FILE = "wrapper.py"

WRAPPER_TEMPLATE = '''"""Wrapper of the experiment {name!r}: spearmint-nn calls main(job_id, params) once per job.

Each job runs in its own process, in this folder. Print what you like (it goes to
.spearmint/output/<job id>.out and .err); raise an exception or return NaN to mark the job
failed, with the reason recorded. To try main by hand with the params a job gets (in Python,
in this folder):

    from spearmint_nn.runner import wrapper_params
    import wrapper
    print(wrapper.main(0, wrapper_params(".", learning_rate=0.01, layers=3, activation="relu")))
"""
import math


def main(job_id, params):
    # FLOAT and INT variables arrive as numpy arrays of length "size", ENUM as a list of strings.
    learning_rate = float(params["learning_rate"][0])
    layers = int(params["layers"][0])
    activation = params["activation"][0]
    print(f"job {{job_id}}: learning_rate={{learning_rate:.3g}} layers={{layers}} activation={{activation}}")

    # Replace this stand-in by your training and return the validation loss (lower is better).
    # A dict {{"loss": ..., "memory_gb": ...}} reports several tasks (see "tasks" in config.json).
    #
    # Then choose the loss's "likelihood" in config.json. NOISELESS (as written, and right for
    # this stand-in): the same params give the same loss, as a training with fixed seeds and
    # deterministic algorithms does; the best observed job is the best. GAUSSIAN: running the
    # same params twice gives different losses (random initialisation, shuffling, dropout
    # without fixed seeds); the model then averages the noise, and once enough jobs have
    # completed status also shows its best by the posterior mean, beside the best observed,
    # which may be a lucky draw.
    loss = (math.log10(learning_rate) + 2.5) ** 2 + 0.3 * abs(layers - 3)
    loss += {{"relu": 0.0, "tanh": 0.4, "gelu": 0.1}}[activation]
    return loss
'''


def default_config(name: str) -> dict:
    """The config.json of a new experiment: Spearmint's keys plus the local driver."""
    return {
        "language": "PYTHON",
        "main-file": WRAPPER_FILE,
        "experiment-name": name,
        "variables": {
            "learning_rate": {"type": "FLOAT", "size": 1, "min": 1e-5, "max": 1.0, "scale": "log"},
            "layers": {"type": "INT", "size": 1, "min": 1, "max": 8},
            "activation": {"type": "ENUM", "size": 1, "options": ["relu", "tanh", "gelu"]},
        },
        # A choice to make, not a default to keep: NOISELESS for a deterministic training (and
        # the stand-in), GAUSSIAN for a noisy one; wrapper.py says how to tell.
        "tasks": {"loss": {"type": "OBJECTIVE", "likelihood": "NOISELESS"}},
        "max-concurrent": 2,
        "max-finished-jobs": 30,
        "polling-time": 1,
        "driver": {"name": "local"},
    }


def create_experiment(folder: str | Path) -> list[Path]:
    """Write a new experiment folder; return the files written.

    Raises ConfigError when ``folder`` exists and is not empty (nothing is overwritten).
    """
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigError(str(folder), "already exists and is not empty; choose a new name")
    name = folder.resolve().name
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.json"
    wrapper = folder / WRAPPER_FILE
    config.write_text(json.dumps(default_config(name), indent=4) + "\n", encoding="utf-8")
    wrapper.write_text(WRAPPER_TEMPLATE.format(name=name), encoding="utf-8")
    return [config, wrapper]
