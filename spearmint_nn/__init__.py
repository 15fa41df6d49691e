"""spearmint-nn: Bayesian optimization with neural-network and GP surrogates."""
