"""config.json edited while the daemon runs: which changes it takes up now, and which wait for
a restart.

At each poll the loop asks :meth:`LiveConfig.edit` whether the file changed (its mtime). The
keys of :data:`~spearmint_nn.experiment.config.LIVE_KEYS` are taken up at once; any other change
is noticed and reported as needing a restart, since a new space or model cannot be swapped under
a running search; a file that does not validate changes nothing, and the daemon submits nothing
until it does (an edit in progress may mean to change what the next jobs do). The answer is a value (:class:`ConfigEdit`) that the loop applies.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...errors import ConfigError
from ...experiment.config import LIVE_KEYS, ExperimentConfig, config_values, field_name, load_config
from ...experiment.layout import ExperimentPaths


@dataclass(frozen=True)
class ConfigEdit:
    """An edit of config.json: ``config`` with the ``live`` keys taken up (the one in force
    when the file does not validate: ``error`` says why), and the keys changed that wait for a
    restart (``later``)."""

    config: ExperimentConfig
    live: tuple[str, ...] = ()
    later: tuple[str, ...] = ()
    error: str | None = None

    def lines(self) -> list[tuple[str, str]]:
        """What the daemon says of the edit: (kind, line) pairs for its event log."""
        if self.error is not None:
            return [("warning", f"config.json changed but does not validate ({self.error}); submitting nothing "
                                f"until it does (the running jobs go on with the settings read before)")]
        lines = []
        if self.live:
            lines.append(("config", "config.json changed: now " + ", ".join(
                f"{key} {getattr(self.config, field_name(key))}" for key in self.live)))
        if self.later:
            lines.append(("warning", f"config.json changed {', '.join(self.later)}: noticed but not applied "
                                     f"while running; stop the daemon and run again for that"))
        return lines


class LiveConfig:
    """Watches config.json for edits (see the module docstring)."""

    def __init__(self, paths: ExperimentPaths):
        self.paths = paths
        self._mtime = self._read_mtime()

    def _read_mtime(self) -> float | None:
        try:
            return self.paths.config.stat().st_mtime
        except OSError:
            return None

    def edit(self, config: ExperimentConfig) -> ConfigEdit | None:
        """The edit of config.json since it was last read, against ``config`` in force; None
        when the file has not changed."""
        mtime = self._read_mtime()
        if mtime == self._mtime:
            return None
        self._mtime = mtime
        try:
            new = load_config(self.paths.experiment, driver_override=config.driver_name, check_driver=False)
        except ConfigError as exc:
            return ConfigEdit(config, error=str(exc))
        before, after = config_values(config), config_values(new)
        changed = [key for key in after if after[key] != before[key]]
        live = tuple(key for key in changed if key in LIVE_KEYS)
        later = tuple(key for key in changed if key not in LIVE_KEYS)
        if live:
            config = dataclasses.replace(config, **{field_name(key): after[key] for key in live})
        return ConfigEdit(config, live, later)
