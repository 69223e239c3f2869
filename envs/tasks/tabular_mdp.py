"""Random tabular MDPs (Duan et al. 2016, arXiv:1611.02779, section 3.2): a new MDP every trial.

| item        | value                                                                          |
|-------------|--------------------------------------------------------------------------------|
| task        | `transitions` [S, A, S] (row [s, a]: next-state probabilities), `reward_means` |
|             | [S, A]                                                                         |
| sampler     | `sample_task`: each row ~ Dirichlet(1, ..., 1); each mean ~ N(1, 1)            |
| observation | one-hot of the state, float32 [S]; every episode starts in state 0             |
| action      | `Discrete(A)`                                                                  |
| reward      | reward_means[s, a] + reward_std * N(0, 1) (`reward_std` = 1: unit variance)    |
| episode     | H = `horizon` steps (10), then `truncated`; never `terminated`                 |

S = 10, A = 5 and the horizon H = 10 are constructor arguments (shapes and loop lengths are
static); `max_episode_steps` is H, counted in `step_env` (no `TimeLimit` needed).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.tasks import check_leaf_shape

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.ops.validators import check_field


@struct.dataclass
class TabularMDPParams:
    transitions: jax.Array  # [S, A, S], each [s, a] row a distribution over next states
    reward_means: jax.Array  # [S, A]
    reward_std: float = 1.0


@struct.dataclass
class TabularMDPState:
    state: jax.Array  # int32 scalar, the current state
    time: jax.Array  # int32 scalar, steps taken in this episode


class TabularMDP(Environment):
    """`num_states` states, `num_actions` actions; the task is in params (see the module table)."""

    def __init__(self, num_states: int = 10, num_actions: int = 5, horizon: int = 10):
        for field, value in (
            ("num_states", num_states),
            ("num_actions", num_actions),
            ("horizon", horizon),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TabularMDP: invalid {field}={value!r}; allowed: an integer >= 1")
        self.num_states, self.num_actions = num_states, num_actions
        self.max_episode_steps = horizon  # counted in step_env (no TimeLimit needed)

    @property
    def default_params(self) -> TabularMDPParams:
        """Uniform transitions and mean rewards of 1: a placeholder; draw tasks with
        `sample_task`."""
        s, a = self.num_states, self.num_actions
        return TabularMDPParams(
            transitions=jnp.full((s, a, s), 1.0 / s, jnp.float32),
            reward_means=jnp.ones((s, a), jnp.float32),
        )

    def validate_params(self, params: TabularMDPParams) -> None:
        s, a = self.num_states, self.num_actions
        check_leaf_shape(params, "transitions", (s, a, s), self.name)
        check_leaf_shape(params, "reward_means", (s, a), self.name)
        check_field(
            params,
            "transitions",
            lambda v: (v >= 0).all() & (abs(v.sum(-1) - 1) < 1e-4).all(),
            "values >= 0 whose rows [s, a, :] sum to 1",
            self.name,
        )
        check_field(params, "reward_means", lambda v: abs(v) < float("inf"), "finite", self.name)
        check_field(params, "reward_std", lambda v: v >= 0, "a value >= 0", self.name)

    def reset_env(self, key: jax.Array, params: TabularMDPParams):
        state = TabularMDPState(jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
        return self._observation(state), state

    def step_env(self, key, state: TabularMDPState, action, params: TabularMDPParams):
        key_next, key_reward = jax.random.split(key)
        mean = params.reward_means[state.state, action]
        noise = jax.random.normal(key_reward, (), jnp.float32)
        reward = (mean + params.reward_std * noise).astype(jnp.float32)
        logits = jnp.log(params.transitions[state.state, action])  # log 0 = -inf: never drawn
        next_state = jax.random.categorical(key_next, logits).astype(jnp.int32)
        state = TabularMDPState(next_state, state.time + 1)
        truncated = state.time >= self.max_episode_steps
        return self._observation(state), state, reward, jnp.zeros((), bool), truncated, {}

    def _observation(self, state: TabularMDPState) -> jax.Array:
        return jax.nn.one_hot(state.state, self.num_states, dtype=jnp.float32)

    def observation_space(self, params: TabularMDPParams) -> Box:
        return Box(0.0, 1.0, (self.num_states,))

    def action_space(self, params: TabularMDPParams) -> Discrete:
        return Discrete(self.num_actions)

    def trial_references(self, sample_task, params, episodes_per_trial, key, trials=10_000):
        """The uniformly random policy and the optimal one that knows the MDP, on trials of
        `episodes_per_trial` episodes of `sample_task`'s MDPs: each task's expected return is
        exact (`episode_values`), their mean over `trials` drawn tasks is simulated."""
        from rlsuite.environment.evaluations import Reference

        if episodes_per_trial is None:
            return []
        tasks = jax.vmap(sample_task, (0, None))(jax.random.split(key, trials), params)
        values = jax.jit(jax.vmap(lambda t: episode_values(t, self.max_episode_steps)))(tasks)
        basis = f"exact per task, mean over {trials:,} drawn tasks"
        out = []
        for name, value in zip(("random", "optimal (knows the MDP)"), values, strict=True):
            total = episodes_per_trial * np.asarray(value, np.float64)
            stderr = total.std() / np.sqrt(trials)
            out.append(Reference(name, total.mean(), stderr, None, None, basis))
        return out

    def __repr__(self) -> str:
        return (
            f"TabularMDP(num_states={self.num_states}, num_actions={self.num_actions}, "
            f"horizon={self.max_episode_steps})"
        )


def episode_values(params: TabularMDPParams, horizon: int) -> tuple[jax.Array, jax.Array]:
    """The expected return of one episode of `horizon` steps from state 0, `(random, optimal)`:
    the uniformly random policy's and the optimal policy's that knows `params`, by backward
    induction: Q_h(s, a) = R(s, a) + sum_s' P(s' | s, a) V_{h+1}(s'), with V the mean over
    actions (random) or the max (optimal), and V_{horizon + 1} = 0."""

    def backup(values, _):
        random, optimal = values
        q_random = params.reward_means + params.transitions @ random
        q_optimal = params.reward_means + params.transitions @ optimal
        return (q_random.mean(-1), q_optimal.max(-1)), None

    zeros = jnp.zeros(jnp.shape(params.reward_means)[-2], jnp.float32)
    (random, optimal), _ = jax.lax.scan(backup, (zeros, zeros), None, length=horizon)
    return random[0], optimal[0]


def sample_task(key: jax.Array, params: TabularMDPParams) -> TabularMDPParams:
    """`params` with a fresh MDP: rows ~ Dirichlet(1) (uniform on the simplex), means ~ N(1, 1);
    the shapes are those of `params` (S, A)."""
    key_transitions, key_rewards = jax.random.split(key)
    s, a = jnp.shape(params.reward_means)[-2:]
    # Dirichlet(1, ..., 1) is iid Exponential(1) = Gamma(1) draws, normalised (cheaper to draw
    # and to compile than jax.random.dirichlet's general gamma sampler).
    weights = jax.random.exponential(key_transitions, (s, a, s), jnp.float32)
    transitions = weights / weights.sum(axis=-1, keepdims=True)
    reward_means = 1.0 + jax.random.normal(key_rewards, (s, a), jnp.float32)
    return params.replace(transitions=transitions, reward_means=reward_means)
