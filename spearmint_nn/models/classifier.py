"""The constraint network: P(feasible | x) from a DNGO basis with a Laplace-approximated output layer.

Snoek et al. (2015), section 3.2: the same basis architecture as the objective model (tanh
``BasisNetwork``) carries a Bayesian logistic regression on its last hidden layer, and the output
weights are integrated out (eq. 10) under a Laplace approximation of their posterior.
The optimizer uses it for what is observed only as a label: whether a job succeeded. Explicit
constraints report a value, which :mod:`spearmint_nn.models.constraint_value` models instead.

Model, with phi~(x) = [phi(x), 1] the basis plus a bias column (P = width + 1 entries) and
theta the output weights:

    c_n | x_n, theta  ~  Bernoulli(sigmoid(k * phi~(x_n) . theta))
    theta             ~  N(0, I / alpha)
    hidden weights    ~  N(0, I / hidden_precision)        (their MAP only; not integrated)

* ``k = 1`` for noisy constraints (the logistic likelihood of the paper).
* Noiseless constraints (Spearmint's ``"likelihood": "NOISELESS"``) get the paper's step
  likelihood, approximated by a steep logistic, ``k = NOISELESS_SLOPE``, for the MAP. A step
  has no curvature, and a steep logistic's curvature k^2 p (1 - p) vanishes wherever the net
  separates the classes, so an exact Laplace approximation would keep the prior's width at the
  observations: a point seen to fail ten times would still look 20% feasible. For noiseless
  constraints the Laplace precision therefore uses the logistic's curvature on its decision
  boundary, k^2 / 4 (its maximum; the Jaakkola-Jordan bound at xi = 0), for every
  observation: the posterior tightens with every label, as it must when labels carry no noise,
  and P(feasible) goes to 0 around observed failures. Noisy constraints use the exact Hessian.

Fitting: the whole network is trained to the MAP with Adam (full batch); then the output weights
alone are polished with Newton's method, a convex problem given the basis, so the Laplace
approximation is centred on a true mode of p(theta | D, basis). Its precision is the Hessian of
the negative log posterior there,

    H = Phi~^T diag(r) Phi~ + alpha I,   r = k^2 p (1 - p) (noisy) or k^2 / 4 (noiseless),
                                         p = sigmoid(k Phi~ theta_MAP),

kept as its Cholesky factor (no explicit inverse). The predictive probability is MacKay's probit
approximation of the integral over theta,

    mu(x) = phi~(x) . theta_MAP,   s2(x) = phi~(x)^T H^{-1} phi~(x),
    P(feasible | x) = sigmoid(k mu / sqrt(1 + pi k^2 s2 / 8)),

differentiable in x through the basis.

Few labels:

* every observation feasible: there is no evidence of any infeasible region, so no network is
  trained and ``probability`` is exactly 1 (multiplying EI by a learned near-constant would only
  add noise and cost a refit per completion);
* fewer than ``MIN_CLASS_SIZE`` labels of either class: a basis trained on them either collapses
  to a constant (one class: the cheapest way to say "always infeasible") or separates the
  handful of labels by an arbitrary boundary on which the Laplace posterior of the output layer
  is confident, so P(feasible) reached 0.00 or 0.98 in corners no label was near. Until both
  classes have ``MIN_CLASS_SIZE`` labels the basis is therefore not trained: it is a fixed set
  of random Fourier features (Rahimi & Recht, 2007) of one length scale, and only the output
  weights get their MAP and Laplace posterior. That is Bayesian logistic regression with an
  approximately squared-exponential kernel: every point has the same prior variance, labels
  move P(feasible) only within a few length scales of themselves, and elsewhere it stays at
  the level the labels set through the bias. (An untrained tanh network served here before;
  its features saturate towards the corners, where the prior variance is largest, so with one
  success among a dozen failures P(feasible) was 0.3 in an empty corner and 0.15 at the
  success itself, and the search went to the corners. With Fourier features it is about 0.6
  at the success and 0.1-0.2 in the corners.) The first fit with enough labels of both classes
  trains a network.

Pending jobs (section 3.3, issue 5): ``fantasize`` draws joint feasibility labels at pending
points from the Laplace posterior and conditions the output weights on each draw by one Newton
step from theta_MAP. The step's Hessian does not depend on the drawn labels, so all fantasies
share one rank-J updated Cholesky factor; the basis is not retrained. The result is a classifier
whose output weights are F rows, one per fantasy.
"""
from __future__ import annotations

