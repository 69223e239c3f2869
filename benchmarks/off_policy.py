"""Off-policy agents side by side: our SAC and TD3 beside rejax on Pendulum, our SAC beside
`brax.training` SAC on a Brax task.

Three comparisons (the third off by default), in one run, on one machine (env steps per second of
whole training runs, learning included, and wall time to a return threshold):

1. rejax 0.1.3 (`rejax.SAC`, `rejax.TD3`) on gymnax's Pendulum-v1 beside our `sac` / `td3` on
   `envs.make("pendulum")` (the same dynamics, 200-step time limit), for each N in `--seeds`. Both
   sides train N seeds in one vmapped call (N=1 too): rejax as its README does,
   `jax.jit(jax.vmap(algo.train))(keys)`; ours as jitted `driver.init_batch` + `driver.run_batch`.
   Each side is called 1 + `--repeats` times with the same N keys, the sides taking turns: the first
   call's wall time includes compilation, the best of the later ones does not. Time to the threshold
   (`--threshold`, -250): the first update at which the mean over seeds of that update's episodic
   return (the mean return of the training episodes that ended during the update; NaN if none)
   reaches it, at the compile-free rate (uniform time per update). Final returns: `--eval-episodes`
   deterministic episodes per seed through our evaluator (`rlsuite.loop.episodes.evaluate`) on our
   Pendulum, for both sides, from the same keys.

   Geometry, ours -> rejax (one update of ours = one step of every env + `gradient_steps` gradient
   steps, or for TD3 whole `policy_delay` cycles; one rejax `train_iteration` is the same):
   - num_envs -> num_envs; buffer_size -> buffer_size (default: total_timesteps, so nothing is
     overwritten on either side); batch_size -> batch_size; total_timesteps -> total_timesteps;
     learning_starts -> fill_buffer; gradient_steps -> num_epochs; hidden_sizes -> SAC
     `hidden_layer_sizes` (TD3: rejax 0.1.3 fixes (64, 64) inside `TD3.create_agent`, so the
     benchmark replaces its actor and critic modules with `module.clone(hidden_layer_sizes=...,
     activation=relu)` after `create`); activation relu on both sides (rejax TD3's default is
     swish); gamma -> gamma; tau -> polyak = 1 - tau (rejax updates its targets once per
     iteration, ours after every gradient step: the same with gradient_steps=1); one learning
     rate for everything (rejax has a single `learning_rate` for actor, critics and temperature;
     ours gets actor_lr = critic_lr (= alpha_lr for SAC) = `--learning-rate`); two critics;
     policy_delay 2 (TD3).
   - SAC: initial temperature 1 and target entropy -action_dim on both sides.
   - TD3 noise: ours acts in [-1, 1] (the env is wrapped in `RescaleAction`) and rejax in the
     env's units ([-2, 2] on Pendulum), so rejax gets ours times the action half-range:
     exploration_noise 0.1 -> 0.2, policy_noise 0.2 -> target_noise 0.4, noise_clip 0.5 ->
     target_noise_clip 1.0. TD3 schedule: both take policy_delay env steps and as many critic
     steps, then an actor step on the last critic batch and a Polyak step of both targets (rejax
     interleaves env and critic steps; ours steps the envs first, which changes only which
     transitions the first critic step can sample).
   - rejax's in-training evaluation (128 episodes every `eval_freq` steps, in its default
     callback) is replaced by a callback that only reads episode statistics kept by the benchmark's
     env wrapper (below), with `eval_freq` = one iteration, so its curve has ours' granularity
     (one point per update) and it does no more work than ours.

   Differences that remain (rejax's API or code fixes them):
   - Time limits: rejax's `done` (terminated | truncated) ends the bootstrap, so every Pendulum
     episode end is treated as a terminal state; ours bootstraps truncated steps from the true
     last observation.
   - Warm-up: rejax SAC acts with its (untrained) policy while filling the buffer; rejax TD3 and
     ours act uniformly at random. rejax starts learning one step later (`global_step >
     fill_buffer`, ours `>=`).
   - Replay sampling: rejax draws each batch without replacement, with `jax.random.choice(...,
     replace=False, p=...)`, a Gumbel top-k over the whole buffer capacity per gradient step (its
     cost grows with buffer_size); ours draws uniformly with replacement.
   - SAC update order: rejax steps the actor, then the critics (with the old actor), then the
     temperature; ours the critics, then the actor (with the new critics), then the temperature.
     rejax clips the log std to [-10, 2], ours squashes it smoothly into [-5, 2]. The deterministic
     policy of a rejax SAC (which has none: `make_act` samples) is taken as tanh of its Gaussian's
     mean, scaled to the bounds, which is what ours uses.
   - Network initialisation (rejax: flax's default lecun-normal; ours: orthogonal, last layer
     scaled by 0.01); rejax wraps Adam in an element-wise `optax.clip(max_grad_norm=inf)`.

2. `brax.training.agents.sac.train` (0.14.2) beside our SAC on the same Brax environment through
   our adapter (`envs.make("brax/<env>")` = `TimeLimit(BraxEnv(env), 1000)`, MJX by default).
   Ours trains N seeds in one vmapped call; brax cannot vmap seeds, so N brax runs go one after
   another (each `train` call builds and compiles its functions anew, unless JAX's persistent
   compilation cache is on; run i does not depend on N, so a smaller N reuses the first runs of a
   larger one). Geometry, ours -> brax: num_envs -> num_envs; gradient_steps ->
   grad_updates_per_step (per step of all envs); batch_size -> batch_size; learning_starts ->
   min_replay_size; buffer_size -> max_replay_size (brax's default, None, sizes the buffer to the
   whole run, num_timesteps; the benchmark passes the same number to both); hidden_sizes ->
   network_factory `hidden_layer_sizes` (relu, two critics); actor_lr = critic_lr ->
   learning_rate; alpha_lr -> 3e-4 (fixed inside brax); gamma -> discounting; tau -> tau;
   reward_scaling -> reward_scale (`--brax-reward-scaling`, 1: none); target_entropy_scale 0.5
   (brax's target entropy is -0.5 * action_size); no observation normalisation. Brax's
   compile-free time is its own per-epoch `training/walltime` over the epochs after the first
   (which compiles), scaled to the whole run; its prefill (min_replay_size steps without
   learning) is left out of that estimate.
   brax SAC has no switch to turn its evaluator off (`num_eval_envs` envs for `episode_length`
   steps after every epoch and before the first): its wall times here are `train`'s wall time
   minus the time the evaluator reports (`eval/walltime`, compilation included). Final returns of
   both sides come from our evaluator on our env. Differences that remain (brax's code fixes
   them): brax prefills with its untrained policy (ours: uniform random); brax restarts every
   episode of an env from one cached start state; brax drops truncated steps from the critic loss
   (ours bootstraps them); brax's gradient step updates the temperature, then the critics, then the
   actor against the *old* critics (ours: critics, actor against the new critics, temperature);
   brax's policy std is softplus + 0.001 (ours: log std squashed into [-5, 2]); initialisation
   (brax: lecun-uniform).
3. SAC at brax's published hopper configuration, within a wall-clock budget (`--hopper-seeds`,
   empty by default: skipped): env steps per second and the evaluation return each side reaches
   in `--hopper-budget-seconds` (60) of wall time, compilation and evaluations included. brax's
   training colab (`notebooks/training.ipynb`) publishes `sac.train(num_timesteps=6_553_600,
   num_evals=20, reward_scaling=30, episode_length=1000, normalize_observations=True,
   action_repeat=1, discounting=0.997, learning_rate=6e-4, num_envs=128, batch_size=512,
   grad_updates_per_step=64, max_devices_per_host=1, max_replay_size=1048576,
   min_replay_size=8192)` for hopper (halfcheetah it trains with PPO only); the benchmark runs it
   on `brax.envs.get_environment("hopper", backend="mjx")` with brax's defaults for the rest (tau
   0.005, (256, 256) relu networks, temperature from 1 with Adam 3e-4 towards -0.5 x action size,
   128 evaluation envs, stochastic evaluation), except for num_evals (below). Every number is a
   flag (`--hopper-env halfcheetah` runs the same configuration on halfcheetah). Ours:
   `SACConfig(num_envs=128, buffer_size=1_048_576, batch_size=512, learning_starts=8192,
   gradient_steps=64, hidden_sizes=(256, 256), activation="relu", normalize_observations=True)`
   and `SACHparams(actor_lr=6e-4, critic_lr=6e-4, alpha_lr=3e-4, gamma=0.997, tau=0.005,
   alpha=1, target_entropy_scale=0.5, reward_scale=30)`: an update steps the 128 envs once and
   takes 64 gradient steps on batches of 512 with rewards scaled by 30, as a brax training step
   does. Evaluation and clock as in `benchmarks/ppo.py`'s Ant comparison
   (`side_by_side.train_with_evals`, `side_by_side.brax_with_evals`): both sides evaluate every
   `--hopper-eval-every` env steps per seed (32,768, i.e. 256 updates; brax: num_evals set to
   match, since its published 20 evaluate about every 330,000 steps, more than a budget of a
   minute or two trains) with `--hopper-eval-episodes` (128) stochastic episodes per seed; ours
   evaluates at k x 32,768 env steps, brax (whose count includes its prefill) at 8,192 + k x
   32,768 and also before prefilling. A side stops at its first evaluation past the budget, or
   once every seed has reached `--hopper-threshold` (none by default). Differences that remain:
   those of part 2
   (prefill policy, cached start states, truncated steps, update order, std parametrisation,
   initialisation), and ours clips normalised observations to [-10, 10] (brax does not clip).

Compilation: with JAX's persistent compilation cache on (`JAX_COMPILATION_CACHE_DIR`), a first
call loads what an earlier process compiled instead of compiling. For compile times, point it at an
empty folder: then every first call compiles, and brax's runs after its first load what its first
run compiled (the JSON records the folder).

The benchmark-side env wrapper for rejax (no rejax or gymnax file is modified): rejax 0.1.3 was
written for gymnax < 1.0, whose `step` returned five values; gymnax 1.0 returns six. The wrapper
returns `done = terminated | truncated` (what gymnax < 1.0 returned, so rejax runs as published)
and keeps, per env, the running episode return and the sum and count of finished episodes' returns,
which the replacement eval callback reads. The harness shared with `benchmarks/ppo.py` (timing,
evaluation, brax.training's runs and its compatibility shim, tables, JSON) is
`benchmarks/side_by_side.py`. Readings: docs/benchmarks/off_policy.md.

    python benchmarks/off_policy.py          # defaults, on a CPU
    python benchmarks/off_policy.py --seeds 1 8 64 --brax-seeds 1 8 64   # on a GPU
    python benchmarks/off_policy.py --no-brax --algos sac --seeds 1      # SAC on Pendulum only
    python benchmarks/off_policy.py --algos --no-brax --hopper-seeds 1   # hopper, on a GPU
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import side_by_side
import tyro
from flax import struct
from report import check_args

from rlsuite import envs
from rlsuite.loop.agent import config_dict

ALGOS = ("sac", "td3")


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    """Flags of the off-policy benchmark."""

    algos: list[str] = dataclasses.field(default_factory=lambda: ["sac", "td3"])
    """Algorithms for the Pendulum comparison with rejax (sac, td3; empty: skip it)."""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of vmapped seeds for the Pendulum comparison (both sides vmap them)."""
    total_timesteps: int = 10_000
    """Pendulum env steps per seed (all envs together)."""
    num_envs: int = 1
    """Parallel Pendulum envs per seed."""
    buffer_size: int | None = None
    """Replay capacity in transitions (None: total_timesteps, nothing is overwritten)."""
    batch_size: int = 256
    """Transitions per gradient step."""
    learning_starts: int = 1_000
    """Env steps before learning (rejax: fill_buffer)."""
    gradient_steps: int = 1
    """Gradient steps per step of all envs (rejax: num_epochs)."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layers of the actor and of each critic, relu, on both sides."""
    learning_rate: float = 1e-3
    """Adam step size of every network (and of the SAC temperature), both sides."""
    gamma: float = 0.99
    """Discount factor."""
    tau: float = 0.005
    """Polyak step of the targets (rejax: polyak = 1 - tau)."""
    threshold: float = -250.0
    """Pendulum return threshold for the time-to-threshold columns."""
    repeats: int = 1
    """Compile-free timed calls of each side after the first; the best is kept. Brax's runs are
    not repeated (each one compiles anew or loads from the persistent cache)."""
    brax_num_envs: int = 8
    """Parallel envs per seed."""
    brax_grad_updates_per_step: int = 8
    """Gradient steps per step of all envs (ours: gradient_steps)."""
    brax_batch_size: int = 256
    """Transitions per gradient step."""
    brax_min_replay_size: int = 1_000
    """Env steps before learning (ours: learning_starts); a multiple of brax_num_envs."""
    brax_max_replay_size: int | None = None
    """Replay capacity (None: brax's default, the whole run, brax_total_timesteps)."""
    brax_total_timesteps: int = 13_000
    """Env steps per seed; brax_total_timesteps - brax_min_replay_size must be a multiple of
    brax_epochs * brax_num_envs."""
    brax_hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layers of the actor and of each critic, relu, on both sides."""
    brax_learning_rate: float = 1e-3
    """Adam step size of actor and critics (the temperature's is 3e-4 on both sides)."""
    brax_discounting: float = 0.99
    """Discount factor."""
    brax_tau: float = 0.005
    """Polyak step of the target critics."""
    brax_reward_scaling: float = 1.0
    """Factor on the rewards the critics learn from, on both sides (brax.training's
    `reward_scaling`, our `reward_scale`)."""
    brax_eval_envs: int = 1
    """Envs of brax's own evaluator, which runs before the first epoch and after every epoch and
    cannot be turned off; its time is subtracted from brax's wall time."""
    hopper_seeds: list[int] = dataclasses.field(default_factory=list)
    """Numbers of seeds for the comparison within a wall-clock budget at brax's published hopper
    SAC configuration (ours vmapped, brax sequential); empty: skip it."""
    hopper_env: str = "hopper"
    """Brax environment of that comparison."""
    hopper_backend: str = "mjx"
    """Its brax physics backend."""
    hopper_reset_slots: int | None = None
    """Our SACConfig.reset_slots (None: the whole-batch reset, the default)."""
    hopper_budget_seconds: float = 60.0
    """Wall-clock budget per side and N (compilation and evaluations included): a side stops at
    the first evaluation past it."""
    hopper_threshold: float | None = None
    """Also stop a side once every seed has reached this evaluation return (None: budget only)."""
    hopper_total_timesteps: int = 6_553_600
    """Env steps per seed at most, rounded up to whole evaluation chunks."""
    hopper_num_envs: int = 128
    """Parallel envs (brax: num_envs)."""
    hopper_batch_size: int = 512
    """Transitions per gradient step."""
    hopper_grad_updates_per_step: int = 64
    """Gradient steps per step of all envs (ours: gradient_steps)."""
    hopper_min_replay_size: int = 8_192
    """Env steps before learning (ours: learning_starts); a multiple of hopper_num_envs."""
    hopper_max_replay_size: int = 1_048_576
    """Replay capacity (ours: buffer_size)."""
    hopper_learning_rate: float = 6e-4
    """Adam step size of actor and critics (the temperature's is 3e-4 on both sides)."""
    hopper_discounting: float = 0.997
    """Discount factor."""
    hopper_reward_scaling: float = 30.0
    """Factor on the rewards learned from (brax: reward_scaling; ours: SACHparams.reward_scale)."""
    hopper_hidden_sizes: tuple[int, ...] = (256, 256)
    """Hidden layers of the actor and of each critic, relu, on both sides (brax's default)."""
    hopper_eval_every: int = 32_768
    """Env steps per seed between evaluations (a multiple of hopper_num_envs)."""
    hopper_eval_episodes: int = 128
    """Episodes per evaluation and seed (brax: num_eval_envs)."""
    hopper_deterministic_eval: bool = False
    """Evaluate the deterministic policy (brax's default, as in its published runs: stochastic)."""
    hopper_episode_length: int = 1000
    """Time limit of training and evaluation episodes (brax: episode_length)."""
    out: Path = Path("benchmarks/results/off_policy.json")
    """Where to write the JSON results."""


# ------------------------------------------------------------------------------------ anchor shims
@struct.dataclass
class EpisodeStats:
    """A gymnax env state plus per-env episode statistics (cumulative over the run)."""

    env_state: Any
    episode_return: jax.Array
    finished_return_sum: jax.Array
    finished_count: jax.Array


class RejaxEnv:
    """A gymnax >= 1.0 env for rejax 0.1.3: five-value `step` (done = terminated | truncated, as
    gymnax < 1.0 returned) and episode statistics in the state (see the module docstring)."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        if name.startswith("__") or name == "_env":  # copy/deepcopy probe before __init__
            raise AttributeError(name)
        return getattr(self._env, name)

    def reset(self, key, params=None):
        obs, state = self._env.reset(key, params)
        zero = jnp.zeros((), jnp.float32)
        return obs, EpisodeStats(state, zero, zero, jnp.zeros((), jnp.int32))

    def step(self, key, state: EpisodeStats, action, params=None):
        obs, env_state, reward, terminated, truncated, _ = self._env.step(
            key, state.env_state, action, params
        )
        done = jnp.logical_or(terminated, truncated)
        episode_return = state.episode_return + reward
        state = EpisodeStats(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, episode_return),
            finished_return_sum=state.finished_return_sum + jnp.where(done, episode_return, 0.0),
            finished_count=state.finished_count + done.astype(jnp.int32),
        )
        return obs, state, reward, done, {}


def episode_stats_callback(algo, train_state, key):
    """rejax eval callback: cumulative (sum of finished episodes' returns, their count)."""
    stats = train_state.env_state  # [num_envs] per leaf
    return stats.finished_return_sum.sum(), stats.finished_count.sum()


def rejax_curve(evaluation, updates_per_point: int) -> np.ndarray:
    """Cumulative `[N, P]` (sum, count) from `episode_stats_callback` -> `[N, U]` mean return of
    the episodes that ended in each update (NaN: none; a point spanning several updates is put
    on its last update)."""
    total, count = (np.asarray(x, np.float64) for x in evaluation)
    total = np.diff(total, axis=1, prepend=0.0)
    count = np.diff(count, axis=1, prepend=0.0)
    points = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    curve = np.full((points.shape[0], points.shape[1] * updates_per_point), np.nan)
    curve[:, updates_per_point - 1 :: updates_per_point] = points
    return curve


# ---------------------------------------------------------------------------------------- Pendulum
def pendulum_agents(args: Args, algo: str):
    """Ours (agent, hparams) and rejax's algorithm for `algo`, with the mapped geometry."""
    import flax.linen as nn
    import gymnax
    import rejax

    from rlsuite.agents import sac, td3

    env, env_params = envs.make("pendulum")
    space = env.action_space(env_params)
    half_range = float(np.max((np.asarray(space.high) - np.asarray(space.low)) / 2))
    buffer_size = args.buffer_size or args.total_timesteps
    shared = dict(
        num_envs=args.num_envs,
        buffer_size=buffer_size,
        batch_size=args.batch_size,
        learning_starts=args.learning_starts,
        gradient_steps=args.gradient_steps,
        total_timesteps=args.total_timesteps,
        hidden_sizes=tuple(args.hidden_sizes),
        activation="relu",
    )
    lr = args.learning_rate
    gymnax_pendulum, gymnax_params = gymnax.make("Pendulum-v1")
    gymnax_env = dict(env=RejaxEnv(gymnax_pendulum), env_params=gymnax_params)
    rejax_kwargs = dict(
        num_envs=args.num_envs,
        buffer_size=buffer_size,
        fill_buffer=args.learning_starts,
        batch_size=args.batch_size,
        num_epochs=args.gradient_steps,
        total_timesteps=args.total_timesteps,
        learning_rate=lr,
        gamma=args.gamma,
        polyak=1.0 - args.tau,
        skip_initial_evaluation=True,
    )
    if algo == "sac":
        config = sac.SACConfig(**shared)
        agent = sac.make(config, env, env_params)
        hp = sac.SACHparams(
            actor_lr=lr, critic_lr=lr, alpha_lr=lr, gamma=args.gamma, tau=args.tau, alpha=1.0
        )
        rejax_kwargs.update(
            eval_freq=args.num_envs,
            hidden_layer_sizes=tuple(args.hidden_sizes),
            agent_kwargs={"activation": "relu"},
        )
        anchor = rejax.SAC.create(**gymnax_env, **rejax_kwargs)
    else:
        config = td3.TD3Config(**shared, policy_delay=2)
        agent = td3.make(config, env, env_params)
        hp = td3.TD3Hparams(actor_lr=lr, critic_lr=lr, gamma=args.gamma, tau=args.tau)
        rejax_kwargs.update(
            eval_freq=args.num_envs * config.policy_delay,
            policy_delay=config.policy_delay,
            exploration_noise=float(hp.exploration_noise) * half_range,
            target_noise=float(hp.policy_noise) * half_range,
            target_noise_clip=float(hp.noise_clip) * half_range,
        )
        anchor = rejax.TD3.create(**gymnax_env, **rejax_kwargs)
        layers = dict(hidden_layer_sizes=tuple(args.hidden_sizes), activation=nn.relu)
        actor, critic = anchor.actor.clone(**layers), anchor.critic.clone(**layers)
        anchor = anchor.replace(actor=actor, critic=critic)
        rejax_kwargs["actor_critic_hidden_layer_sizes (module.clone)"] = list(args.hidden_sizes)
    if args.total_timesteps % rejax_kwargs["eval_freq"]:
        raise ValueError(
            f"--total-timesteps {args.total_timesteps} must be a multiple of "
            f"{rejax_kwargs['eval_freq']} (num_envs x steps per rejax iteration)"
        )
    anchor = anchor.replace(eval_callback=episode_stats_callback)
    # One rejax point per iteration (eval_freq env steps) against our updates (TD3's hold two
    # env steps per env, as rejax's iterations do).
    updates_per_point = rejax_kwargs["eval_freq"] // agent.env_steps_per_update
    mapping = {
        "ours_config": config_dict(config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "rejax_create_kwargs": rejax_kwargs,
        "rejax_eval_callback": "episode statistics only (benchmark)",
    }
    return env, env_params, agent, hp, anchor, updates_per_point, mapping


def rejax_greedy(anchor, params, obs):
    """The deterministic action of a trained rejax actor, in the env's units (docstring)."""
    import rejax

    if isinstance(anchor, rejax.SAC):
        mean = anchor.actor.apply(params, obs, method="_action_dist").mean()
        return anchor.actor.action_loc + jnp.tanh(mean) * anchor.actor.action_scale
    return anchor.actor.apply(params, obs)


def bench_pendulum(args: Args, algo: str) -> list[dict]:
    env, env_params, agent, hp, anchor, updates_per_point, mapping = pendulum_agents(args, algo)
    steps_per_update = agent.env_steps_per_update
    num_updates = agent.config.num_updates
    train, returns = side_by_side.ours_vmapped(agent, hp, num_updates)
    rejax_train = jax.jit(jax.vmap(anchor.train))

    def greedy(params, key, obs):
        return rejax_greedy(anchor, params, obs)

    rows = []
    for n in args.seeds:
        keys, key_eval = side_by_side.keys_for(args.seed, n)
        calls = {
            "ours": functools.partial(train, keys),
            "rejax": functools.partial(rejax_train, jax.random.key_data(keys)),
        }
        sides, outs = side_by_side.take_turns(calls, args.repeats, f"pendulum {algo} n={n}")
        sides["ours"].update(returns(outs["ours"], key_eval, args.eval_episodes))
        train_state, callback_out = outs["rejax"]
        sides["rejax"]["train_returns"] = rejax_curve(callback_out, updates_per_point)
        params = train_state.actor_ts.params
        sides["rejax"]["eval_returns"] = side_by_side.evaluate_params(
            env, env_params, greedy, params, key_eval, args.eval_episodes
        )
        side_by_side.summarise_sides(sides, n, steps_per_update, num_updates, args.threshold)
        rows.append(
            {
                "env": f"pendulum / gymnax Pendulum-v1, {algo.upper()}",
                "algo": algo,
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                "mapping": mapping,
                **sides,
                "ours_over_rejax": side_by_side.ratios(sides["ours"], sides["rejax"]),
            }
        )
    return rows


# --------------------------------------------------------------------------------------------- Brax
def brax_geometry(args: Args) -> dict:
    e, epochs = args.brax_num_envs, args.brax_epochs
    if args.brax_min_replay_size % e:
        raise ValueError("--brax-min-replay-size must be a multiple of --brax-num-envs")
    if epochs < 2 or (args.brax_total_timesteps - args.brax_min_replay_size) % (epochs * e):
        raise ValueError(
            "--brax-epochs must be >= 2 and --brax-total-timesteps - --brax-min-replay-size a "
            "multiple of --brax-epochs * --brax-num-envs (so that both sides take the same steps)"
        )
    return {
        "num_envs": e,
        "batch_size": args.brax_batch_size,
        "grad_updates_per_step": args.brax_grad_updates_per_step,
        "min_replay_size": args.brax_min_replay_size,
        "max_replay_size": args.brax_max_replay_size or args.brax_total_timesteps,
        "num_timesteps": args.brax_total_timesteps,
    }


def bench_brax(args: Args) -> list[dict]:
    import flax.linen as nn
    from brax.training.agents.sac import networks as brax_networks
    from brax.training.agents.sac import train as brax_sac

    from rlsuite.agents import sac

    geometry = brax_geometry(args)
    config = sac.SACConfig(
        num_envs=geometry["num_envs"],
        buffer_size=geometry["max_replay_size"],
        batch_size=geometry["batch_size"],
        learning_starts=geometry["min_replay_size"],
        gradient_steps=geometry["grad_updates_per_step"],
        total_timesteps=geometry["num_timesteps"],
        hidden_sizes=tuple(args.brax_hidden_sizes),
        activation="relu",
    )
    hp = sac.SACHparams(
        actor_lr=args.brax_learning_rate,
        critic_lr=args.brax_learning_rate,
        alpha_lr=3e-4,
        gamma=args.brax_discounting,
        tau=args.brax_tau,
        alpha=1.0,
        target_entropy_scale=0.5,
        reward_scale=args.brax_reward_scaling,
    )
    env, env_params, brax_env = side_by_side.brax_pair(args.brax_env, args.brax_backend)
    agent = sac.make(config, env, env_params)
    network_factory = functools.partial(
        brax_networks.make_sac_networks,
        hidden_layer_sizes=tuple(args.brax_hidden_sizes),
        activation=nn.relu,
    )
    brax_kwargs = dict(
        **geometry,
        episode_length=env.max_episode_steps,
        action_repeat=1,
        learning_rate=args.brax_learning_rate,
        discounting=args.brax_discounting,
        tau=args.brax_tau,
        reward_scaling=args.brax_reward_scaling,
        normalize_observations=False,
        network_factory=network_factory,
        num_evals=args.brax_epochs + 1,  # brax: num_evals - 1 training epochs
        num_eval_envs=args.brax_eval_envs,
        deterministic_eval=True,
        max_devices_per_host=args.brax_max_devices,
    )
    train_fn = functools.partial(brax_sac.train, brax_env, **brax_kwargs)

    def one_run(seed: int) -> dict:
        """A brax run whose own evaluator's time is left out of its wall time."""
        run = side_by_side.brax_run(train_fn, seed, args.brax_epochs)
        eval_s = run["evals"][-1][2]
        return {
            "wall": run["wall"] - eval_s,
            "wall_with_brax_evals": run["wall"],
            "brax_eval_s": eval_s,
            "steady": run["steady"],
            "brax_eval_curve": [(step, reward) for step, reward, _ in run["evals"]],
            "params": run["params"],
            "make_policy": run["make_policy"],
        }

    def describe(run: dict) -> str:
        return (
            f"{run['wall']:.1f}s without its evaluator ({run['brax_eval_s']:.1f}s), "
            f"compile-free estimate {run['steady']:.1f}s"
        )

    def per_run(runs: list[dict]) -> dict:
        keys = ("wall", "wall_with_brax_evals", "brax_eval_s", "steady")
        fields = {f"per_run_{k}": [r[k] for r in runs] for k in keys}
        return {**fields, "brax_eval_curves": [r["brax_eval_curve"] for r in runs]}

    row = {
        "env": f"brax/{args.brax_env} ({args.brax_backend}), SAC",
        "ours_config": config_dict(config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "brax_train_kwargs": side_by_side.brax_kwargs_record(brax_kwargs),
        "brax_hidden_layer_sizes": list(args.brax_hidden_sizes),
    }
    return side_by_side.beside_brax(
        args, agent, hp, (env, env_params), one_run, describe, per_run, row
    )


def hopper_geometry(args: Args) -> dict:
    """brax's SAC arguments for our geometry (module docstring, part 3)."""
    e, every = args.hopper_num_envs, args.hopper_eval_every
    if every % e or args.hopper_min_replay_size % e:
        raise ValueError(
            "--hopper-eval-every and --hopper-min-replay-size must be multiples of "
            "--hopper-num-envs"
        )
    prefill = args.hopper_min_replay_size
    epochs = max(1, -(-(args.hopper_total_timesteps - prefill) // every))
    return {
        "num_envs": e,
        "batch_size": args.hopper_batch_size,
        "grad_updates_per_step": args.hopper_grad_updates_per_step,
        "min_replay_size": prefill,
        "max_replay_size": args.hopper_max_replay_size,
        "num_timesteps": prefill + epochs * every,
        "num_evals": epochs + 1,  # brax: num_evals - 1 epochs of `every` env steps
    }


def bench_hopper(args: Args) -> list[dict]:
    from brax.training.agents.sac import networks as brax_networks
    from brax.training.agents.sac import train as brax_sac

    from rlsuite.agents import sac

    geometry = hopper_geometry(args)
    every = args.hopper_eval_every
    updates_per_eval = every // args.hopper_num_envs
    max_updates = -(-args.hopper_total_timesteps // every) * updates_per_eval
    config = sac.SACConfig(
        num_envs=args.hopper_num_envs,
        buffer_size=args.hopper_max_replay_size,
        batch_size=args.hopper_batch_size,
        learning_starts=args.hopper_min_replay_size,
        gradient_steps=args.hopper_grad_updates_per_step,
        total_timesteps=max_updates * args.hopper_num_envs,
        hidden_sizes=tuple(args.hopper_hidden_sizes),
        activation="relu",
        normalize_observations=True,
        reset_slots=args.hopper_reset_slots,
    )
    hp = sac.SACHparams(
        actor_lr=args.hopper_learning_rate,
        critic_lr=args.hopper_learning_rate,
        alpha_lr=3e-4,
        gamma=args.hopper_discounting,
        tau=0.005,
        alpha=1.0,
        target_entropy_scale=0.5,
        reward_scale=args.hopper_reward_scaling,
    )
    env, env_params, brax_env = side_by_side.brax_pair(
        args.hopper_env, args.hopper_backend, args.hopper_episode_length
    )
    agent = sac.make(config, env, env_params)
    brax_kwargs = dict(
        **geometry,
        reward_scaling=args.hopper_reward_scaling,
        episode_length=args.hopper_episode_length,
        normalize_observations=True,
        action_repeat=1,
        discounting=args.hopper_discounting,
        learning_rate=args.hopper_learning_rate,
        num_eval_envs=args.hopper_eval_episodes,
        deterministic_eval=args.hopper_deterministic_eval,
    )
    network_factory = functools.partial(
        brax_networks.make_sac_networks, hidden_layer_sizes=tuple(args.hopper_hidden_sizes)
    )
    train_fn = functools.partial(
        brax_sac.train, brax_env, network_factory=network_factory, **brax_kwargs
    )
    row = {
        "env": f"brax/{args.hopper_env} ({args.hopper_backend}), SAC",
        "threshold": args.hopper_threshold,
        "budget_seconds_per_side": args.hopper_budget_seconds,
        "brax_train_kwargs": brax_kwargs,
        "brax_hidden_layer_sizes": list(args.hopper_hidden_sizes),
    }
    return side_by_side.curve_rows(
        args,
        "hopper",
        args.hopper_seeds,
        row,
        agent,
        hp,
        train_fn,
        updates_per_eval=updates_per_eval,
        max_updates=max_updates,
        eval_episodes=args.hopper_eval_episodes,
        deterministic=args.hopper_deterministic_eval,
        threshold=args.hopper_threshold,
        max_seconds=args.hopper_budget_seconds,
        label=args.hopper_env,
    )


# ------------------------------------------------------------------------------------------- report
def anchor_versions() -> dict:
    versions = {}
    for package in ("rejax", "brax", "gymnax", "distrax", "optax"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def main(args: Args) -> dict:
    check_args(
        args,
        may_be_zero=("learning_starts", "brax_min_replay_size", "hopper_min_replay_size"),
        choices={"algos": ALGOS},
    )
    for algo in args.algos:  # the parts' geometry, checked before the first part runs
        pendulum_agents(args, algo)
    if args.brax and args.brax_seeds:
        brax_geometry(args)
    if args.hopper_seeds:
        hopper_geometry(args)
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    pendulum = [row for algo in args.algos for row in bench_pendulum(args, algo)]
    brax_rows = bench_brax(args) if args.brax and args.brax_seeds else []
    hopper = bench_hopper(args) if args.hopper_seeds else []
    parts = {"pendulum": pendulum, "brax": brax_rows, "hopper": hopper}
    result = side_by_side.write_result(args, machine, anchor_versions(), start, parts)

    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each part that ran (Pendulum beside rejax, the Brax
    environment and hopper beside brax.training), from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the SAC and TD3 pages)."""
    args, pendulum, brax_rows, hopper = (
        result["args"],
        result["pendulum"],
        result["brax"],
        result["hopper"],
    )
    tables = []
    if pendulum:
        title = (
            f"Pendulum, {pendulum[0]['env_steps_per_seed']:,} env steps per seed; ours vs rejax "
            f"{result['anchors']['rejax']}, N seeds vmapped on both sides"
        )
        table = side_by_side.comparison_table(pendulum, "rejax", "rejax", args["threshold"])
        tables.append((title, *table))
    if brax_rows:
        tables.append(side_by_side.brax_table(brax_rows))
    if hopper:
        title = (
            f"brax/{args['hopper_env']} ({args['hopper_backend']}), SAC at brax's configuration: "
            f"evaluation return within {args['hopper_budget_seconds']:g} s of wall time per side "
            "(compilation and evaluations included); ours: N seeds vmapped, brax.training: N "
            "runs in sequence"
        )
        table = side_by_side.curve_table(hopper, "brax.training", args["hopper_threshold"])
        tables.append((title, *table))
    return [(t, h, [[c.replace("nan", "-") for c in row] for row in b]) for t, h, b in tables]


if __name__ == "__main__":
    main(tyro.cli(Args))
