"""Branin-Hoo, Spearmint's first example: minimum 0.397887 at (-pi, 12.275), (pi, 2.275), (9.42478, 2.475)."""
import math

import numpy as np


def branin(x: float, y: float) -> float:
    a, b, c = 1.0, 5.1 / (4 * math.pi ** 2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return float(a * (y - b * x ** 2 + c * x - r) ** 2 + s * (1 - t) * np.cos(x) + s)


def main(job_id, params):
    # params["x"] and params["y"] are numpy arrays of length 1 (the variables' "size")
    print(f"job {job_id}: x={params['x'][0]:.6f} y={params['y'][0]:.6f}")
    return branin(params["x"][0], params["y"][0])
