"""The problem statement, torch-free: what is searched and how the search is set up.

``space`` (the variables and their unit-cube encoding), ``space_edits`` (earlier jobs read
against edited variables), ``tasks`` (the objective, the constraints and their likelihoods),
``settings`` (:class:`~spearmint_nn.problem.settings.SearchSettings` and the names of its
choices) and ``parsers`` (the checks of their values). Both wings stand on it: ``experiment/``
reads config.json into these types and ``search/`` searches them. Every job process imports it,
so it imports neither torch nor anything from ``search/``, ``models/`` or ``daemon/``
(tests/unit/problem/test_boundaries.py).
"""
