"""DNGO: a neural-network basis with Bayesian linear regression on top (Snoek et al., 2015).

The basis network (3 x 50 tanh, linear output) is trained to a MAP point estimate; its last hidden
layer, m fixed random Fourier features (``basis.BasisNetwork``; m = 128 by default) and a bias
feature give phi(x) (D = width + m + 1 features). A Bayesian linear regression on
phi(x) with prior mean

    eta(x) = lambda + (x - c)^T diag(Lambda) (x - c)                                  (eq. 9)

gives the predictive distribution (eqs. 4-7). The hyperparameters
theta = (log alpha, log beta, lambda, c, Lambda) are integrated out by slice sampling the marginal
likelihood (eq. 8) times their priors, with S chains run side by side: the S chain states are the
S hyperparameter samples, and every predictive tensor has S as its leading dimension.

eta is linear in q(x) = [1, x, x^2] (coefficients lambda + sum Lambda c^2, -2 Lambda c, Lambda),
so the marginal likelihood needs only the sufficient statistics Phi^T Phi, Phi^T q, Phi^T y,
q^T q, q^T y and y^T y. They are computed once per fit (O(N D^2)), with an eigendecomposition of
Phi^T Phi (O(D^3)); every slice-sampling step then costs O(D^2) whatever N is.
"""
from __future__ import annotations

import copy
import math
from typing import Sequence

import torch
from torch import Tensor, nn

from .base import Conditionable, PathSampler, State, Surrogate, Warped, check_kind
from .basis import BasisNetwork
from .blr import BLRPosterior
from .dngo_hyperparameters import Hyperparameters, SufficientStatistics, quadratic_features, slice_widths
from .sampling import slice_sweep
from .warping import LOG_SHAPE_PRIOR_VARIANCE, kumaraswamy_cdf, warped_column_indices, warping_summary

