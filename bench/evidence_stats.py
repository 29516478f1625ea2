"""Models, errors and tests of the evidence benchmark.

Models: ridge regression and a small MLP (scikit-learn), both on standardized inputs,
fitted to the residual of the constant-velocity prediction (so that "no training" is the
zero residual), each with a fixed seed and single-threaded BLAS, so a rerun gives the same
numbers.  Error: mean absolute horizontal error (metres) of the predicted position.

Tests (:func:`compare`): a strategy with a different selection per seed against the random
arm is Welch's two-sample t-test over seeds; a strategy whose selection does not depend on
the seed is one value, tested against the random arm's distribution with a one-sample
t-test.  p-values are Holm-corrected over every comparison of a domain (both models, all
test sets, sizes and strategies).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats
from sklearn.compose import TransformedTargetRegressor
from sklearn.linear_model import Ridge
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

MODELS = ("ridge", "mlp")


def make_model(name: str, *, quick: bool = False) -> Any:
    if name == "ridge":
        reg = Ridge(alpha=1.0)
    else:
        mlp = MLPRegressor(
            hidden_layer_sizes=(32,),
            alpha=1e-3,
            batch_size=64,
            max_iter=15 if quick else 40,
            tol=1e-5,
            n_iter_no_change=5,
            random_state=0,
        )
        reg = TransformedTargetRegressor(regressor=mlp, transformer=StandardScaler())
    return make_pipeline(StandardScaler(), reg)


def fit_predict(
    name: str, x: np.ndarray, r: np.ndarray, tests: Sequence[np.ndarray], *, quick: bool
) -> list[np.ndarray]:
    """Fit ``name`` to residuals ``r`` (N, 2) from inputs ``x`` and predict each test input."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    model = make_model(name, quick=quick)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x, r)
    return [model.predict(t) for t in tests]


def mae(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(np.linalg.norm(pred - truth, axis=1).mean())


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979), in input order."""
    p = np.asarray(p, float)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


def compare(strategy: Sequence[float], random: Sequence[float], deterministic: bool) -> float:
    """Two-sided p-value of strategy vs random (see the module docs)."""
    r = np.asarray(random, float)
    if deterministic:
        if np.ptp(r) == 0:
            return 1.0 if r[0] == strategy[0] else 0.0
        return float(stats.ttest_1samp(r, strategy[0]).pvalue)
    s = np.asarray(strategy, float)
    if np.ptp(r) == 0 and np.ptp(s) == 0:
        return 1.0 if r[0] == s[0] else 0.0
    return float(stats.ttest_ind(s, r, equal_var=False).pvalue)


def spread(x: Sequence[float]) -> tuple[float, float, float]:
    """Mean, standard deviation (ddof 1) and interquartile range."""
    a = np.asarray(x, float)
    sd = float(a.std(ddof=1)) if a.size > 1 else 0.0
    q1, q3 = np.percentile(a, [25, 75])
    return float(a.mean()), sd, float(q3 - q1)