import copy
import math

import torch
from torch import Tensor

from .base import ConstraintModel, State, check_kind
from .basis import BasisNetwork

NOISELESS_SLOPE = 5.0
"""Logit slope standing in for the step likelihood of noiseless constraints."""

MIN_CLASS_SIZE = 3
"""Labels of the rarer class needed before the basis network is trained. With fewer, a MAP basis
separates the handful of labels by an arbitrary, confident boundary (the Laplace posterior
covers the output layer only, not the basis), and P(feasible) went to 0.00 or 0.98 in corners
no label was near; two labels were not enough either (two successes and three failures in the
square: P(feasible) 1.00 in two empty corners, which the search then tried). Measured with the
NaN-outside-a-box problems of tests/unit/search/test_exploration.py and the Gramacy toy of
:mod:`experiments.benchmarks.constrained` (10 seeds each): 3 kept the most of the jobs after
the first success inside the box, and the constrained toy's best values at 15-30 evaluations
where 2 had them; 5 lost there (0.79 against 0.75 at 20 evaluations)."""

FEW_LABELS_FEATURES = 100
"""Random Fourier features of the basis used while a class has fewer than MIN_CLASS_SIZE labels."""

FEW_LABELS_LENGTH_SCALE = 0.3
"""Their length scale in the unit cube: a label informs P(feasible) within about this distance.
0.2 left the constrained toy's P(feasible) too local early on (best value 0.97 on average after
10 evaluations, against 0.80 with 0.3; 10 seeds, both with 2 labels per class to train)."""


def _with_bias(features: Tensor) -> Tensor:
    """phi (..., N, W) -> phi~ (..., N, W + 1) with a trailing column of ones."""
    return torch.cat([features, torch.ones_like(features[..., :1])], dim=-1)


def _probit_probability(mean: Tensor, var: Tensor, slope: float) -> Tensor:
    """MacKay's approximation of E[sigmoid(slope * z)] for z ~ N(mean, var); same shape as mean."""
    return torch.sigmoid(slope * mean / torch.sqrt(1.0 + math.pi * slope**2 * var / 8.0))


def _predictive_variance(phi: Tensor, chol: Tensor) -> Tensor:
    """phi~^T H^{-1} phi~ for rows phi (M, P) and the Cholesky factor L of H (P, P); shape (M,)."""
    v = torch.linalg.solve_triangular(chol, phi.T, upper=False)
    return (v * v).sum(0)


