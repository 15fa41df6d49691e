"""Benchmark scripts: run with python -m spearmint_nn.benchmarks.<name>."""
