"""Early stopping: the curves of running jobs, the rules that judge them, and what a stopped
job would have reached. Torch-free, and standing on ``problem`` alone, so that the daemon
(``spearmint_nn.daemon.policies.early_stopping``), the ask/tell ``Optimizer``
(``spearmint_nn.search.observations``) and the config (``spearmint_nn.experiment.config``, the
``early-stopping`` key) all use the same rules with the same options.

As Optuna keeps ``pruners/`` apart from its samplers, one rule a file:

* :mod:`.curve`: a curve's points (:class:`~.curve.CurvePoint`, what a job reports at a step:
  the report files of :mod:`spearmint_nn.experiment.curves` hold them one a line) and another
  job as a rule sees it (:class:`~.curve.Other`), with what the rules read from curves;
* :mod:`.settings`: the ``early-stopping`` key, parsed (:class:`~.settings.StoppingSettings`);
* :mod:`.decision`: a rule's answer, an :class:`~.decision.Action` (continue, stop, and the
  pause that freeze-thaw search will add) and one line saying why;
* :mod:`.median`, :mod:`.asha`, :mod:`.model`: the rules, each a function of the job's curve,
  the others and the direction;
* :mod:`.rules`: the registry of rules by name, and :func:`~.rules.decide`, the checks every rule
  shares before it asks the job's rule;
* :mod:`.prediction`: where a stopped job was heading (:func:`~.prediction.predict_final`).

The rules keep nothing between calls except the step up to which a job was already judged
(``since``), which a restarted daemon does not know: they answer the same for a daemon that was
restarted.
"""