class ConstraintClassifier(ConstraintModel):
    """P(feasible | x) on the unit cube, for one constraint.

    Parameters
    ----------
    n_inputs : D, the encoded input dimension.
    seed : seeds the network initialisation and the training, so a fit is reproducible.
    noiseless : step likelihood (a steep logistic, see the module docstring) instead of the logistic.
    alpha : prior precision of the output weights theta (bias included).
    hidden_precision : Gaussian prior precision (weight decay) of the hidden layers.
    """

    def __init__(
        self,
        n_inputs: int,
        seed: int | None = None,
        noiseless: bool = False,
        alpha: float = 1.0,
        hidden_precision: float = 1e-2,
        width: int = 50,
        depth: int = 3,
    ):
        self.n_inputs = n_inputs
        self.seed = seed
        self.noiseless = noiseless
        self.slope = NOISELESS_SLOPE if noiseless else 1.0
        self.alpha = alpha
        self.hidden_precision = hidden_precision
        self.width, self.depth = width, depth
        self.net: BasisNetwork | None = None  # the trained basis
        # The untrained basis: Fourier frequencies (D, M) and phases (M,), drawn once.
        self.fourier: tuple[Tensor, Tensor] | None = None
        # (P,) MAP output weights, bias last; (F, P), one row per fantasy, in a fantasised classifier
        self.theta: Tensor | None = None
        self.chol: Tensor | None = None  # (P, P) lower Cholesky factor of the Laplace precision H
        self.basis_trained = False  # False until each class has MIN_CLASS_SIZE labels

    # ----------------------------------------------------------------------------- fitting

    @property
    def trivial(self) -> bool:
        """True while no infeasible observation exists: P(feasible) is then exactly 1."""
        return self.theta is None

    def fit(self, X: Tensor, feasible: Tensor, epochs: int | None = None) -> None:
        """Fit to inputs X (N, D) in [0, 1] and labels ``feasible`` (N,) bool.

        Warm start: a refit continues from the previous network (``epochs`` defaults to 300 then,
        1500 for the first training) instead of a new random initialisation, so refitting after
        every completion stays cheap.
        """
        X = torch.as_tensor(X, dtype=torch.float64)
        feasible = torch.as_tensor(feasible, dtype=torch.bool)
        if X.ndim != 2 or X.shape[1] != self.n_inputs or feasible.shape != X.shape[:1]:
            raise ValueError(f"expected X (N, {self.n_inputs}) and feasible (N,); got {tuple(X.shape)}, {tuple(feasible.shape)}")
        if bool(feasible.all()):
            self.net, self.theta, self.chol, self.basis_trained = None, None, None, False
            return
        labels = feasible.to(torch.float64)
        n_feasible = int(feasible.sum())
        if min(n_feasible, feasible.shape[0] - n_feasible) < MIN_CLASS_SIZE:
            if self.fourier is None:
                self.fourier = self._new_fourier_basis()
            self.net, self.basis_trained = None, False
        else:
            if not self.basis_trained:
                self.net = self._new_network()
            if epochs is None:
                epochs = 300 if self.basis_trained else 1500
            self._train_network(X, labels, epochs)
            self.basis_trained = True
        with torch.no_grad():
            self.theta, self.chol = self._newton_map(self.features(X), labels, self._output_weights())

    def _new_network(self) -> BasisNetwork:
        """A freshly initialised network, seeded by ``seed``."""
        with torch.random.fork_rng():
            if self.seed is not None:
                torch.manual_seed(self.seed)
            return BasisNetwork(self.n_inputs, self.width, self.depth).double()

    def _new_fourier_basis(self) -> tuple[Tensor, Tensor]:
        """Frequencies (D, M) ~ N(0, 1 / l^2) and phases (M,) ~ U(0, 2 pi), seeded by ``seed``."""
        generator = torch.Generator()
        generator.manual_seed(self.seed if self.seed is not None else int(torch.randint(2**31, ())))
        shape = (self.n_inputs, FEW_LABELS_FEATURES)
        frequencies = torch.randn(shape, generator=generator, dtype=torch.float64) / FEW_LABELS_LENGTH_SCALE
        phases = 2.0 * math.pi * torch.rand(FEW_LABELS_FEATURES, generator=generator, dtype=torch.float64)
        return frequencies, phases

    def _output_weights(self) -> Tensor:
        """Where Newton's method starts: the trained network's output layer as theta (P,), bias
        last; zeros on the Fourier basis."""
        if not self.basis_trained:
            return torch.zeros(FEW_LABELS_FEATURES + 1, dtype=torch.float64)
        out = self.net.output
        return torch.cat([out.weight.detach().reshape(-1), out.bias.detach()])

    def _negative_log_posterior(self, logits: Tensor, labels: Tensor) -> Tensor:
        """Bernoulli negative log likelihood of logits (N,) for labels (N,) in {0, 1}, summed."""
        return torch.nn.functional.binary_cross_entropy_with_logits(self.slope * logits, labels, reduction="sum")

    def _train_network(self, X: Tensor, labels: Tensor, epochs: int) -> None:
        """Full-batch Adam on the negative log posterior of all weights, divided by N."""
        net = self.net
        hidden = [p for name, p in net.named_parameters() if name.startswith("hidden") and name.endswith("weight")]
        optimiser = torch.optim.Adam(net.parameters(), lr=1e-2)
        n = X.shape[0]
        for _ in range(epochs):
            optimiser.zero_grad()
            loss = self._negative_log_posterior(net(X), labels)
            loss = loss + 0.5 * self.alpha * (net.output.weight.square().sum() + net.output.bias.square().sum())
            loss = loss + 0.5 * self.hidden_precision * sum(w.square().sum() for w in hidden)
            (loss / n).backward()
            optimiser.step()

    def _newton_map(self, phi: Tensor, labels: Tensor, theta: Tensor, max_iter: int = 50) -> tuple[Tensor, Tensor]:
        """MAP of theta given the basis rows phi (N, P), by damped Newton; returns (theta, chol(H))."""
        eye = torch.eye(phi.shape[1], dtype=phi.dtype)

        def objective(t: Tensor) -> Tensor:
            return self._negative_log_posterior(phi @ t, labels) + 0.5 * self.alpha * t.dot(t)

        value = objective(theta)
        for _ in range(max_iter):
            p = torch.sigmoid(self.slope * (phi @ theta))
            grad = -self.slope * phi.T @ (labels - p) + self.alpha * theta
            hessian = self.slope**2 * (phi.T * (p * (1 - p))) @ phi + self.alpha * eye
            chol = torch.linalg.cholesky(hessian)
            step = torch.cholesky_solve(grad[:, None], chol).squeeze(1)
            decrement = float(grad.dot(step))
            if decrement < 1e-20:
                break
            size = 1.0
            while size > 1e-8:
                candidate = theta - size * step
                candidate_value = objective(candidate)
                if candidate_value <= value:
                    break
                size *= 0.5
            else:
                break
            theta, value = candidate, candidate_value
        p = torch.sigmoid(self.slope * (phi @ theta))
        precision = (phi.T * self._curvature(p)) @ phi + self.alpha * eye
        return theta, torch.linalg.cholesky(precision)

    def _curvature(self, p: Tensor) -> Tensor:
        """Per-observation curvature of the negative log likelihood in the logit, same shape as p.

        Logistic: k^2 p (1 - p), the exact Hessian. Step (noiseless): k^2 / 4, see the module
        docstring; a step has no curvature, and the logistic's own vanishes wherever the net
        separates the classes, which would leave the prior's width at the observations.
        """
        if self.noiseless:
            return torch.full_like(p, self.slope**2 / 4.0)
        return self.slope**2 * p * (1 - p)

    # ---------------------------------------------------------------------------- predicting

    def features(self, X: Tensor) -> Tensor:
        """phi~(X): basis plus bias column, shape (M, P); differentiable in X.

        The trained network's last hidden layer, or before it is trained the Fourier features
        sqrt(2 / M) cos(X W + b), whose inner products approximate exp(-|x - x'|^2 / (2 l^2)).
        """
        if self.basis_trained:
            return _with_bias(self.net.features(X))
        frequencies, phases = self.fourier
        return _with_bias(math.sqrt(2.0 / FEW_LABELS_FEATURES) * torch.cos(X @ frequencies + phases))

    def latent(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean of the logit phi~(x) . theta, (M,) or (F, M) for a fantasised classifier,
        and its variance, (M,)."""
        phi = self.features(X)
        mean = phi @ self.theta if self.theta.dim() == 1 else self.theta @ phi.T
        return mean, _predictive_variance(phi, self.chol)

    def probability(self, X: Tensor) -> Tensor:
        """P(feasible | X) for X (M, D), shape (M,), or (F, M) for a classifier fantasised F
        times; differentiable in X."""
        X = torch.as_tensor(X, dtype=torch.float64)
        if self.trivial:
            return torch.ones(X.shape[0], dtype=torch.float64)
        mean, var = self.latent(X)
        return _probit_probability(mean, var, self.slope)

    def laplace_covariance(self) -> Tensor:
        """Posterior covariance H^{-1} of theta, (P, P); for inspection and tests, not prediction."""
        return torch.cholesky_inverse(self.chol)

    # ---------------------------------------------------------------------------- fantasies

    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "ConstraintClassifier":
        """A classifier conditioned on F = n_fantasies joint label draws at pending points X_pending
        (J, D): its ``theta`` has one row per fantasy, so ``probability`` returns (F, M). A trivial
        classifier stays trivial. The result has its own copy of the basis network, so fitting it
        leaves this classifier as it is.

        Labels are drawn jointly: theta_f ~ N(theta_MAP, H^{-1}), c_fj ~ Bernoulli(sigmoid(k phi~_j .
        theta_f)). Each fantasy's output weights are then one Newton step from theta_MAP on the
        augmented data (the old data's gradient vanishes at the MAP):

            H' = H + Phi_p^T diag(r_p) Phi_p,   theta_f = theta_MAP + H'^{-1} k Phi_p^T (c_f - p_p)

        with p_p = sigmoid(k Phi_p theta_MAP) and r_p the curvature of ``fit``; H' is shared by
        all fantasies.
        """
        X_pending = torch.as_tensor(X_pending, dtype=torch.float64)
        if self.trivial:
            return self._conditioned(None, None)
        if X_pending.shape[0] == 0:
            return self._conditioned(self.theta.expand(n_fantasies, -1), self.chol)
        with torch.no_grad():
            phi_p = self.features(X_pending)  # (J, P)
            normal = torch.randn(self.theta.shape[0], n_fantasies, generator=generator, dtype=torch.float64)
            draws = self.theta[:, None] + torch.linalg.solve_triangular(self.chol.T, normal, upper=True)  # (P, F)
            p_draw = torch.sigmoid(self.slope * (phi_p @ draws)).T  # (F, J)
            labels = torch.bernoulli(p_draw, generator=generator)
            p_map = torch.sigmoid(self.slope * (phi_p @ self.theta))  # (J,)
            precision = self.chol @ self.chol.T + (phi_p.T * self._curvature(p_map)) @ phi_p
            chol = torch.linalg.cholesky(precision)
            grad = self.slope * (labels - p_map) @ phi_p  # (F, P)
            theta = self.theta + torch.cholesky_solve(grad.T, chol).T
        return self._conditioned(theta, chol)

    def _conditioned(self, theta: Tensor | None, chol: Tensor | None) -> "ConstraintClassifier":
        """A copy with output weights theta (F, P) and the Cholesky factor chol (P, P) they share."""
        fantasy = copy.copy(self)
        fantasy.net = copy.deepcopy(self.net)
        fantasy.theta, fantasy.chol = theta, chol
        return fantasy

    # ---------------------------------------------------------------------------- state

    def _configuration(self) -> dict:
        """What a saved state must have been made with to be continued by this classifier."""
        return {"n_inputs": self.n_inputs, "width": self.width, "depth": self.depth, "noiseless": self.noiseless,
                "alpha": self.alpha, "hidden_precision": self.hidden_precision}

    def state_dict(self) -> State:
        """The basis in use (the trained network, or the Fourier features until it is trained) and
        the Laplace posterior of the output weights (None while trivial)."""
        trained = self.basis_trained
        return {
            "kind": type(self).__name__,
            **self._configuration(),
            "basis_trained": trained,
            "net": self.net.state_dict() if trained else None,
            "fourier": list(self.fourier) if not trained and self.fourier is not None else None,
            "theta": self.theta,
            "chol": self.chol,
        }

    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place; a later ``fit`` warm-starts from it.

        ValueError (and nothing changed) when it was saved by a classifier of another
        configuration (inputs, network size, likelihood or priors), or holds output weights
        without the basis they belong to.
        """
        check_kind(state, type(self).__name__)
        expected = self._configuration()
        found = {key: state[key] for key in expected}
        if found != expected:
            raise ValueError(f"saved classifier has {found}, this one is {expected}")
        trained = bool(state["basis_trained"])
        net = None
        if trained:
            net = BasisNetwork(self.n_inputs, self.width, self.depth).double()
            net.load_state_dict(state["net"])
        fourier = None if trained or state["fourier"] is None else tuple(state["fourier"])
        if state["theta"] is not None and net is None and fourier is None:
            raise ValueError("saved classifier has output weights but no basis")
        self.basis_trained, self.net, self.fourier = trained, net, fourier
        self.theta, self.chol = state["theta"], state["chol"]