class DNGOPosterior:
    """The predictive distribution of a fitted DNGO, possibly conditioned on fantasies: the
    state behind a DNGO's ``posterior``, ``fantasize``, ``sample_f`` and ``sample_paths``, not a model.

    Rows of every returned tensor are (hyperparameter sample, fantasy) pairs, sample-major:
    row s * F + f. A plain fit has F = 1. The basis network is the DNGO's (not copied), so a
    posterior is valid until that DNGO is fitted again.
    """

    def __init__(self, net: BasisNetwork, hypers: Hyperparameters, blr: BLRPosterior,
                 fantasy_values: Tensor | None = None):
        self.net, self.hypers, self.blr = net, hypers, blr
        self._coefficients = hypers.mean_coefficients()  # (S, Q)
        # Targets drawn at the pending points, (S * F, J); (S, 0) without fantasies.
        self.fantasy_values = blr.rhs.new_zeros(blr.rhs.shape[0], 0) if fantasy_values is None else fantasy_values

    def features(self, X: Tensor) -> Tensor:
        """phi(X) with a bias feature, shape (M, D)."""
        phi = self.net.features(X)
        return torch.cat([phi, torch.ones_like(phi[:, :1])], dim=1)

    def prior_mean(self, X: Tensor) -> Tensor:
        """eta(X) per sample, shape (S, M)."""
        return self._coefficients @ quadratic_features(X).T

    def posterior(self, X: Tensor, observation_noise: bool = True) -> tuple[Tensor, Tensor]:
        """Mean and variance at X (M, D), each (S * F, M); differentiable in X.

        By default the variance is eq. 5's, phi^T K^{-1} phi + 1/beta: on a deterministic
        objective 1/beta is where the basis's misfit goes, so this is DNGO's calibrated
        uncertainty about f (the coverage tests), and acquisitions use it. Without the term
        (``observation_noise=False``, the latent phi^T K^{-1} phi alone) EI hugged the edge of a
        crash region and 60% of the proposals crashed, against 35% with it.
        """
        mean, var = self.blr.predict(self.features(X), observation_noise)
        S, F, M = mean.shape
        mean = mean + self.prior_mean(X)[:, None, :]
        return mean.reshape(S * F, M), var[:, None, :].expand(S, F, M).reshape(S * F, M)

    @torch.no_grad()
    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "DNGOPosterior":
        """Condition on n_fantasies joint draws of y at X_pending (J, D) per current row.

        Each draw samples the output weights w ~ N(m, K^{-1}) and the noise of every pending point,
        so fantasies at nearby points agree. Only the Bayesian linear regression is updated
        (rank-J change of the D x D system); the basis network is shared, not refitted.
        The drawn values are in ``fantasy_values``, shape (S * F * n_fantasies, J).
        """
        Phi = self.features(X_pending)  # (J, D)
        weights = self.blr.sample_weights(n_fantasies, generator)  # (S, F, n, D)
        S, F, n, _ = weights.shape
        noise = torch.randn(S, F, n, len(X_pending), generator=generator, dtype=Phi.dtype)
        targets = weights @ Phi.T + noise / self.blr.beta.sqrt()[:, None, None, None]
        targets = targets.reshape(S, F * n, -1)  # y~ at the pending points, (S, F n, J)
        blr = self.blr.add_rows(Phi, targets)
        values = targets + self.prior_mean(X_pending)[:, None, :]
        return DNGOPosterior(self.net, self.hypers, blr, values.reshape(S * F * n, -1))

    def sample_f(self, X: Tensor, generator: torch.Generator) -> Tensor:
        """phi(X) w + eta(X) for one draw w ~ N(m, K^{-1}) of a random row; shape (M,)."""
        return self.sample_paths(X, 1, generator)[0]

    @torch.no_grad()
    def sample_paths(self, X: Tensor, n: int, generator: torch.Generator) -> Tensor:
        """n joint draws of f = phi(X) w + eta(X) at X (M, D), shape (n, M), for one basis pass.

        Draw j uses row (r + j) mod R of the R = S * F (sample, fantasy) rows, r random: one
        draw is a Thompson sample of a random row, and n >= R draws cover the rows evenly (the
        mixture over hyperparameter samples, with less spread than rows drawn at random).
        """
        S, F, D = self.blr.mean.shape
        R = S * F
        first = int(torch.randint(R, (1,), generator=generator))
        rows = (first + torch.arange(n)) % R
        copies = torch.arange(n) // R  # distinct (row, copy) pairs
        weights = self.blr.sample_weights(-(-n // R), generator).reshape(R, -1, D)[rows, copies]  # (n, D)
        return weights @ self.features(X).T + self.prior_mean(X)[rows // F]


class DNGO(Surrogate, Conditionable, PathSampler, Warped):
    """Deep Networks for Global Optimization: the default surrogate of the objective.

    Parameters
    ----------
    n_inputs : K, dimension of the unit cube.
    seed : seeds network initialisation, mini-batches and the slice sampler.
    n_samples : S, hyperparameter samples (= slice-sampling chains).
    width, depth : basis network size (50 and 3 in the paper).
    weight_decay : L2 penalty on the network's weight matrices, as a prior precision: the training
        loss is mean squared error + weight_decay * ||W||^2 / N.
    train_steps : Adam steps for a freshly initialised network.
    warm_steps : Adam steps when continuing from the previous fit's weights.
    full_batch_max : up to this many observations the network is trained by full-batch L-BFGS
        instead of Adam (it fits small data much better, and a pass over the data is cheap).
    lbfgs_steps, lbfgs_warm_steps : L-BFGS iterations for a fresh and for a warm-started network.
    batch_size : mini-batch size (full batch below it); bounds the cost of a step whatever N is.
    learning_rate : initial Adam step size, decayed by a cosine schedule within each fit.
    reinit_every : retrain from a fresh initialisation every this many fits.
    fresh_fit_max : up to this many observations every fit starts from a fresh initialisation
        (cheap there); each refit then extrapolates with a new basis instead of the last fit's,
        which keeps a run from locking onto one region while data are scarce.
    burn_in : slice-sampling sweeps at the first fit.
    reburn_in : sweeps after each later refit, continuing the chains.
    recondition_sweeps : sweeps after :meth:`condition` (new results, the basis unchanged): the
        chains sat at the posterior of nearly the same data, so a few sweeps follow it; on an
        asynchronous cluster this is most of a proposal's cost (8 sweeps: 2.2 s of 4.3 s at
        N = 3000 with 800 in flight).
    warping : start the basis network with a trained input warp (``basis.BasisNetwork``); off by
        default, as measured in benchmarks/RESULTS.md of e90882b ("`dngo-warp`": it pays on an objective of
        log-scale inputs and costs on Hartmann6). The "dngo-warp" model turns it on.
    warped_columns : which inputs to warp, as column indices or a boolean mask of length D
        (default: all); the optimizer passes the FLOAT and INT columns.
    fourier_features, fourier_length_scales : m random Fourier features for each RBF length
        scale l (unit-cube units) appended to the regression's basis, drawn from the seed and kept
        for the model's life; m = 0 gives the paper's basis. Measured in benchmarks/RESULTS.md of e90882b ("Two
        Fourier length scales"): they give the regression variance away from the data, where the trained
        features have none.
    """

    def __init__(
        self,
        n_inputs: int,
        seed: int | None = None,
        n_samples: int = 10,
        width: int = 50,
        depth: int = 3,
        weight_decay: float = 0.003,
        train_steps: int = 1000,
        warm_steps: int = 300,
        batch_size: int = 128,
        learning_rate: float = 1e-2,
        reinit_every: int = 10,
        fresh_fit_max: int = 200,
        burn_in: int = 30,
        reburn_in: int = 8,
        recondition_sweeps: int = 2,
        full_batch_max: int = 1000,
        lbfgs_steps: int = 500,
        lbfgs_warm_steps: int = 200,
        warping: bool = False,
        warped_columns: Sequence[int] | Sequence[bool] | Tensor | None = None,
        fourier_features: int = 128,
        fourier_length_scales: Sequence[float] = (0.2, 0.4),
    ):
        self.n_inputs, self.n_samples = n_inputs, n_samples
        self.width, self.depth = width, depth
        self.weight_decay, self.train_steps, self.warm_steps = weight_decay, train_steps, warm_steps
        self.batch_size, self.learning_rate, self.reinit_every = batch_size, learning_rate, reinit_every
        self.fresh_fit_max = fresh_fit_max
        self.burn_in, self.reburn_in, self.recondition_sweeps = burn_in, reburn_in, recondition_sweeps
        self.full_batch_max, self.lbfgs_steps, self.lbfgs_warm_steps = full_batch_max, lbfgs_steps, lbfgs_warm_steps
        self.generator = torch.Generator().manual_seed(
            seed if seed is not None else int(torch.randint(2**62, (1,)).item())
        )
        warped = warped_column_indices(warped_columns, n_inputs) if warping else ()
        self.net = BasisNetwork(n_inputs, width, depth, warped, fourier_features, fourier_length_scales,
                                self.generator).to(torch.float64)
        self.net.requires_grad_(False)
        self._trained = False
        self.fits_since_reinit = 0
        self.last_loss: float | None = None  # per-point training MSE of the last fit
        self.chains: Tensor | None = None  # (S, P) slice-sampler states
        self.state: DNGOPosterior | None = None

    # ----------------------------------------------------------------------------- fitting

    def fit(self, X: Tensor, y: Tensor) -> None:
        """Train the basis (warm-started when possible), then resample the hyperparameters."""
        X, y = self._check(X, y)
        self._fit_basis(X, y)
        self._fit_regression(X, y, self.reburn_in)

    def condition(self, X: Tensor, y: Tensor) -> None:
        """Refit the Bayesian linear regression and resample its hyperparameters on X, y with
        the basis as it is: new results enter the posterior exactly, for a fraction of a fit's
        cost (no network training). A model whose basis was never trained is fitted instead."""
        if not self._trained:
            return self.fit(X, y)
        X, y = self._check(X, y)
        self._fit_regression(X, y, self.recondition_sweeps)

    def _fit_regression(self, X: Tensor, y: Tensor, sweeps: int) -> None:
        """The output layer: hyperparameter chains advanced ``sweeps`` times on the current basis
        (``burn_in`` times at the first fit), and the posterior."""
        with torch.no_grad():
            features = torch.cat([self.net.features(X), X.new_ones(len(X), 1)], dim=1)
            stats = SufficientStatistics.of(features, quadratic_features(X), y)
        first = self.chains is None
        if first:
            self.chains = Hyperparameters.initial(self.n_samples, self.n_inputs, self.generator).theta
        else:  # states saved before the centre was confined to the cube continue from inside it
            self.chains[:, 3 : 3 + self.n_inputs].clamp_(0.0, 1.0)
        widths = slice_widths(self.n_inputs)
        for _ in range(self.burn_in if first else sweeps):
            self.chains, _ = slice_sweep(stats.log_posterior, self.chains, widths, self.generator)
        hypers = Hyperparameters(self.chains)
        rhs, _ = stats.residual(hypers.mean_coefficients())
        blr = BLRPosterior(stats.gram, rhs[:, None, :], hypers.alpha, hypers.beta)
        self.state = DNGOPosterior(self.net, hypers, blr)

    def _check(self, X: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        X = torch.as_tensor(X, dtype=torch.float64)
        y = torch.as_tensor(y, dtype=torch.float64)
        if X.ndim != 2 or X.shape[1] != self.n_inputs or y.shape != (X.shape[0],):
            raise ValueError(f"DNGO.fit: expected X (N, {self.n_inputs}) and y (N,), got {tuple(X.shape)} and {tuple(y.shape)}")
        if not (torch.isfinite(X).all() and torch.isfinite(y).all()):
            raise ValueError("DNGO.fit: X and y must be finite")
        return X, y

    def _fit_basis(self, X: Tensor, y: Tensor) -> None:
        """MAP training; fresh while N <= fresh_fit_max, every reinit_every fits, or when the warm
        start fits badly; warm-started otherwise."""
        fresh = not self._trained or self.fits_since_reinit >= self.reinit_every or len(y) <= self.fresh_fit_max
        if not fresh:
            loss = self._train(X, y, warm=True)
            # A warm start that fits much worse than the last fit did is stuck in a poor basis:
            # compare against a fresh network and keep the better one.
            if self.last_loss is not None and loss > 4.0 * max(self.last_loss, 1e-4):
                warm = {k: v.clone() for k, v in self.net.state_dict().items()}
                self._initialise()
                fresh_loss = self._train(X, y, warm=False)
                if fresh_loss > loss:
                    self.net.load_state_dict(warm)
                else:
                    loss = fresh_loss
                    self.fits_since_reinit = 0
        else:
            self._initialise()
            loss = self._train(X, y, warm=False)
            self.fits_since_reinit = 0
        self.fits_since_reinit += 1
        self.last_loss = loss
        self._trained = True

    def _initialise(self) -> None:
        """Glorot-uniform weights (tanh gain), zero biases and the identity warp; weights drawn from
        the model's generator."""
        for module in self.net.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight, gain=nn.init.calculate_gain("tanh"), generator=self.generator)
                nn.init.zeros_(module.bias)
        for log_shape in self.net.warp_parameters():
            nn.init.zeros_(log_shape)

    def _train(self, X: Tensor, y: Tensor, warm: bool) -> float:
        """Minimise MSE + weight_decay (||W||^2 + ||log shapes||^2 / v) / N; returns the final
        training MSE.

        The penalty is the negative log prior of the weights (precision 1) and of the warp's log
        shapes (the warping paper's log-normal around the identity, variance v = 0.75), in the
        loss's units: the MSE is 2 / (N beta) times the negative log likelihood, and weight_decay
        plays 1 / beta.

        Full-batch L-BFGS up to ``full_batch_max`` points (each iteration is a pass over the data,
        cheap there, and it fits small data far more tightly than Adam); mini-batch Adam with a
        fixed step budget above, so the cost stays bounded whatever N is.
        """
        self.net.requires_grad_(True)
        shapes = self.net.warp_parameters()
        full_batch = len(y) <= self.full_batch_max
        fresh_steps, warm_steps = ((self.lbfgs_steps, self.lbfgs_warm_steps) if full_batch
                                   else (self.train_steps, self.warm_steps))
        if shapes and not warm:
            # A fresh warped net first fits with the identity warp, then the warp is released
            # for the last warm-start's worth of the budget: the joint fit starts from an
            # unwarped one and, being a descent, warps only where that lowers the penalised loss.
            # Trained jointly from scratch, the warp sometimes settled in a poor fit (a smooth 4-D
            # function: training MSE 5e-3 against 3e-4, 90% intervals covering 74% of the truth).
            # The total budget stays that of an unwarped fit: longer training fits tighter and
            # makes the model overconfident (models/DESIGN.md, "Input warping in DNGO").
            for log_shape in shapes:
                log_shape.requires_grad_(False)
            self._optimise(X, y, full_batch, max(1, fresh_steps - warm_steps))
            for log_shape in shapes:
                log_shape.requires_grad_(True)
        self._optimise(X, y, full_batch, warm_steps if warm or shapes else fresh_steps)
        self.net.requires_grad_(False)
        with torch.no_grad():
            return float(((self.net(X) - y) ** 2).mean())

    def _optimise(self, X: Tensor, y: Tensor, full_batch: bool, steps: int) -> None:
        """``steps`` of L-BFGS (full batch) or Adam over the parameters that require gradients."""
        matrices = [m.weight for m in self.net.modules() if isinstance(m, nn.Linear)]
        if full_batch:
            self._train_lbfgs(X, y, matrices, steps)
        else:
            biases = [m.bias for m in self.net.modules() if isinstance(m, nn.Linear)]
            self._train_adam(X, y, matrices, biases, steps)

    def _train_lbfgs(self, X: Tensor, y: Tensor, matrices: list[Tensor], iterations: int) -> None:
        """Full-batch L-BFGS with a strong-Wolfe line search."""
        N = len(y)
        optimiser = torch.optim.LBFGS(
            [p for p in self.net.parameters() if p.requires_grad], lr=1.0, max_iter=iterations, history_size=20,
            tolerance_grad=1e-9, tolerance_change=1e-12, line_search_fn="strong_wolfe",
        )

        def closure() -> Tensor:
            optimiser.zero_grad(set_to_none=True)
            penalty = sum((W * W).sum() for W in matrices)
            penalty = penalty + sum((s * s).sum() for s in self.net.warp_parameters()) / LOG_SHAPE_PRIOR_VARIANCE
            loss = ((self.net(X) - y) ** 2).mean() + self.weight_decay * penalty / N
            loss.backward()
            return loss

        optimiser.step(closure)

    def _train_adam(self, X: Tensor, y: Tensor, matrices: list[Tensor], biases: list[Tensor], steps: int) -> None:
        """Mini-batch Adam with a cosine step size from learning_rate down to 1% of it."""
        N = len(y)
        # Adam's weight_decay adds wd * W to the gradient, the gradient of (wd / 2) ||W||^2.
        optimiser = torch.optim.Adam(
            [{"params": matrices, "weight_decay": 2.0 * self.weight_decay / N}, {"params": biases},
             {"params": self.net.warp_parameters(), "weight_decay": 2.0 * self.weight_decay / (LOG_SHAPE_PRIOR_VARIANCE * N)}],
            lr=self.learning_rate,
        )
        batch = min(self.batch_size, N)
        for step in range(steps):
            for group in optimiser.param_groups:
                group["lr"] = self.learning_rate * (0.01 + 0.99 * 0.5 * (1.0 + math.cos(math.pi * step / steps)))
            rows = torch.randint(N, (batch,), generator=self.generator) if batch < N else slice(None)
            optimiser.zero_grad(set_to_none=True)
            ((self.net(X[rows]) - y[rows]) ** 2).mean().backward()
            optimiser.step()

    # ----------------------------------------------------------------------------- prediction

    def _fitted(self) -> DNGOPosterior:
        if self.state is None:
            raise RuntimeError("DNGO: call fit (or load a saved model) before predicting")
        return self.state

    def posterior(self, X: Tensor, observation_noise: bool = True) -> tuple[Tensor, Tensor]:
        """Mean and variance at X (M, D), each (S, M); see ``DNGOPosterior.posterior``."""
        return self._fitted().posterior(X, observation_noise)

    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "DNGO":
        """A DNGO conditioned on n_fantasies joint draws of y at X_pending (J, D) per current row
        (``DNGOPosterior.fantasize``): ``posterior`` of the result returns (S * n_fantasies, M),
        and ``fantasy_values`` the draws.

        The result has its own copy of the basis network, the chains and the random stream, so
        fitting it leaves this model as it is.
        """
        fantasy = copy.copy(self)
        fantasy.net = copy.deepcopy(self.net)
        fantasy.generator = torch.Generator()
        fantasy.generator.set_state(self.generator.get_state())
        fantasy.chains = self.chains.clone()  # fit clamps the chains in place
        state = self._fitted()
        posterior = DNGOPosterior(fantasy.net, state.hypers, state.blr, state.fantasy_values)
        fantasy.state = posterior.fantasize(X_pending, n_fantasies, generator)
        return fantasy

    @property
    def fantasy_values(self) -> Tensor:
        """Targets drawn at the pending points, (S * F, J); (S, 0) for a model without fantasies."""
        return self._fitted().fantasy_values

    def sample_f(self, X: Tensor, generator: torch.Generator) -> Tensor:
        """See ``DNGOPosterior.sample_f``."""
        return self._fitted().sample_f(X, generator)

    def sample_paths(self, X: Tensor, n: int, generator: torch.Generator) -> Tensor:
        """See ``DNGOPosterior.sample_paths``."""
        return self._fitted().sample_paths(X, n, generator)

    def warpings(self, grid_size: int = 51) -> dict | None:
        """JSON-able learned warp of the warped columns (``warping.warping_summary`` with one
        sample: the trained point estimate), None without warped columns."""
        if not self.net.warped_columns:
            return None
        with torch.no_grad():
            a, b = self.net.warp_shapes()
        return warping_summary(a.log()[None], b.log()[None], grid_size, columns=self.net.warped_columns,
                               cdf=kumaraswamy_cdf)

    # ----------------------------------------------------------------------------- state

    def _configuration(self) -> dict:
        """What a saved state must have been made with to be continued by this model."""
        return {"n_inputs": self.n_inputs, "width": self.width, "depth": self.depth, "n_samples": self.n_samples,
                "warped_columns": list(self.net.warped_columns), "fourier_features": self.net.fourier_features,
                "fourier_length_scales": list(self.net.fourier_length_scales)}

    def state_dict(self) -> State:
        """The trained basis network, the regression's statistics (Phi^T Phi and Phi^T y~ per
        sample and fantasy), the chains, the fit counters and the random stream: a restored model
        predicts as this one does and continues where it left off. RuntimeError before ``fit``.
        """
        state = self._fitted()
        return {
            "kind": type(self).__name__,
            **self._configuration(),
            "net": self.net.state_dict(),
            "gram": state.blr.gram,
            "rhs": state.blr.rhs,
            "generator": self.generator.get_state(),
            "fits_since_reinit": self.fits_since_reinit,
            "last_loss": self.last_loss,
            "chains": self.chains,
        }

    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place; the next ``fit`` warm-starts from it.

        ValueError (and nothing changed) when it was saved by a DNGO of another configuration
        (inputs, network size, samples, warped columns or Fourier features).
        """
        check_kind(state, type(self).__name__)
        expected = self._configuration()
        found = {key: state[key] for key in expected}
        if found != expected:
            raise ValueError("DNGO.load_state_dict: saved model has (" + ", ".join(expected) + ") = "
                             f"{tuple(found.values())}, expected {tuple(expected.values())}")
        chains = torch.as_tensor(state["chains"], dtype=torch.float64).clone()
        if chains.shape != (self.n_samples, 3 + 2 * self.n_inputs):
            raise ValueError(f"saved DNGO chains have shape {tuple(chains.shape)}, this model runs "
                             f"{(self.n_samples, 3 + 2 * self.n_inputs)}")
        net = copy.deepcopy(self.net)  # loaded aside: a state that fails half way changes nothing
        net.load_state_dict(state["net"])
        generator = torch.Generator()
        generator.set_state(state["generator"])
        hypers = Hyperparameters(chains)
        posterior = DNGOPosterior(net, hypers, BLRPosterior(state["gram"], state["rhs"], hypers.alpha, hypers.beta))
        self.net, self.generator, self.chains, self.state = net, generator, chains, posterior
        self.fits_since_reinit, self.last_loss = int(state["fits_since_reinit"]), state["last_loss"]
        self._trained = True
