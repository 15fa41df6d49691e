"""A stand-in for training that diverges: the wrapper raises in a region the optimizer is not told about.

Like SGD with momentum, the run depends on the effective step size lr / (1 - momentum). Past
DIVERGENCE_STEP the "training" blows up and the wrapper raises, as a real run would with an
inf/NaN loss; about 23% of the (log learning rate, momentum) box crashes. Below it the final loss
keeps improving as the step grows, so the best feasible runs sit right at the edge of the crash
region, the place an optimizer that ignores failures keeps probing.

Best feasible loss: 0.1 + 0.5 * log10(1 / 0.3)^2 = 0.2368, on the edge lr / (1 - m) = 0.3 with
m = 0.9 (lr = 0.03).
"""
import math

DIVERGENCE_STEP = 0.3


def effective_step(learning_rate: float, momentum: float) -> float:
    return learning_rate / (1.0 - momentum)


def crashes(learning_rate: float, momentum: float) -> bool:
    """Whether a run at these settings diverges (the hidden region)."""
    return effective_step(learning_rate, momentum) > DIVERGENCE_STEP


def final_loss(learning_rate: float, momentum: float) -> float:
    """Loss of a run that does not diverge; its unconstrained minimum (step 1) lies in the crash region."""
    step = effective_step(learning_rate, momentum)
    return 0.1 + 0.5 * math.log10(step) ** 2 + 2.0 * (momentum - 0.9) ** 2


def main(job_id, params):
    lr, momentum = float(params["learning_rate"][0]), float(params["momentum"][0])
    print(f"job {job_id}: learning_rate={lr:.3g} momentum={momentum:.3f}")
    if crashes(lr, momentum):
        raise FloatingPointError(f"training diverged: loss is inf at step size {effective_step(lr, momentum):.3g}")
    return final_loss(lr, momentum)
