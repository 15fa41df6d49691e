"""How a search is set up: :class:`SearchSettings`, the typed, checked settings of an
:class:`~spearmint_nn.search.optimizer.Optimizer`, each declared once, and the names of the
search's choices (models, acquisitions, kernels, output transforms, constraint models,
directions).

Each field carries, in its ``metadata`` (:func:`setting`), its parser from
:mod:`~spearmint_nn.problem.parsers`, its one-line description and its config.json key, if it
has one. config.json's rows for those keys are generated from the fields
(:data:`spearmint_nn.experiment.config.KEYS`), so a key and its keyword take the same values,
have the same default and say the same thing. A wrong value raises
:class:`~spearmint_nn.errors.ConfigError` (a ValueError) whose path is the field's name (the
key's, from config.json).

Each registry that maps a choice's name to its implementation is checked against its list at
import (:func:`check_registry`): ``spearmint_nn.search.acquisition.ACQUISITIONS`` and
``spearmint_nn.search.transforms.OUTPUT_TRANSFORMS`` where they are defined, the models'
``spearmint_nn.models.MODELS`` and ``spearmint_nn.models.kernels.CORRELATIONS`` by the
optimizer that uses them (the models do not import the search). Torch-free: the config module
builds the settings in every job process.
"""
from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, Iterable, Mapping

from ..errors import ConfigError, did_you_mean
from .parsers import Parser, choice, count, options, seed_number, share
from .tasks import Tasks, parse_tasks

#: The ``model`` (and ``output_transform``) value that lets the search choose.
AUTO = "auto"
#: The two surrogates ``auto`` moves between: the GP first, then DNGO for good
#: (:func:`spearmint_nn.search.policy.auto_model_choice`).
AUTO_START, AUTO_FINAL = "gp", "dngo"
#: The ``model`` value for Sobol random search, without a model.
RANDOM_SEARCH = "sobol"
#: Surrogate models, the keys of ``spearmint_nn.models.MODELS``.
SURROGATES = ("dngo", "dngo-warp", "gp", "gp-nowarp")
#: Every value of ``model``, in the order error messages list them.
MODEL_CHOICES = (AUTO, *SURROGATES, RANDOM_SEARCH)

#: Acquisition functions, the keys of ``spearmint_nn.search.acquisition.ACQUISITIONS``.
ACQUISITIONS = ("ei", "pi", "lcb", "ei-per-second")
#: The acquisition that divides EI by a predicted job duration (it needs a duration model).
DURATION_ACQUISITION = "ei-per-second"

#: The GP's correlation functions, the keys of ``spearmint_nn.models.kernels.CORRELATIONS`` in
#: the same order: the first is the default of the settings and of the GP itself.
KERNELS = ("matern52", "squared-exponential")

#: Output transforms, the keys of ``spearmint_nn.search.transforms.OUTPUT_TRANSFORMS``.
OUTPUT_TRANSFORMS = ("least-skewed", "standardise", "log-shift", "yeo-johnson")
#: Every value of ``output_transform``: auto (chosen by the model) first.
TRANSFORM_CHOICES = (AUTO, *OUTPUT_TRANSFORMS)

#: Models of an explicit constraint: a classifier of its sign, or a regression of its value.
CLASSIFIER = "classifier"
VALUE_MODEL = "value"
CONSTRAINT_MODELS = (CLASSIFIER, VALUE_MODEL)

#: The objective's directions, the default first.
DIRECTIONS = ("minimize", "maximize")


def check_registry(registry: str, implemented: Iterable[str], names: tuple[str, ...]) -> None:
    """Raise RuntimeError unless a registry implements exactly ``names``, in that order.

    Called where each registry is defined, so a name added on one side only fails at import
    rather than as a config value that validates and then has no implementation.
    """
    if tuple(implemented) != names:
        raise RuntimeError(f"{registry} implements {tuple(implemented)}, but spearmint_nn.problem.settings "
                           f"declares {names}: add the name to both")


direction_name = choice(*DIRECTIONS)


def parse_direction(value: Any) -> float:
    """The sign observed objective values are multiplied by: 1 to minimise, -1 to maximise."""
    return 1.0 if direction_name("direction", value) == "minimize" else -1.0


def setting(parse: Parser, doc: str, key: str | None = None, *, default: Any = MISSING,
            default_factory: Any = MISSING) -> Any:
    """A field of :class:`SearchSettings`: ``parse`` checks and normalises its value (a keyword's
    or config.json's alike), ``doc`` says what it does in one line, ``key`` is its config.json
    key (None: an Optimizer keyword only)."""
    return field(default=default, default_factory=default_factory,
                 metadata={"parse": parse, "doc": doc, "key": key})


def _tasks(path: str, value: Any) -> Tasks:
    return value if isinstance(value, Tasks) else parse_tasks(value)


