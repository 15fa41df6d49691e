"""spearmint-nn: Bayesian optimization with neural-network and GP surrogates."""


def __getattr__(name: str):
    # ``spearmint_nn.Optimizer`` without importing torch for users of the light modules.
    if name == "Optimizer":
        from .search.optimizer import Optimizer

        return Optimizer
    raise AttributeError(f"module 'spearmint_nn' has no attribute {name!r}")
