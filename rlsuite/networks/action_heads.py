"""Action heads: what a policy's distribution means to the agent that samples, scores and
evaluates it, one object per kind of action distribution, so that an agent's steps hold no
branch on the kind.

    head = action_heads.for_policy(action_space, "gaussian")   # or "tanh_gaussian"
    env = head.wrap(env)                                        # how the env receives actions
    action, extras = head.sample(dist, key)                     # extras["log_prob"], ...
    log_prob = head.log_prob(dist, head.learned_action(action, extras))
    entropy = head.entropy(dist, key)                           # per item
    action = head.mode(dist)                                    # the deterministic action

| head            | distribution                | the env gets | log-prob. at      | entropy    |
|-----------------|-----------------------------|--------------|-------------------|------------|
| `CATEGORICAL`   | categorical, `Discrete(n)`  | the action   | the action        | exact      |
| `GAUSSIAN`      | diagonal Gaussian           | it, clipped  | the unclipped one | exact      |
| `TANH_GAUSSIAN` | tanh of a diagonal Gaussian | it, rescaled | the pre-tanh `u`  | a sample   |

Each head's `kl(p, q)` is the exact divergence between two of its distributions (a trust region's
measure: `rlsuite.agents.fixpo`).

The squashed head keeps the pre-tanh sample `u` beside the action (`extras["raw"]`): its
log-probability is taken at `u` with the tanh correction (`squashed_log_prob`, no `atanh`), and
its entropy, which has no closed form, is the Gaussian's plus the log-determinant of the squash
at one fresh reparameterised sample (`squashed_entropy`), so it takes a key per minibatch step
(`entropy_keys`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rlsuite.environment.spaces import Box, Discrete
from rlsuite.environment.wrappers import ClipAction, RescaleAction
from rlsuite.networks import squashed_entropy, squashed_log_prob, squashed_mode

KINDS = ("gaussian", "tanh_gaussian")  # what a config chooses for continuous actions


class ActionHead(NamedTuple):
    """The functions of one kind of action distribution (see the module docstring).

    name: the kind, as `repr` and errors say it.
    wrap: `env -> env`, the environment as it receives this head's actions.
    sample: `(dist, key) -> (action, extras)`: the action the environment gets and what a
        rollout keeps beside it, `extras["log_prob"]` its log-probability (and, squashed,
        `extras["raw"]`, the pre-tanh sample).
    learned_action: `(action, extras) -> x`, what the log-probability is taken at when learning.
    log_prob: `(dist, x) -> log-probability`, of the `x` that `learned_action` gives.
    entropy: `(dist, key) -> entropy` per item (`key`: for an estimate by sampling; None where
        `entropy_keys` gives none).
    mode: `dist -> action`, the deterministic action (evaluation).
    entropy_keys: `(key, n) -> (key, keys)`: the key left for the rest of an epoch and `n`
        keys for the minibatch steps' entropies (None where the entropy needs none; the key
        is then returned as it is).
    kl: `(p, q) -> KL(p || q)` per item, exact (squashed: the Gaussians' before the tanh, which
        a bijection leaves unchanged).
    """

    name: str
    wrap: Callable
    sample: Callable
    learned_action: Callable
    log_prob: Callable
    entropy: Callable
    mode: Callable
    entropy_keys: Callable
    kl: Callable

    def __repr__(self) -> str:
        return f"ActionHead({self.name})"


def _sample(dist, key):
    action = dist.sample(seed=key)
    return action, {"log_prob": dist.log_prob(action)}


def _squashed_sample(dist, key):
    raw = dist.distribution.sample(seed=key)  # kept: log-probabilities are taken at it
    return jnp.tanh(raw), {"log_prob": squashed_log_prob(dist, raw), "raw": raw}


def _kl(p, q):
    return p.kl_divergence(q)


def _squashed_kl(p, q):
    return p.distribution.kl_divergence(q.distribution)


def _no_entropy_keys(key, n):
    return key, None


def _entropy_keys(key, n):
    key, key_entropy = jax.random.split(key)
    return key, jax.random.split(key_entropy, n)


CATEGORICAL = ActionHead(
    name="categorical",
    wrap=lambda env: env,
    sample=_sample,
    learned_action=lambda action, extras: action,
    log_prob=lambda dist, action: dist.log_prob(action),
    entropy=lambda dist, key: dist.entropy(),
    mode=lambda dist: dist.mode(),
    entropy_keys=_no_entropy_keys,
    kl=_kl,
)
GAUSSIAN = CATEGORICAL._replace(name="gaussian", wrap=ClipAction)
TANH_GAUSSIAN = ActionHead(
    name="tanh_gaussian",
    wrap=RescaleAction,
    sample=_squashed_sample,
    learned_action=lambda action, extras: extras["raw"],
    log_prob=squashed_log_prob,
    entropy=squashed_entropy,
    mode=squashed_mode,
    entropy_keys=_entropy_keys,
    kl=_squashed_kl,
)


def for_policy(action_space, kind: str = "gaussian") -> ActionHead:
    """The head of a policy over `action_space` whose continuous actions are of `kind`
    (`KINDS`): categorical for `Discrete`, `kind`'s for a `Box`."""
    if kind not in KINDS:
        raise ValueError(f"action head: kind={kind!r}; allowed: {', '.join(KINDS)}")
    if isinstance(action_space, Discrete) and kind == "gaussian":
        return CATEGORICAL
    if isinstance(action_space, Box):
        return TANH_GAUSSIAN if kind == "tanh_gaussian" else GAUSSIAN
    raise TypeError(f"action head: no {kind} head for {action_space!r}")