@dataclass(frozen=True)
class SearchSettings:
    """The settings of one search; every field has a default (the fields' list follows).

    ``tasks`` is config.json's task section (or the Optimizer's ``tasks`` and ``likelihoods``):
    a NOISELESS constraint gets the step likelihood classifier, a NOISELESS objective a GP with
    fixed jitter instead of noise, and its failed points' neighbourhoods are not proposed again.
    """

    model: str = setting(choice(*MODEL_CHOICES), (
        "surrogate: auto (GP below 200 observations and 50 jobs in flight, then DNGO), dngo, dngo-warp "
        "(with input warping), gp, gp-nowarp or sobol (no model)"), "model", default=AUTO)
    seed: int | None = setting(seed_number, "seed of every random choice (null: fresh randomness)", "seed",
                               default=None)
    acquisition: str = setting(choice(*ACQUISITIONS), (
        "acquisition function: ei (expected improvement), pi, lcb or ei-per-second (EI over the "
        "predicted job duration)"), "acquisition", default="ei")
    acquisition_options: Mapping[str, Any] = setting(
        options, "keyword options of the acquisition (e.g. {\"kappa\": 2.0} for lcb)", default_factory=dict)
    # None: the space's default_initial_design (config.json fills it in as it loads). 0 works:
    # until two values are in there is nothing to fit, and the points come from the Sobol stream.
    initial_design: int | None = setting(count(0, optional=True), (
        "Sobol points before the model is used (default: number of parameters + 1, at least 2); 0: the "
        "model from the second value on"),
        "initial-design", default=None)
    fantasies: int = setting(count(1), "fantasised outcomes per pending job when proposing in parallel",
                             "fantasies", default=10)
    # Counted over every job ever proposed, so a restarted daemon keeps the rhythm (Optimizer.suggest).
    thompson_every: int = setting(count(0), (
        "one proposal in every this many made while other jobs are pending is a Thompson sample (an "
        "exploratory batch member); 0: never"), "thompson-every", default=10)
    # 0.5 kept large batches out of Hartmann6's local basins (search.candidates.crowding).
    crowding_share: float = setting(share, (
        "with more than 50 jobs in flight, no proposal where this share of them already is (within 10% of "
        "each range) while another place is open (0.5 for a landscape of several basins); 0: no limit"),
        "crowding-share", default=0.0)
    tasks: Tasks = setting(_tasks, (
        "the objective, the constraints and their likelihoods (default: one GAUSSIAN objective \"main\"), "
        "in either form parse_tasks reads"), default_factory=lambda: parse_tasks(None))
    direction: str = setting(direction_name, (
        "minimize or maximize the objective (values stay in the wrapper's sign everywhere)"), "direction",
        default=DIRECTIONS[0])
    n_candidates: int | None = setting(count(1, optional=True), (
        "Sobol screening candidates of the acquisition optimiser (None: chosen from the dimension)"), default=None)
    model_options: Mapping[str, Any] = setting(
        options, "keyword options of the model factory (e.g. {\"n_samples\": 10})", default_factory=dict)
    kernel: str = setting(choice(*KERNELS), (
        "the GP's covariance: matern52 (Spearmint's) or squared-exponential (for very smooth objectives); "
        "DNGO ignores it"), "kernel", default=KERNELS[0])
    constraint_model: str = setting(choice(*CONSTRAINT_MODELS), (
        "explicit constraints: classifier (DNGO 3.2) or value (regression of c, P(c >= 0))"),
        "constraint-model", default=CLASSIFIER)
    output_transform: str = setting(choice(*TRANSFORM_CHOICES), (
        "what the objective model fits: standardise, log-shift (log of the distance above the best value, "
        "standardised), least-skewed (the less skewed of the two), yeo-johnson (a power transform fitted by "
        "maximum likelihood) or auto (yeo-johnson for the GP, least-skewed for DNGO)"),
        "output-transform", default=AUTO)
    budget: int | None = setting(count(1, optional=True), (
        "evaluations in all: the daemon stops after this many finished jobs, and a stuck search restarts only "
        "while half of them remain (null: no limit)"), "max-finished-jobs", default=None)
    restart_after: int = setting(count(0), (
        "restart the search (a fresh objective model on new points) after this many evaluations without "
        "improvement (in rounds of the jobs in flight), once ten initial designs' worth are done and while "
        "half of max-finished-jobs remains; 0: never"), "restart-after", default=10)
    # Set for each call and the caller's count restored after: more threads stalled on a shared
    # machine and gave no speed-up on an idle one. None (a keyword only): the caller's count.
    torch_threads: int | None = setting(count(1, optional=True), (
        "torch threads of the search's own work (a login node is shared; a seed gives the same proposals "
        "whatever the caller's threads)"), "torch-threads", default=1)

    def __post_init__(self) -> None:
        for spec in fields(self):
            # the checked, normalised value of a frozen field
            object.__setattr__(self, spec.name, spec.metadata["parse"](spec.name, getattr(self, spec.name)))

    @classmethod
    def from_keywords(cls, likelihoods: Mapping[str, str] | None = None, **keywords: Any) -> "SearchSettings":
        """The settings the Optimizer's keywords give. A keyword is a field by name or a
        config.json key in Python spelling (``max_finished_jobs`` is ``budget``), with the key's
        meaning and default; ``tasks`` in either form, ``likelihood`` (config.json's: the
        likelihood of every task that has none) and ``likelihoods`` (task name -> "NOISELESS" |
        "GAUSSIAN") over what ``tasks`` says. A keyword that is no setting is a ConfigError
        naming it: a key of the daemon's says where it belongs, any other says which keyword
        it is closest to."""
        names = {spec.name for spec in fields(cls)}
        settings: dict[str, Any] = {}
        likelihood = keywords.pop("likelihood", None)
        for word, value in keywords.items():
            name = KEYWORD_OF_KEY.get(word, word)
            if name not in names:
                if word in DAEMON_KEYWORDS:
                    raise ConfigError(word, DAEMON_KEYWORDS[word])
                raise ConfigError(word, f"not a keyword of the Optimizer{did_you_mean(word, sorted(KEYWORDS))}")
            if name in settings:
                raise ConfigError(word, f"the same setting as {name}, given too; keep one")
            settings[name] = value
        if likelihood is not None or likelihoods is not None:
            settings["tasks"] = parse_tasks(settings.get("tasks"), likelihoods, default_likelihood=likelihood)
        return cls(**settings)

    @property
    def sign(self) -> float:
        """What observed objective values are multiplied by so the search minimises: 1, or -1
        when maximising."""
        return parse_direction(self.direction)


