"""`RL2`: the RL^2 wrapper (Duan et al. 2016, arXiv:1611.02779), which turns an environment
whose `params` hold a task into one whose episodes are *trials*: several inner episodes of one
task, drawn at the trial's start.

The observation is the float32 vector `[flatten(obs), prev_action, prev_reward, prev_done]`
(`prev_action` one-hot for a `Discrete` action space, as taken for a 1-D `Box`); all zeros at a
trial's start. Inner episodes auto-reset inside the wrapper onto the same task, the previous
inputs kept (`prev_done` is 1 on the step after an inner episode end). For the learner the inner
episode ends are not terminal: the wrapper reports `terminated` only at the trial's end
(`truncated` never), so returns and GAE run across them, and `info["trial_done"]` (the key
`rlsuite.loop.rollout.TRIAL_END`) tells the rollout where the policy's memory resets.
`memory="episode"` is the ablation without memory across episodes: the previous inputs are zeroed
and `info["trial_done"]` is set at every inner episode end (the task is kept).

A task family may also offer what a curriculum needs of a levelled environment (`TaskLevels`: the
params fields that make a task, a mutator and named held-out tasks); `RL2.levels()` then gives its
`rlsuite.environment.levels.Levels`, whose levels are tasks: drawn by the wrapper's `sample_task`,
replayed at every trial reset once given as `GivenTask` params, so that UED's curricula
(`rlsuite train ued --env meta/maze --curriculum plr`) choose the tasks the RL^2 student meets
(AdA's curriculum over tasks, Adaptive Agent Team 2023, arXiv:2301.07608).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from rlsuite.environment import Environment, StepResult, param_fields, select
from rlsuite.environment.evaluations import HeldOutTasks, Trials
from rlsuite.environment.levels import Levels
from rlsuite.environment.spaces import Box, Discrete, Space, flat_dim
from rlsuite.environment.wrappers import Wrapper

TRIAL_DONE = "trial_done"  # the `info` key of the trial ends (`rlsuite.loop.rollout.TRIAL_END`)
MEMORY = ("trial", "episode")


class TaskLevels(NamedTuple):
    """What a task family offers a curriculum over its tasks (`RL2(..., tasks=...)`): a level is
    one task, the family's params as `sample_task` draws them."""

    fields: tuple[str, ...]
    """the params fields that make a task (the others are the environment's settings, which a
    level takes from the run's params)"""
    mutate: Callable[[jax.Array, Any, Any], Any]
    """`(key, params, num_edits) -> params`: a few random edits of a task (ACCEL)"""
    held_out: Callable[[], tuple[tuple[str, ...], Any]] | None = None
    """`() -> (names, params [N])`: named tasks to evaluate on, or None"""
    render: Callable[[Any], Any] | None = None
    """`params -> uint8 RGB [H, W, 3]` (NumPy): a picture of one task, or None"""


@struct.dataclass
class GivenTask:
    """RL2 params that hold the task every trial plays (`params`, the inner environment's),
    instead of a task drawn at each trial reset: a curriculum's level, a held-out task."""

    params: Any


def task_params(params: Any) -> Any:
    """The inner environment's params within `params` (RL2's, or `GivenTask`'s)."""
    return params.params if isinstance(params, GivenTask) else params


@struct.dataclass
class RL2State:
    """env_state: the inner environment's state; task: the params of this trial's task.
    prev_action `[action_dim]` (one-hot for Discrete), prev_reward and prev_done (float32
    scalars): the inputs of the next observation. episode_index: inner episodes ended in this
    trial; step: steps taken in it; episode_return: the running return of the current inner
    episode; episode_returns `[episodes_per_trial]` (`[0]` for a trial measured in steps): the
    returns of the inner episodes ended so far, 0 for the others."""

    env_state: Any
    task: Any
    prev_action: jax.Array
    prev_reward: jax.Array
    prev_done: jax.Array
    episode_index: jax.Array
    step: jax.Array
    episode_return: jax.Array
    episode_returns: jax.Array


