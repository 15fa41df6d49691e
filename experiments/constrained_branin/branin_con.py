"""Spearmint's constrained Branin example: Branin-Hoo under two explicit constraints and a failure region.

Search box X in [-5, 10], Y in [0, 15]. Constraint values follow Spearmint's convention (a value
>= 0 means satisfied):

    y_at_least_x = Y - X        (Y >= X)
    y_at_most_10 = 10 - Y       (Y <= 10)

and the wrapper returns NaN (a failed evaluation of the implicit "success" constraint) for
X < 0, the first clause of the region check Spearmint's example carries commented out. About
22% of the box is feasible. The best feasible point is (2.945, 2.945) with branin = 0.8447, on the
edge Y = X; every one of Branin's three unconstrained minima (value 0.3979) violates something.
"""
import math


def branin(x: float, y: float) -> float:
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (y - b * x ** 2 + c * x - 6) ** 2 + 10 * (1 - t) * math.cos(x) + 10


def evaluate(x: float, y: float) -> dict[str, float] | float:
    """{task: value} at (x, y), or NaN where the evaluation fails (x < 0)."""
    if x < 0:
        return math.nan
    return {"branin": branin(x, y), "y_at_least_x": y - x, "y_at_most_10": 10.0 - y}


def main(job_id, params):
    x, y = float(params["X"][0]), float(params["Y"][0])
    print(f"job {job_id}: X={x:.6f} Y={y:.6f}")
    return evaluate(x, y)
