"""Branin-Hoo observed with Gaussian noise (standard deviation 1), returned as a task dict."""
import math

import numpy as np

NOISE_SD = 1.0


def main(job_id, params):
    x, y = float(params["x"][0]), float(params["y"][0])
    value = ((y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2
             + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)
    noise = np.random.default_rng(job_id).normal(0.0, NOISE_SD)
    print(f"job {job_id}: x={x:.6f} y={y:.6f} branin={value:.6f} observed={value + noise:.6f}")
    return {"branin": value + noise}
