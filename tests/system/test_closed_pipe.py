"""A command whose reader goes away (``spearmint-nn report DIR | head``) exits quietly, as Unix tools do."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from helpers.experiments import write_finished_experiment

CLOSED_PIPE_EXIT = 128 + signal.SIGPIPE  # what a shell reports for a tool killed by SIGPIPE


def _spearmint(*args, stdout) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "spearmint_nn", *map(str, args)], stdout=stdout,
                            stderr=subprocess.PIPE, text=True)


def test_report_piped_into_head_stops_without_a_word(tmp_path):
    exp = write_finished_experiment(tmp_path, 1500)  # a CSV far larger than a pipe's buffer
    proc = _spearmint("report", exp, stdout=subprocess.PIPE)
    header = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does after its line
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == CLOSED_PIPE_EXIT
    assert header.startswith("id,") and stderr == ""


def test_every_printing_command_stops_quietly_on_a_pipe_already_closed(tmp_path):
    exp = write_finished_experiment(tmp_path, 5)
    for args in (["status", exp], ["status", exp, "--json"], ["report", exp], ["report", exp, "--failures"],
                 ["init", tmp_path / "new"]):
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before the first byte
        proc = _spearmint(*args, stdout=write_end)
        os.close(write_end)
        stderr = proc.stderr.read()
        assert (proc.wait(timeout=120), stderr) == (CLOSED_PIPE_EXIT, ""), args
