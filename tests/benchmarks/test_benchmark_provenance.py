"""Every benchmark result says where it comes from: date, machine, commit, versions, threads."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import experiments.benchmarks as benchmarks
from helpers.harness import harness_environment

REPOSITORY = Path(benchmarks.__file__).resolve().parents[2]


def test_a_benchmark_run_records_its_commit_versions_and_threads(tmp_path):
    out = tmp_path / "batch.json"
    subprocess.run([sys.executable, "-m", "experiments.benchmarks.parallel", "--mode", "batch", "--problems",
                    "branin", "--methods", "sobol", "--workers-in-flight", "2", "--evals", "4", "--seeds", "0",
                    "--json", str(out)], check=True, capture_output=True, cwd=tmp_path,
                   env=harness_environment())
    block = json.loads(out.read_text())["provenance"]
    written = dt.datetime.fromisoformat(block["date"])
    assert abs((dt.datetime.now(dt.timezone.utc) - written).total_seconds()) < 600
    assert block["machine"]["cpus"] >= 1 and block["machine"]["python"] == sys.version.split()[0]
    if "model name" in (Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""):
        assert block["machine"]["processor"]  # Linux leaves platform.processor() empty: read from cpuinfo
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True)
    if head.returncode == 0:  # a checkout (an installed package has no commit to record)
        assert block["git"]["commit"] == head.stdout.strip() and isinstance(block["git"]["dirty"], bool)
    for name in ("spearmint-nn", "torch", "numpy", "scipy"):
        assert block["versions"][name] == metadata.version(name)
    assert block["threads"]["pools"] and all(threads == 1 for _, threads in block["threads"]["pools"])


def test_every_benchmark_writes_its_results_through_the_provenance_helper():
    # a report written with json.dump directly would carry no provenance
    folder = Path(benchmarks.__file__).parent
    direct = [path.name for path in folder.glob("*.py")
              if path.name != "provenance.py" and "json.dump(" in path.read_text()]
    assert direct == []