def config_fields() -> list[Field]:
    """The fields that have a config.json key, in declaration order."""
    return [spec for spec in fields(SearchSettings) if spec.metadata["key"] is not None]


def python_spelling(key: str) -> str:
    """A config.json key as a Python keyword: ``max-finished-jobs`` is ``max_finished_jobs``."""
    return key.replace("-", "_")


# The Optimizer speaks config.json: each key of the search's settings in Python spelling is a
# keyword, with the key's meaning and default, where the field is named otherwise.
KEYWORD_OF_KEY = {python_spelling(spec.metadata["key"]): spec.name for spec in config_fields()
                  if python_spelling(spec.metadata["key"]) != spec.name}
# config.json's keys that set the daemon or the experiment folder, not the search, in Python
# spelling, each with where its meaning lives for ask/tell (tests/unit/problem/test_settings.py
# checks that every key of config.json is a search setting, one of these, or the Optimizer's own).
_DAEMON = "a setting of the daemon (spearmint-nn run), not of the search: "
DAEMON_KEYWORDS = {
    "variables": "the Optimizer's first argument: Optimizer(variables, ...)",
    "related_experiments": "give the related searches' results as related=[(their_variables, [(params, value), "
                           "...]), ...]",
    "max_concurrent": _DAEMON + "in ask/tell, you choose how many points are in flight (suggest(n) and what "
                      "you have not observed yet)",
    "polling_time": _DAEMON + "in ask/tell, you call observe when a result is there",
    "language": _DAEMON + "in ask/tell, you run each point yourself",
    "main_file": _DAEMON + "in ask/tell, you run each point yourself",
    "command": _DAEMON + "in ask/tell, you run each point yourself",
    "experiment_name": _DAEMON + "it names the experiment folder's logs and reports",
    "driver": _DAEMON + "in ask/tell, you run each point yourself",
    "resources": _DAEMON + "Spearmint's resources become the daemon's driver",
    "database": "Spearmint's MongoDB settings: not used",
    "chooser": "Spearmint's chooser: not used (see model and acquisition)",
    "stop_after_identical_failures": _DAEMON + "in ask/tell, you decide when failures should stop you",
    "daemon_heartbeat_timeout": _DAEMON + "the lock of an experiment folder",
    "max_attempts": _DAEMON + "in ask/tell, observe the value of the attempt that finished",
    "resume": _DAEMON + "checkpoints of jobs that a scheduler interrupts",
    "ignore_failures": _DAEMON + "in ask/tell, observe NaN only for a failure of the point; forget(params) one "
                       "that says nothing about it",
}
# Every keyword the Optimizer takes: the fields, the keys spelt in Python, its own arguments.
KEYWORDS = ({spec.name for spec in fields(SearchSettings)} | set(KEYWORD_OF_KEY)
            | {"likelihood", "likelihoods", "state", "state_dir", "related", "early_stopping"})


# help(SearchSettings) lists every field with its one description.
SearchSettings.__doc__ = (SearchSettings.__doc__ or "") + "\n    Attributes\n    ----------\n" + "".join(
    f"    {spec.name} : {spec.metadata['doc']}\n" for spec in fields(SearchSettings))
