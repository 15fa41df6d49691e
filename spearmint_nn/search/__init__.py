"""The search engine: the ask/tell Optimizer and its stages, in the order data flows through them.

``candidates`` (point identity, projection, the screening set and where a proposal may not go),
``observations`` (the history), ``transforms`` (the output transforms), ``related`` (earlier
searches' data), ``model_store`` and ``model_bank`` (the models, their saved states and what
each is told), ``acquisition``, ``maximize`` (its optimiser), ``batch_draws`` (a batch chosen on
joint posterior draws), ``exploration`` (the Sobol stream and exploratory points), ``policy``
(the auto switch and restarts), ``reports`` (the model's best and its picture), ``suggestion``
and ``optimizer``. The problem it searches (space, tasks, settings) is
:mod:`spearmint_nn.problem`.
"""
