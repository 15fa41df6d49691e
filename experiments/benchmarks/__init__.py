"""The benchmark harness, outside the installed package: run from the repository root with
``python -m experiments.benchmarks.<name>`` (its requirements: ``requirements.txt`` here)."""
from .threads import limit_threads

# before any benchmark module imports numpy or torch (see threads' docstring)
limit_threads()