def _trial_length(field: str, value: Any) -> int | None:
    if value is None:
        return None
    whole = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if not whole or value < 1:
        raise ValueError(f"RL2: {field} must be an integer >= 1 (or None), got {value!r}")
    return int(value)


class RL2(Wrapper):
    """Trials of `episodes_per_trial` inner episodes, or of `steps_per_trial` steps (exactly one).

    `sample_task(key, params) -> params` draws a trial's task at every reset; `None` keeps the
    task in `params` as given (held-out tasks, a batch of params under `vmap`). `step` is the
    contract's: `info` holds the inner step's info plus `"trial_done"`, `"episode_done"` (the
    inner episode ended on this step), `"episode_index"` (the inner episode this step belongs
    to, from 0), `"episode_returns"` (`RL2State.episode_returns` after this step) and
    `"episode_final_observation"` (the inner observation the step reached, before the inner
    reset). `max_episode_steps` is the longest trial in steps where it is known.

    `params` may also be `GivenTask(task)`: every trial then plays `task`, nothing is drawn.
    `tasks` (a `TaskLevels`, with a `sample_task`) makes the task family one a curriculum can
    train on (`levels()`), evaluated on its held-out tasks where it names some.
    """

    def __init__(
        self,
        env: Environment,
        sample_task: Callable[[jax.Array, Any], Any] | None = None,
        episodes_per_trial: int | None = None,
        steps_per_trial: int | None = None,
        memory: str = "trial",
        tasks: TaskLevels | None = None,
    ):
        super().__init__(env)
        episodes = _trial_length("episodes_per_trial", episodes_per_trial)
        steps = _trial_length("steps_per_trial", steps_per_trial)
        if (episodes is None) == (steps is None):
            raise ValueError(
                "RL2: give exactly one of episodes_per_trial and steps_per_trial (an integer >= "
                f"1), got episodes_per_trial={episodes_per_trial!r}, "
                f"steps_per_trial={steps_per_trial!r}"
            )
        episode_steps = getattr(env, "max_episode_steps", None)
        if steps is not None and episode_steps is not None and steps < episode_steps:
            raise ValueError(
                f"RL2: steps_per_trial={steps} is shorter than one episode of {env.name} "
                f"(max_episode_steps={episode_steps}); allowed: an integer >= {episode_steps}"
            )
        if memory not in MEMORY:
            raise ValueError(f"RL2: memory must be one of {MEMORY}, got {memory!r}")
        if sample_task is not None and not callable(sample_task):
            raise TypeError(
                f"RL2: sample_task must be a function (key, params) -> params or None, got "
                f"{type(sample_task).__name__}"
            )
        if tasks is not None and (not isinstance(tasks, TaskLevels) or sample_task is None):
            raise TypeError(
                "RL2: tasks must be a TaskLevels, given with a sample_task (a curriculum draws "
                f"its new tasks with it), got tasks={type(tasks).__name__}, sample_task="
                f"{sample_task!r}"
            )
        params = env.default_params
        if tasks is not None:
            unknown = [f for f in tasks.fields if not hasattr(params, f)]
            if not tasks.fields or unknown:
                raise ValueError(
                    f"RL2: TaskLevels.fields={tasks.fields!r} must name fields of {env.name}'s "
                    f"params; allowed: {', '.join(param_fields(params))}"
                )
        action_space = env.action_space(params)
        box_1d = isinstance(action_space, Box) and len(action_space.shape) == 1
        if not (isinstance(action_space, Discrete) or box_1d):
            raise ValueError(
                f"RL2: the action space of {env.name} must be Discrete or a 1-D Box, got "
                f"{action_space!r}"
            )
        _obs_bounds(env.observation_space(params), env.name)
        self.sample_task = sample_task
        self.episodes_per_trial = episodes
        self.steps_per_trial = steps
        self.memory = memory
        self.tasks = tasks
        if steps is not None:
            self.max_episode_steps = steps
        elif episode_steps is not None:
            self.max_episode_steps = episodes * int(episode_steps)

    # ----------------------------------------------------------------- spaces
    def check_params(self, params: Any) -> Any:
        if isinstance(params, GivenTask):
            return GivenTask(self.env.check_params(params.params))
        return self.env.check_params(params)

    def action_space(self, params: Any) -> Space:
        return self.env.action_space(task_params(params))

    def _action_dim(self, params: Any) -> int:
        space = self.action_space(params)
        return space.n if isinstance(space, Discrete) else flat_dim(space)

    def observation_space(self, params: Any) -> Box:
        params = task_params(params)
        obs_low, obs_high = _obs_bounds(self.env.observation_space(params), self.env.name)
        space = self.env.action_space(params)
        dim = self._action_dim(params)
        action_low = 0.0 if isinstance(space, Discrete) else -np.inf  # a raw action: unclipped
        action_high = 1.0 if isinstance(space, Discrete) else np.inf
        low = np.concatenate([obs_low, np.full(dim, action_low), [-np.inf, 0.0]])
        high = np.concatenate([obs_high, np.full(dim, action_high), [np.inf, 1.0]])
        return Box(low, high, low.shape, jnp.float32)

    def _encode_action(self, action: jax.Array, params: Any) -> jax.Array:
        space = self.action_space(params)
        if isinstance(space, Discrete):
            return jax.nn.one_hot(action, space.n, dtype=jnp.float32)
        return jnp.asarray(action, jnp.float32)

    def _observation(self, obs: Any, state: RL2State) -> jax.Array:
        return jnp.concatenate(
            [
                jnp.reshape(obs, (-1,)).astype(jnp.float32),
                state.prev_action,
                state.prev_reward[None],
                state.prev_done[None],
            ]
        )

    # ----------------------------------------------------------------- the trial
    def action_mask(self, state: RL2State, params: Any) -> jax.Array | None:
        """The inner environment's mask, in this trial's task."""
        return self.env.action_mask(state.env_state, state.task)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, RL2State]:
        key_task, key_reset = jax.random.split(key)
        if isinstance(params, GivenTask):
            task = params.params
        else:
            task = params if self.sample_task is None else self.sample_task(key_task, params)
        obs, env_state = self.env.reset(key_reset, task)
        zero = jnp.zeros((), jnp.float32)
        state = RL2State(
            env_state=env_state,
            task=task,
            prev_action=jnp.zeros((self._action_dim(params),), jnp.float32),
            prev_reward=zero,
            prev_done=zero,
            episode_index=jnp.zeros((), jnp.int32),
            step=jnp.zeros((), jnp.int32),
            episode_return=zero,
            episode_returns=jnp.zeros((self.episodes_per_trial or 0,), jnp.float32),
        )
        return self._observation(obs, state), state

    def step_env(self, key: jax.Array, state: RL2State, action: Any, params: Any) -> StepResult:
        # The inner environment's own auto-resetting step (its keys split as the contract
        # splits them), on this trial's task; its finished episode's last observation is kept
        # under another name, since the outer auto-reset sets `final_observation` at trial ends.
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, action, state.task
        )
        info = dict(info)
        episode_final_observation = info.pop("final_observation")
        episode_done = jnp.logical_or(terminated, truncated)
        episode_index = state.episode_index + episode_done.astype(jnp.int32)
        step = state.step + 1
        if self.episodes_per_trial is not None:
            trial_done = episode_done & (episode_index >= self.episodes_per_trial)
        else:
            trial_done = step >= self.steps_per_trial
        episode_return = state.episode_return + jnp.asarray(reward, jnp.float32)
        episode_returns = state.episode_returns
        if self.episodes_per_trial is not None:
            slot = jnp.minimum(state.episode_index, self.episodes_per_trial - 1)
            ended = episode_returns.at[slot].set(episode_return)
            episode_returns = jnp.where(episode_done, ended, episode_returns)
        prev = (
            self._encode_action(action, params),
            jnp.asarray(reward, jnp.float32),
            episode_done.astype(jnp.float32),
        )
        reset_memory = trial_done
        if self.memory == "episode":
            prev = select(episode_done, jax.tree.map(jnp.zeros_like, prev), prev)
            reset_memory = episode_done | trial_done
        new_state = RL2State(
            env_state,
            state.task,
            *prev,
            episode_index,
            step,
            jnp.where(episode_done, 0.0, episode_return),
            episode_returns,
        )
        info = {
            **info,
            "episode_final_observation": episode_final_observation,
            "episode_done": episode_done,
            "episode_index": state.episode_index,
            "episode_returns": episode_returns,
            TRIAL_DONE: reset_memory,
        }
        truncated = jnp.zeros((), bool)
        return self._observation(obs, new_state), new_state, reward, trial_done, truncated, info

    @property
    def evaluation(self) -> Trials | HeldOutTasks:
        """Each evaluation episode a trial: the adaptation curve across its inner episodes, and
        the regret summed per trial where the task family reports one; as references, what
        known policies earn on the same tasks where the family names them (its
        `trial_references(sample_task, params, episodes_per_trial, key)`). Where the family
        names held-out tasks (`TaskLevels.held_out`), trials on each of them besides, with
        their adaptation curve (`HeldOutTasks`)."""
        trials = Trials(("regret",), references=self._references)
        if self.tasks is None or self.tasks.held_out is None:
            return trials
        return HeldOutTasks(trials, self.levels())

    def levels(self) -> Levels | None:
        """The task family as levels for a curriculum (`rlsuite.agents.ued`), where it offers
        `tasks`: a level is one task, drawn by `sample_task` from the family's default params
        (`generate`), edited by `TaskLevels.mutate`; `params_for(env_params, tasks [N])` is
        `GivenTask` params [N], the run's params with each task's fields, which every trial
        of its environment replays. None for a family without `tasks`."""
        if self.tasks is None:
            return None
        default, fields = self.env.default_params, self.tasks.fields

        def generate(key):
            return self.sample_task(key, default)

        def params_for(env_params, tasks):
            num = jax.tree.leaves(tasks)[0].shape[0]
            base = jax.tree.map(
                lambda x: jnp.broadcast_to(jnp.asarray(x), (num, *jnp.shape(x))),
                task_params(env_params),
            )
            return GivenTask(base.replace(**{f: getattr(tasks, f) for f in fields}))

        tasks = self.tasks
        return Levels(generate, tasks.mutate, params_for, tasks.held_out, tasks.render)

    def _references(self, params: Any, key: jax.Array) -> list:
        find = getattr(self.env, "trial_references", None)
        if find is None or self.sample_task is None:
            return []
        return find(self.sample_task, params, self.episodes_per_trial, key)

    def __repr__(self) -> str:
        length = (
            f"episodes_per_trial={self.episodes_per_trial}"
            if self.episodes_per_trial is not None
            else f"steps_per_trial={self.steps_per_trial}"
        )
        return f"RL2({self.env!r}, {length}, memory={self.memory!r})"


