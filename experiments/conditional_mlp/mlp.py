"""A small torch MLP with 1 to 3 hidden layers; each layer's width and dropout exist only for
layers that exist. Trained on a regression data set generated in code (no download); the job's
value is the validation mean squared error (lower is better).

Training is 30 epochs of mini-batches of 100 over 1000 points (300 Adam steps): about 0.25 s of
CPU time on one thread on average over the space, 0.35 s at most over 16 Sobol points. 60 epochs
cost twice that (0.53 s on average, up to 1.5 s for three layers of 128) and rank the same 16
configurations nearly the same way (Spearman 0.89), so the shorter schedule keeps the problem
while halving the training time of a benchmark."""
import math

import torch
from torch import nn

EPOCHS = 30
N_TRAIN = 1000
BATCH = 100


def make_data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed non-linear 5-D regression problem with a little noise."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 5, generator=g) * 2 - 1
    y = torch.sin(3 * X[:, 0]) * X[:, 1] + X[:, 2] ** 2 - 0.5 * X[:, 3] * X[:, 4]
    return X, (y + 0.05 * torch.randn(n, generator=g)).unsqueeze(1)


def main(job_id, params):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    act = {"tanh": nn.Tanh, "relu": nn.ReLU}[params["activation"][0]]
    layers, size = [], 5
    for k in range(1, int(params["layers"][0]) + 1):
        width = int(params[f"width_{k}"][0])
        layers += [nn.Linear(size, width), act(), nn.Dropout(float(params[f"dropout_{k}"][0]))]
        size = width
    net = nn.Sequential(*layers, nn.Linear(size, 1))
    X, y = make_data(N_TRAIN + 200, seed=1)
    X_train, y_train, X_val, y_val = X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]
    opt = torch.optim.Adam(net.parameters(), lr=float(params["lr"][0]))
    for epoch in range(EPOCHS):
        net.train()
        for batch in torch.randperm(N_TRAIN).split(BATCH):
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(X_train[batch]), y_train[batch])
            loss.backward()
            opt.step()
    net.eval()
    with torch.no_grad():
        val = nn.functional.mse_loss(net(X_val), y_val).item()
    return val if math.isfinite(val) else float("nan")
