"""Benchmark scripts: run with python -m spearmint_nn.benchmarks.<name>."""
from .threads import limit_threads

# before any benchmark module imports numpy or torch (see threads' docstring)
limit_threads()