def _obs_bounds(space: Space, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The flattened bounds of an inner observation space (Box or Discrete)."""
    if isinstance(space, Box):
        n = flat_dim(space)
        return np.reshape(space.low, (n,)).astype(np.float64), np.reshape(space.high, (n,))
    if isinstance(space, Discrete):
        return np.zeros(1), np.full(1, space.n - 1.0)
    raise ValueError(
        f"RL2: the observation space of {name} must be a Box or Discrete, got {space!r}"
    )


def trial_wrapper(env: Environment) -> RL2 | None:
    """The `RL2` wrapper among `env`'s wrappers (outermost first), or None: whether `env`'s
    episodes are trials of a task family."""
    while True:
        if isinstance(env, RL2):
            return env
        if not isinstance(env, Wrapper):
            return None
        env = env.env


def info_keys(env: Environment, params: Any = None) -> set[str]:
    """The keys of the `info` dict `env.step` returns (traced abstractly: nothing is run; the
    action is a zero of the action space's shape and dtype, which any space has, where an
    unbounded Box could not be sampled)."""

    def one_step(key):
        key_reset, key_step = jax.random.split(key)
        obs, state = env.reset(key_reset, params)
        space = env.action_space(params)
        action = jnp.zeros(space.shape, space.dtype)
        return env.step(key_step, state, action, params)[-1]

    return set(jax.eval_shape(one_step, jax.random.key(0)))
