"""The local driver's settings as a daemon applies them: the default time limit, GPU slots."""
from __future__ import annotations

from helpers.experiments import cli, quick_config
from spearmint_nn.experiment.config import load_config


def test_the_default_time_limit_is_a_day_and_null_means_none(make_experiment):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 2}))
    assert cli("run", folder, timeout=300).returncode == 0
    assert "driver local (time-limit 86400 s)" in (folder / ".spearmint" / "daemon.log").read_text()
    unlimited = make_experiment(quick_config(driver={"name": "local", "time-limit": None}), name="unlimited")
    assert load_config(unlimited).driver_options == {"time-limit": None}
