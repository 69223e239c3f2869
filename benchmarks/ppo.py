"""PPO side by side: ours beside PureJaxRL on CartPole and beside `brax.training` on a Brax task.

Three comparisons (the third off by default), in one run, on one machine:

1. CartPole-v1 at PureJaxRL's published configuration (`purejaxrl/ppo.py`: LR 2.5e-4, 4 envs,
   128 steps, 5e5 timesteps, 4 epochs, 4 minibatches, gamma 0.99, lambda 0.95, clip 0.2, entropy
   0.01, value 0.5, grad norm 0.5, tanh, annealed LR). Ours: `ppo.make(PPOConfig(num_envs=4,
   num_steps=128, num_minibatches=4, update_epochs=4, total_timesteps=500_000),
   *envs.make("cartpole"))` with the default `PPOHparams()`, trained as `driver.init_batch` +
   jitted `driver.run_batch`. PureJaxRL: `jax.jit(jax.vmap(make_train(config)))(keys)`, as its
   README's walkthrough does, on gymnax's CartPole-v1. For each N in `--seeds`, each side is
   called 1 + `--repeats` times with the same N keys, the sides taking turns: the first call's
   wall time includes compilation, the best of the later ones does not. Time to the threshold:
   the first update at which the mean over seeds of that update's episodic return (the mean
   return of the episodes that ended during the update; seeds with none are left out) reaches
   `--threshold`, at the compile-free rate (uniform time per update).
2. `brax.training.agents.ppo.train` beside ours on the same Brax environment with the same batch
   geometry. Ours: `envs.make("brax/<env>")` (= `TimeLimit(BraxEnv(env), 1000)`), N seeds in one
   vmapped call. Brax cannot vmap seeds, so N brax runs go one after another (each `train` call
   builds and compiles its functions anew; run i does not depend on N, so a smaller N reuses the
   first runs of a larger one). Mapping of the geometry (ours -> brax): num_envs ->
   num_envs, num_steps -> unroll_length, num_minibatches -> num_minibatches with batch_size =
   num_envs / num_minibatches (one unroll per env per update, so a minibatch holds
   num_envs * num_steps / num_minibatches transitions on both sides, as whole sequences in brax),
   update_epochs -> num_updates_per_batch. Both: lr constant, no value clipping, observation
   normalisation on, a (64, 64) tanh actor and critic with a Gaussian policy and a state-independent
   log std. Brax's compile-free time is its own per-epoch wall time (`training/walltime`) over the
   epochs after the first (which compiles), scaled to the whole run. Final returns of both sides
   come from the same evaluator (`rlsuite.evaluation.evaluate`, deterministic policy) on our env.
   Differences that remain (brax's API fixes them): brax restarts every episode of an env from one
   cached start state, recomputes GAE per minibatch with the current critic, drops rather than
   bootstraps truncated steps, and uses Adam's eps 1e-8 (ours 1e-5).
3. Time to a return threshold at brax's published Ant configuration (`--ant-seeds`, empty by
   default: skipped). brax's training colab (`notebooks/training.ipynb`) trains Ant with
   `ppo.train(num_timesteps=50_000_000, num_evals=10, reward_scaling=10, episode_length=1000,
   normalize_observations=True, action_repeat=1, unroll_length=5, num_minibatches=32,
   num_updates_per_batch=4, discounting=0.97, learning_rate=3e-4, entropy_cost=1e-2,
   num_envs=4096, batch_size=2048)` and its default network (`make_ppo_networks`: policy
   (32,) * 4 and value (256,) * 5, swish, lecun-uniform initialisation, a tanh-squashed normal
   whose std is a policy output, softplus + 0.001); `train`'s defaults do the rest (clip 0.3,
   GAE lambda 0.95, value weight 0.5, advantages normalised, no gradient clipping, Adam eps 1e-8,
   constant learning rate, no value clipping, 128 evaluation envs, stochastic evaluation). The
   benchmark runs that on `brax.envs.get_environment(--ant-env, backend=--ant-backend)` (MJX by
   default), except for num_evals (below). Ours: `PPOConfig(num_envs=4096, num_steps=80,
   num_minibatches=32, update_epochs=4, hidden_sizes=(32,) * 4, critic_hidden_sizes=(256,) * 5,
   activation="silu", distribution="tanh_gaussian", anneal_lr=False, clip_value_loss=False,
   normalize_observations=True)` (`--ant-distribution gaussian` for our default policy) and
   `PPOHparams(learning_rate=3e-4, gamma=0.97, gae_lambda=0.95, clip_eps=0.3, vf_coef=0.5,
   ent_coef=1e-2, max_grad_norm=inf, adam_eps=1e-8, reward_scale=10)` on
   `envs.make("brax/ant", backend="mjx")`. Same batch geometry: a brax update collects
   batch_size * num_minibatches / num_envs = 16 unrolls of 5 steps per env (80 steps, 327,680
   transitions) and takes 4 x 32 gradient steps on minibatches of 2,048 sequences of 5 steps
   (10,240 transitions); ours collects 80 steps per env and takes 4 x 32 gradient steps on
   minibatches of 10,240 transitions (`--ant-num-steps` must be a multiple of
   `--ant-brax-unroll-length`). Evaluation: both sides every `--ant-updates-per-eval` updates
   (5, so 1,638,400 env steps per seed; brax: num_evals = updates / 5 + 1, since its published 10
   evaluates every 17 updates and would place the threshold within 5.6M steps), with
   `--ant-eval-episodes` (128) episodes per seed of the stochastic policy
   (`--ant-deterministic-eval` switches both sides). Ours: the jitted `driver.run_batch` in
   chunks of those updates, `driver.evaluate_batch` between chunks, the wall clock started before
   the first compilation (so the compilation of init, update and evaluator is inside it). brax:
   `train` with a `progress_fn` that records the wall time of each of its evaluations
   (`eval/episode_reward`, brax's evaluator on brax's env) and raises the benchmark's own
   exception to end the run; its clock starts before `train` is called (so its set-up,
   compilation and the evaluation before training, which num_evals > 1 implies, are inside it).
   A side stops at its first evaluation at or above `--ant-threshold` (6,000; with N seeds, once
   every seed has reached it in some evaluation), at its first evaluation past
   `--ant-max-seconds`, or after `--ant-total-timesteps` (rounded up to whole chunks). Reported:
   wall time and env steps to the threshold (N seeds: ours, the evaluation at which the last seed
   got there; brax, the sum of its runs' times), env steps run, wall time and the part of it spent
   evaluating, the time of the first evaluation (compilation included), compile-free env steps
   per second of training (the chunks after the first, by their training time alone; brax: its
   `training/walltime`), last and best evaluation return. Differences that remain (brax's API
   fixes them): the entropy bonus of the squashed policy (brax: estimated at a fresh sample;
   ours: at the rollout's samples); initialisation (ours orthogonal); brax
   restarts every episode of an env from one cached start state, recomputes GAE in each
   minibatch with the current critic over 5-step sequences, drops truncated steps instead of
   bootstrapping them, and updates its observation statistics before the gradient steps of an
   update (ours after them: a rollout is learned from with the statistics it was collected with);
   ours clips normalised observations to [-10, 10], brax does not; brax's evaluator steps every
   env for the whole episode length (ours stops once every episode has ended) and also evaluates
   before training.

The anchors are run from a git-ignored folder (`benchmarks/_anchors/`, see benchmarks/README.md),
never copied into this repository, and need small compatibility shims that live here only:
- PureJaxRL (written for gymnax < 1.0): its `wrappers.py` imports `navix` (a stub module is
  registered if navix is missing; only its unused Navix wrapper needs it), and gymnax 1.0's `step`
  returns six values, so the `gymnax` name inside the anchor module is replaced by one whose `make`
  returns the env with a five-value `step` (done = terminated | truncated, which is what pre-1.0
  gymnax returned; gymnax 1.0's added info keys dropped).
- brax.training 0.14 calls `jax.device_put_replicated`, gone from current JAX. The shim replicates
  with an identity `pmap` over brax's axis name "i", so that the replicated training state carries
  the same sharding as the outputs of brax's `pmap`ped training epoch (a plain `device_put` works
  too, but then brax compiles its training epoch twice per run: once for the shim's sharding, once
  for its own).

    python benchmarks/ppo.py                      # defaults: about 10 minutes on 2 CPU cores
    python benchmarks/ppo.py --seeds 1 8 64 --brax-seeds 1 8 64   # on a GPU
    python benchmarks/ppo.py --no-brax --seeds 1  # CartPole only, one seed
    python benchmarks/ppo.py --no-cartpole --no-brax --ant-seeds 1   # Ant to 6,000, on a GPU
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import tyro
from env_throughput import check_args, machine_info, markdown, print_table
from rich.console import Console

import envs
from rlsuite import driver
from rlsuite.agent import config_dict
from rlsuite.agents import ppo
from rlsuite.evaluation import evaluate

ROOT = Path(__file__).resolve().parent.parent
PUREJAXRL_COMMIT = "31756b197773a52db763fdbe6d635e4b46522a73"


@dataclasses.dataclass
class Args:
    """Flags of the PPO benchmark."""

    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of vmapped seeds for the CartPole comparison."""
    cartpole: bool = True
    """Run the CartPole comparison with PureJaxRL."""
    total_timesteps: int = 500_000
    """CartPole env steps per seed (PureJaxRL's published 5e5)."""
    threshold: float = 475.0
    """CartPole return threshold for the time-to-threshold columns."""
    repeats: int = 2
    """Compile-free timed calls of ours (and of PureJaxRL) after the first; the best is kept.
    Brax's runs are not repeated (each one compiles anew)."""
    purejaxrl_dir: Path = ROOT / "benchmarks/_anchors/purejaxrl"
    """Folder holding PureJaxRL's `ppo.py` and `wrappers.py` (commit PUREJAXRL_COMMIT)."""
    brax: bool = True
    """Run the comparison with brax.training's PPO."""
    brax_seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of seeds for the Brax comparison (ours vmapped, brax sequential)."""
    brax_env: str = "inverted_pendulum"
    """Brax environment of the brax.training comparison."""
    brax_backend: str = "mjx"
    """Its brax physics backend."""
    brax_num_envs: int = 32
    """Parallel envs per run (brax: num_envs)."""
    brax_num_steps: int = 64
    """Steps per env per update (brax: unroll_length)."""
    brax_num_minibatches: int = 8
    """Minibatches per epoch (brax: num_minibatches)."""
    brax_update_epochs: int = 10
    """Passes over each batch (brax: num_updates_per_batch)."""
    brax_updates: int = 64
    """Updates per run; env steps per seed = updates * num_envs * num_steps."""
    brax_epochs: int = 4
    """Brax training epochs per run (its host loop); must divide brax_updates; >= 2 so that
    epochs after the compiling first one give the compile-free rate."""
    brax_learning_rate: float = 3e-4
    """Adam learning rate of both sides."""
    brax_max_devices: int | None = 1
    """brax.training's `max_devices_per_host` for the Brax comparison: the devices its `pmap`
    splits the envs over (None: all). 1 by default, its faster setting on a CPU whose cores are
    devices (`--cpu-devices`): inverted_pendulum over 2 CPU devices took 8.5 s per run, on one
    3-4 s."""
    eval_episodes: int = 10
    """Deterministic evaluation episodes per seed (both sides, our evaluator)."""
    ant_seeds: list[int] = dataclasses.field(default_factory=list)
    """Numbers of seeds for the time-to-threshold comparison at brax's published Ant
    configuration (ours vmapped, brax sequential); empty: skip it."""
    ant_env: str = "ant"
    """Brax environment of that comparison."""
    ant_backend: str = "mjx"
    """Its brax physics backend."""
    ant_distribution: str = "tanh_gaussian"
    """Our policy (PPOConfig.distribution): tanh_gaussian is brax's; gaussian is our default."""
    ant_reset_slots: int | None = None
    """Our PPOConfig.reset_slots (None: the whole-batch reset, the default)."""
    ant_threshold: float = 6_000.0
    """Evaluation return to reach (every seed, in one evaluation)."""
    ant_max_seconds: float = 95.0
    """Wall-clock budget per side and N (compilation and evaluations included): a side stops at
    the first evaluation past it."""
    ant_total_timesteps: int = 50_000_000
    """Env steps per seed at most (brax's published 5e7), rounded up to whole evaluation
    chunks."""
    ant_num_envs: int = 4096
    """Parallel envs (brax: num_envs)."""
    ant_num_steps: int = 80
    """Steps per env per update: a multiple of ant_brax_unroll_length (brax collects
    ant_num_steps / unroll_length unrolls per env per update)."""
    ant_brax_unroll_length: int = 5
    """brax's unroll_length (the sequence length of its GAE and minibatches)."""
    ant_num_minibatches: int = 32
    """Minibatches per epoch (brax: num_minibatches)."""
    ant_update_epochs: int = 4
    """Passes over each batch (brax: num_updates_per_batch)."""
    ant_updates_per_eval: int = 5
    """Updates between evaluations (both sides; brax: num_evals = updates / this + 1)."""
    ant_eval_episodes: int = 128
    """Episodes per evaluation and seed (brax: num_eval_envs)."""
    ant_deterministic_eval: bool = False
    """Evaluate the deterministic policy (brax's default, as in its published runs: stochastic)."""
    ant_episode_length: int = 1000
    """Time limit of training and evaluation episodes (brax: episode_length)."""
    cpu_devices: int | None = None
    """CPU cores made JAX devices before anything runs (`driver.use_cpu_cores`; None: every
    core, as `rlsuite train` does). Ours splits its seeds over them; the vmapped anchors
    (`jit(vmap(train))`) run on one device, as their READMEs do; brax.training's `train` splits
    its envs over all local devices (its `pmap`). 1: every side on one device."""
    seed: int = 0
    """Base seed; each N gets its own keys."""
    out: Path = Path("benchmarks/results/ppo.json")
    """Where to write the JSON results."""
    markdown: bool = True
    """Also print the tables as Markdown (for benchmarks/RESULTS.md)."""


# ------------------------------------------------------------------------------------ anchor shims
class _FiveValueStep:
    """A gymnax >= 1.0 env whose `step` returns the five values gymnax < 1.0 returned."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        dropped = ("terminated", "truncated", "final_observation")
        info = {k: v for k, v in info.items() if k not in dropped}
        return obs, state, reward, jnp.logical_or(terminated, truncated), info


def load_purejaxrl(directory: Path) -> types.ModuleType:
    """Import PureJaxRL's `ppo.py` from `directory` under gymnax 1.0 (shims in the docstring)."""
    if not (directory / "ppo.py").exists() or not (directory / "wrappers.py").exists():
        raise FileNotFoundError(
            f"PureJaxRL's ppo.py and wrappers.py are not in {directory}; "
            "benchmarks/README.md says how to fetch them"
        )
    import gymnax

    if importlib.util.find_spec("navix") is None:
        sys.modules.setdefault("navix", types.ModuleType("navix"))
    sys.path.insert(0, str(directory))
    try:
        spec = importlib.util.spec_from_file_location("purejaxrl_ppo", directory / "ppo.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(directory))

    def make(name, **kwargs):
        env, params = gymnax.make(name, **kwargs)
        return _FiveValueStep(env), params

    module.gymnax = types.SimpleNamespace(make=make)
    return module


def install_brax_shim() -> None:
    """`jax.device_put_replicated` for brax.training 0.14 (see the module docstring)."""
    if hasattr(jax, "device_put_replicated"):
        return

    def device_put_replicated(x, devices):
        stacked = jax.tree.map(lambda a: jnp.stack([jnp.asarray(a)] * len(devices)), x)
        return jax.pmap(lambda a: a, axis_name="i", devices=devices)(stacked)

    jax.device_put_replicated = device_put_replicated


# ------------------------------------------------------------------------------------------ helpers
def timed(fn, *args) -> tuple[float, Any]:
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return time.perf_counter() - start, out


def per_update_return(returns: np.ndarray, done: np.ndarray) -> np.ndarray:
    """`[N, U, T, E]` returns at episode ends -> `[N, U]` mean per update (NaN: no episode)."""
    count = done.sum(axis=(2, 3))
    total = (returns * done).sum(axis=(2, 3))
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def nanmean(x, axis=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def summarise(side: dict, n: int, steps_per_update: int, num_updates: int) -> dict:
    """Derived columns from the raw times, per-update returns and evaluation returns."""
    first, steady = side["first_call_s"], min(side["steady_s"])
    side["wall_incl_compile_s"] = first
    side["wall_excl_compile_s"] = steady
    side["compile_s"] = max(first - steady, 0.0)
    side["env_steps_per_s"] = n * num_updates * steps_per_update / steady
    if "train_returns" in side:
        returns = np.asarray(side.pop("train_returns"), np.float64)  # [N, U]
        tail = max(1, num_updates // 10)
        side["train_return_last10pct"] = float(nanmean(nanmean(returns[:, -tail:], axis=1)))
        side["train_return_curve"] = [round(float(x), 2) for x in nanmean(returns, axis=0)]
    evals = np.asarray(side.pop("eval_returns"))  # [N, episodes]
    side["eval_return_mean"] = float(evals.mean())
    side["eval_return_min_seed"] = float(evals.mean(axis=1).min())
    return side


def time_to_threshold(side: dict, threshold: float, steps_per_update: int, num_updates: int):
    curve = np.asarray(side["train_return_curve"], np.float64)
    hits = np.flatnonzero(curve >= threshold)
    if hits.size == 0:
        side.update(threshold_update=None, threshold_env_steps=None, threshold_s=None)
        return
    updates = int(hits[0]) + 1
    side["threshold_update"] = updates
    side["threshold_env_steps"] = updates * steps_per_update
    side["threshold_s"] = side["wall_excl_compile_s"] * updates / num_updates
    side["threshold_s_incl_compile"] = side["compile_s"] + side["threshold_s"]


def ratios(ours: dict, anchor: dict) -> dict:
    keys = ("wall_incl_compile_s", "wall_excl_compile_s", "env_steps_per_s", "threshold_s")
    return {
        k: ours[k] / anchor[k] if ours.get(k) and anchor.get(k) else None for k in keys if k in ours
    }


def _progress(message: str) -> None:
    print(message, flush=True)


# ----------------------------------------------------------------------------------------- CartPole
def purejaxrl_config(total_timesteps: int) -> dict:
    """The configuration of PureJaxRL's `ppo.py` `__main__` (DEBUG off: no host callback)."""
    return {
        "LR": 2.5e-4,
        "NUM_ENVS": 4,
        "NUM_STEPS": 128,
        "TOTAL_TIMESTEPS": total_timesteps,
        "UPDATE_EPOCHS": 4,
        "NUM_MINIBATCHES": 4,
        "GAMMA": 0.99,
        "GAE_LAMBDA": 0.95,
        "CLIP_EPS": 0.2,
        "ENT_COEF": 0.01,
        "VF_COEF": 0.5,
        "MAX_GRAD_NORM": 0.5,
        "ACTIVATION": "tanh",
        "ENV_NAME": "CartPole-v1",
        "ANNEAL_LR": True,
        "DEBUG": False,
    }


def bench_cartpole(args: Args) -> list[dict]:
    anchor = load_purejaxrl(args.purejaxrl_dir)
    env, env_params = envs.make("cartpole")
    config = ppo.PPOConfig(
        num_envs=4,
        num_steps=128,
        num_minibatches=4,
        update_epochs=4,
        total_timesteps=args.total_timesteps,
    )
    agent = ppo.make(config, env, env_params)
    hp = ppo.PPOHparams()
    steps_per_update, num_updates = agent.env_steps_per_update, config.num_updates
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))

    def ours(keys):
        states = init(agent, keys, hp)
        return run(agent, states, hp, num_updates)

    pjr_config = purejaxrl_config(args.total_timesteps)
    pjr_train = jax.jit(jax.vmap(anchor.make_train(dict(pjr_config))))
    network = anchor.ActorCritic(env.action_space(env_params).n, activation="tanh")

    @functools.partial(jax.jit, static_argnums=2)
    def evaluate_purejaxrl(params, key, episodes):
        def one(params, key):
            def policy(key, obs):
                return network.apply(params, obs)[0].mode(), {}

            return evaluate(env, env_params, policy, key, episodes).returns

        return jax.vmap(one)(params, jax.random.split(key, jax.tree.leaves(params)[0].shape[0]))

    evaluate_ours = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))
    rows = []
    for n in args.seeds:
        key_train, key_eval = jax.random.split(jax.random.fold_in(jax.random.key(args.seed), n))
        keys = jax.random.split(key_train, n)
        pjr_keys = jax.random.key_data(keys)  # PureJaxRL uses raw uint32 keys
        sides = {"ours": {"steady_s": []}, "purejaxrl": {"steady_s": []}}
        calls = {
            "ours": functools.partial(ours, keys),
            "purejaxrl": functools.partial(pjr_train, pjr_keys),
        }
        outs = {}
        for name, call in calls.items():  # first calls: compile included
            sides[name]["first_call_s"], outs[name] = timed(call)
            _progress(f"cartpole n={n} {name}: first call {sides[name]['first_call_s']:.1f}s")
        for _ in range(args.repeats):  # compile-free calls, sides taking turns
            for name, call in calls.items():
                seconds, outs[name] = timed(call)
                sides[name]["steady_s"].append(seconds)
                _progress(f"cartpole n={n} {name}: compiled call {seconds:.1f}s")

        states, metrics = outs["ours"]
        sides["ours"]["train_returns"] = np.asarray(metrics["charts/episodic_return"])
        evaluation = evaluate_ours(agent, states, key_eval, args.eval_episodes)
        sides["ours"]["eval_returns"] = evaluation.returns
        info = outs["purejaxrl"]["metrics"]
        sides["purejaxrl"]["train_returns"] = per_update_return(
            np.asarray(info["returned_episode_returns"]), np.asarray(info["returned_episode"])
        )
        params = outs["purejaxrl"]["runner_state"][0].params
        evaluation = evaluate_purejaxrl(params, key_eval, args.eval_episodes)
        sides["purejaxrl"]["eval_returns"] = evaluation
        for side in sides.values():
            summarise(side, n, steps_per_update, num_updates)
            time_to_threshold(side, args.threshold, steps_per_update, num_updates)
        rows.append(
            {
                "env": "cartpole / gymnax CartPole-v1",
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                **sides,
                "ours_over_purejaxrl": ratios(sides["ours"], sides["purejaxrl"]),
            }
        )
    return rows


# --------------------------------------------------------------------------------------------- Brax
def brax_geometry(args: Args) -> dict:
    e, t, m = args.brax_num_envs, args.brax_num_steps, args.brax_num_minibatches
    if e % m:
        raise ValueError(f"--brax-num-minibatches {m} must divide --brax-num-envs {e}")
    if args.brax_epochs < 2 or args.brax_updates % args.brax_epochs:
        raise ValueError("--brax-epochs must be >= 2 and divide --brax-updates")
    return {
        "num_envs": e,
        "unroll_length": t,
        "batch_size": e // m,
        "num_minibatches": m,
        "num_updates_per_batch": args.brax_update_epochs,
        "num_timesteps": args.brax_updates * e * t,
    }


def bench_brax(args: Args) -> list[dict]:
    install_brax_shim()
    import flax.linen as nn
    from brax import envs as brax_envs
    from brax.training.agents.ppo import networks as brax_networks
    from brax.training.agents.ppo import train as brax_ppo

    geometry = brax_geometry(args)
    hp = ppo.PPOHparams(learning_rate=args.brax_learning_rate)
    config = ppo.PPOConfig(
        num_envs=args.brax_num_envs,
        num_steps=args.brax_num_steps,
        num_minibatches=args.brax_num_minibatches,
        update_epochs=args.brax_update_epochs,
        total_timesteps=geometry["num_timesteps"],
        anneal_lr=False,
        clip_value_loss=False,
        normalize_observations=True,
    )
    env, env_params = envs.make(f"brax/{args.brax_env}", backend=args.brax_backend)
    agent = ppo.make(config, env, env_params)
    steps_per_update, num_updates = agent.env_steps_per_update, config.num_updates
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    evaluate_ours = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))

    brax_env = brax_envs.get_environment(args.brax_env, backend=args.brax_backend)
    network_factory = functools.partial(
        brax_networks.make_ppo_networks,
        policy_hidden_layer_sizes=config.hidden_sizes,
        value_hidden_layer_sizes=config.hidden_sizes,
        activation=nn.tanh,
        distribution_type="normal",
        noise_std_type="log",
        init_noise_std=1.0,
    )
    brax_kwargs = dict(
        **geometry,
        episode_length=env.max_episode_steps,
        action_repeat=1,
        learning_rate=hp.learning_rate,
        entropy_cost=hp.ent_coef,
        discounting=hp.gamma,
        gae_lambda=hp.gae_lambda,
        clipping_epsilon=hp.clip_eps,
        max_grad_norm=hp.max_grad_norm,
        vf_loss_coefficient=hp.vf_coef,
        normalize_advantage=True,
        normalize_observations=True,
        reward_scaling=1.0,
        network_factory=network_factory,
        num_evals=args.brax_epochs + 1,  # brax: num_evals - 1 training epochs
        run_evals=False,
        max_devices_per_host=args.brax_max_devices,
    )

    def brax_run(seed: int) -> dict:
        epochs = []
        start = time.perf_counter()
        make_policy, params, _ = brax_ppo.train(
            brax_env,
            seed=seed,
            progress_fn=lambda step, m: epochs.append(float(m["training/walltime"])),
            **brax_kwargs,
        )
        wall = time.perf_counter() - start
        epoch_s = np.diff([0.0, *epochs])
        steady = float(epoch_s[1:].sum() * args.brax_epochs / (args.brax_epochs - 1))
        return {"wall": wall, "steady": steady, "params": params, "make_policy": make_policy}

    def evaluate_brax(make_policy, params, key, episodes):
        def one(params, key):
            act = make_policy(params, deterministic=True)

            def policy(key, obs):
                return act(obs, key)[0], {}

            return evaluate(env, env_params, policy, key, episodes).returns

        stacked = jax.tree.map(lambda *x: jnp.stack(x), *params)
        keys = jax.random.split(key, len(params))
        return jax.jit(jax.vmap(one))(stacked, keys)

    rows, runs = [], []
    for n in sorted(args.brax_seeds):
        key_train, key_eval = jax.random.split(jax.random.fold_in(jax.random.key(args.seed), n))
        keys = jax.random.split(key_train, n)
        ours = {"steady_s": []}
        anchor = {"steady_s": []}

        def call_ours(keys=keys):
            return run(agent, init(agent, keys, hp), hp, num_updates)

        ours["first_call_s"], out = timed(call_ours)
        _progress(f"brax n={n} ours: first call {ours['first_call_s']:.1f}s")
        while len(runs) < n:  # runs of smaller N are reused: brax run i is the same for every N
            runs.append(brax_run(args.seed + len(runs)))
            _progress(
                f"brax brax run {len(runs)}/{n}: {runs[-1]['wall']:.1f}s "
                f"(compile-free estimate {runs[-1]['steady']:.1f}s)"
            )
        anchor["first_call_s"] = sum(r["wall"] for r in runs[:n])
        anchor["steady_s"] = [sum(r["steady"] for r in runs[:n])]
        anchor["per_run_wall_s"] = [r["wall"] for r in runs[:n]]
        anchor["per_run_excl_compile_s"] = [r["steady"] for r in runs[:n]]
        for _ in range(args.repeats):
            seconds, out = timed(call_ours)
            ours["steady_s"].append(seconds)
            _progress(f"brax n={n} ours: compiled call {seconds:.1f}s")

        states, metrics = out
        ours["train_returns"] = np.asarray(metrics["charts/episodic_return"])
        ours["eval_returns"] = evaluate_ours(agent, states, key_eval, args.eval_episodes).returns
        params = [r["params"] for r in runs[:n]]
        anchor["eval_returns"] = evaluate_brax(
            runs[0]["make_policy"], params, key_eval, args.eval_episodes
        )
        summarise(ours, n, steps_per_update, num_updates)
        summarise(anchor, n, steps_per_update, num_updates)
        rows.append(
            {
                "env": f"brax/{args.brax_env} ({args.brax_backend})",
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                "brax_train_kwargs": {
                    k: v for k, v in brax_kwargs.items() if k != "network_factory"
                },
                "ours": ours,
                "brax": anchor,
                "ours_over_brax": ratios(ours, anchor),
            }
        )
    return rows


# ----------------------------------------------------------------------- time to a return threshold
class StopTraining(Exception):
    """Raised from brax's `progress_fn` to end a run at the threshold or at the wall budget."""


def train_with_evals(
    agent,
    hp,
    keys,
    key_eval,
    *,
    updates_per_eval,
    max_updates,
    eval_episodes,
    deterministic,
    threshold,
    max_seconds,
    label,
) -> dict:
    """Ours: N runs vmapped, in jitted chunks of `updates_per_eval` updates with an evaluation of
    every run (`driver.evaluate_batch`, `eval_episodes` episodes each) after each chunk, until
    every run has reached `threshold` in an evaluation (None: never), `max_updates` are done, or
    `max_seconds` of wall time have passed (the clock starts before the first compilation)."""
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4), donate_argnums=(1,))
    evaluate_runs = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4))
    steps_per_chunk = agent.env_steps_per_update * updates_per_eval
    points, train_s, eval_s, update, stop = [], 0.0, 0.0, 0, "updates"
    start = time.perf_counter()
    states = init(agent, keys, hp)
    while update < max_updates:
        t0 = time.perf_counter()
        states, metrics = run(agent, states, hp, updates_per_eval)
        episodic = np.asarray(metrics["charts/episodic_return"])  # waits for the chunk
        t1 = time.perf_counter()
        key_eval, key = jax.random.split(key_eval)
        result = evaluate_runs(agent, states, key, eval_episodes, deterministic)
        returns = np.asarray(result.returns).mean(axis=1)  # [N]
        t2 = time.perf_counter()
        update += updates_per_eval
        train_s, eval_s = train_s + t1 - t0, eval_s + t2 - t1
        points.append(
            {
                "env_steps": update * agent.env_steps_per_update,
                "wall_s": t2 - start,
                "train_s_total": train_s,
                "eval_s_total": eval_s,
                "chunk_train_s": t1 - t0,
                "eval_return": float(returns.mean()),
                "eval_return_per_run": returns.tolist(),
                "train_return": float(nanmean(episodic)) if np.isfinite(episodic).any() else None,
            }
        )
        _progress(
            f"{label} ours: {points[-1]['env_steps']:,} steps, {t2 - start:.1f}s, eval "
            f"{returns.mean():,.1f} (min run {returns.min():,.1f})"
        )
        if threshold is not None and all(
            any(p["eval_return_per_run"][i] >= threshold for p in points)
            for i in range(len(returns))
        ):
            stop = "threshold"
            break
        if t2 - start >= max_seconds:
            stop = "budget"
            break
    side = {"runs": [{"points": points, "stop": stop}], "steps_per_chunk": steps_per_chunk}
    return summarise_curves(side, threshold, len(keys), vmapped=True)


def brax_with_evals(train_fn, seeds, threshold, max_seconds, label) -> dict:
    """brax: one `train_fn(seed=..., progress_fn=...)` run per seed, in sequence, each stopped
    (`StopTraining` raised from its `progress_fn`) at its first evaluation at or above
    `threshold` (after the first epoch) or once the side's `max_seconds` are spent."""
    runs, side_start = [], time.perf_counter()
    for seed in seeds:
        left = max_seconds - (time.perf_counter() - side_start)
        if left <= 0:
            runs.append({"points": [], "stop": "budget spent before this run"})
            continue
        points, start = [], time.perf_counter()

        def progress(step, metrics, points=points, start=start, left=left, seed=seed):
            wall = time.perf_counter() - start
            point = {
                "env_steps": int(step),
                "wall_s": wall,
                "train_s_total": float(metrics.get("training/walltime", 0.0)),
                "eval_s_total": float(metrics.get("eval/walltime", 0.0)),
                "eval_return": float(metrics["eval/episode_reward"]),
            }
            points.append(point)
            _progress(
                f"{label} brax seed {seed}: {step:,} steps, {wall:.1f}s, eval "
                f"{point['eval_return']:,.1f}"
            )
            if step > 0 and threshold is not None and point["eval_return"] >= threshold:
                raise StopTraining("threshold")
            if wall >= left:
                raise StopTraining("budget")

        try:
            train_fn(seed=seed, progress_fn=progress)
            stop = "updates"
        except StopTraining as reason:
            stop = str(reason)
        runs.append({"points": points, "stop": stop})
        gc.collect()
    return summarise_curves({"runs": runs}, threshold, len(seeds), vmapped=False)


def _first_hit(points: list[dict], threshold: float | None, run: int | None) -> int | None:
    """Index of the first point whose evaluation (of run `run`, or the mean) reaches threshold."""
    if threshold is None:
        return None
    for j, p in enumerate(points):
        value = p["eval_return"] if run is None else p["eval_return_per_run"][run]
        if value >= threshold:
            return j
    return None


def summarise_curves(side: dict, threshold: float | None, num_runs: int, vmapped: bool) -> dict:
    """Derived figures of `train_with_evals` / `brax_with_evals`. Time and env steps (per run) to
    the threshold: vmapped runs, the evaluation at which the last of them got there; runs in
    sequence, the sum of their times. Env steps per second: compile-free training only (the
    evaluation chunks after the first, by the training time alone), all runs together."""
    summaries = []
    for run in side["runs"]:
        points = [p for p in run["points"] if p["env_steps"] > 0]  # brax's step-0 evaluation out
        if vmapped:
            firsts = [_first_hit(points, threshold, i) for i in range(num_runs)]
            hit = None if None in firsts else max(firsts)
        else:
            hit = _first_hit(points, threshold, None)
        last = points[-1] if points else None
        steady = len(points) >= 2 and last["train_s_total"] > points[0]["train_s_total"]
        summaries.append(
            {
                "stop": run["stop"],
                "threshold_s": None if hit is None else points[hit]["wall_s"],
                "threshold_env_steps": None if hit is None else points[hit]["env_steps"],
                "env_steps": last["env_steps"] if last else 0,
                "wall_s": run["points"][-1]["wall_s"] if run["points"] else 0.0,
                "eval_s": run["points"][-1]["eval_s_total"] if run["points"] else 0.0,
                "first_point_wall_s": points[0]["wall_s"] if points else None,
                "first_chunk_train_s": points[0]["train_s_total"] if points else None,
                "steady_steps": (
                    (last["env_steps"] - points[0]["env_steps"]) * (num_runs if vmapped else 1)
                    if steady
                    else 0
                ),
                "steady_s": last["train_s_total"] - points[0]["train_s_total"] if steady else 0.0,
                "eval_return_last": last["eval_return"] if last else None,
                "eval_return_best": max(p["eval_return"] for p in points) if points else None,
            }
        )
    reached = bool(summaries) and all(s["threshold_s"] is not None for s in summaries)
    steady_s = sum(s["steady_s"] for s in summaries)
    lasts = [s["eval_return_last"] for s in summaries if s["eval_return_last"] is not None]
    bests = [s["eval_return_best"] for s in summaries if s["eval_return_best"] is not None]
    side.update(
        num_runs=num_runs,
        per_run=summaries,
        stop=", ".join(sorted({s["stop"] for s in summaries})),
        threshold_s=sum(s["threshold_s"] for s in summaries) if reached else None,
        threshold_env_steps=max(s["threshold_env_steps"] for s in summaries) if reached else None,
        env_steps_per_run=min((s["env_steps"] for s in summaries), default=0),
        wall_s=sum(s["wall_s"] for s in summaries),
        eval_s=sum(s["eval_s"] for s in summaries),
        first_point_wall_s=summaries[0]["first_point_wall_s"] if summaries else None,
        env_steps_per_s=sum(s["steady_steps"] for s in summaries) / steady_s if steady_s else None,
        eval_return_last=float(np.mean(lasts)) if lasts else None,
        eval_return_best=float(np.mean(bests)) if bests else None,
    )
    return side


def hparams_dict(hp) -> dict:
    return {f.name: float(getattr(hp, f.name)) for f in dataclasses.fields(hp)}


def save_partial(args, name: str, rows: list[dict]) -> None:
    """Write what is done so far to `args.out`, so that a run killed at its limit leaves it."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = {"partial": True, "args": {k: str(v) for k, v in vars(args).items()}, name: rows}
    args.out.write_text(json.dumps(partial, indent=2, default=float))


def ant_geometry(args: Args) -> dict:
    """brax's PPO arguments for our geometry (module docstring, part 3)."""
    e, t, u = args.ant_num_envs, args.ant_num_steps, args.ant_brax_unroll_length
    m, k = args.ant_num_minibatches, args.ant_updates_per_eval
    if t % u:
        raise ValueError(f"--ant-num-steps {t} must be a multiple of --ant-brax-unroll-length {u}")
    if (e * t // u) % m:
        raise ValueError(
            f"--ant-num-minibatches {m} must divide num_envs * num_steps / unroll_length"
        )
    updates = -(-args.ant_total_timesteps // (e * t * k)) * k  # whole evaluation chunks
    return {
        "num_envs": e,
        "unroll_length": u,
        "batch_size": e * t // u // m,
        "num_minibatches": m,
        "num_updates_per_batch": args.ant_update_epochs,
        "num_timesteps": updates * e * t,
        "num_evals": updates // k + 1,  # brax: num_evals - 1 epochs of k updates
    }


def bench_ant(args: Args) -> list[dict]:
    install_brax_shim()
    from brax import envs as brax_envs
    from brax.training.agents.ppo import train as brax_ppo

    geometry = ant_geometry(args)
    config = ppo.PPOConfig(
        num_envs=args.ant_num_envs,
        num_steps=args.ant_num_steps,
        num_minibatches=args.ant_num_minibatches,
        update_epochs=args.ant_update_epochs,
        total_timesteps=geometry["num_timesteps"],
        hidden_sizes=(32,) * 4,
        critic_hidden_sizes=(256,) * 5,
        activation="silu",
        distribution=args.ant_distribution,
        reset_slots=args.ant_reset_slots,
        anneal_lr=False,
        clip_value_loss=False,
        normalize_observations=True,
    )
    hp = ppo.PPOHparams(
        learning_rate=3e-4,
        gamma=0.97,
        gae_lambda=0.95,
        clip_eps=0.3,
        vf_coef=0.5,
        ent_coef=1e-2,
        max_grad_norm=float("inf"),
        adam_eps=1e-8,
        reward_scale=10.0,
    )
    env, env_params = envs.make(
        f"brax/{args.ant_env}",
        backend=args.ant_backend,
        max_episode_steps=args.ant_episode_length,
    )
    agent = ppo.make(config, env, env_params)
    brax_env = brax_envs.get_environment(args.ant_env, backend=args.ant_backend)
    brax_kwargs = dict(
        **geometry,
        reward_scaling=10.0,
        episode_length=args.ant_episode_length,
        normalize_observations=True,
        action_repeat=1,
        discounting=0.97,
        learning_rate=3e-4,
        entropy_cost=1e-2,
        num_eval_envs=args.ant_eval_episodes,
        deterministic_eval=args.ant_deterministic_eval,
    )
    train_fn = functools.partial(brax_ppo.train, brax_env, **brax_kwargs)
    max_updates = geometry["num_timesteps"] // agent.env_steps_per_update
    row = {
        "env": f"brax/{args.ant_env} ({args.ant_backend}), PPO",
        "threshold": args.ant_threshold,
        "max_seconds_per_side": args.ant_max_seconds,
        "brax_train_kwargs": brax_kwargs,
        "brax_network": "brax's default make_ppo_networks",
    }
    return side_by_side(
        args,
        "ant",
        args.ant_seeds,
        row,
        agent,
        hp,
        train_fn,
        updates_per_eval=args.ant_updates_per_eval,
        max_updates=max_updates,
        eval_episodes=args.ant_eval_episodes,
        deterministic=args.ant_deterministic_eval,
        threshold=args.ant_threshold,
        max_seconds=args.ant_max_seconds,
        label=args.ant_env,
    )


def side_by_side(args, name, counts, row, agent, hp, train_fn, **evals) -> list[dict]:
    """For each number of seeds n in `counts`, a row `{**row, "num_seeds": n, ...}`: ours
    (`train_with_evals` of n vmapped runs) and then brax (`brax_with_evals` of `train_fn` over n
    seeds, same threshold and budget), saving the JSON after each side."""
    rows = []
    for n in counts:
        key_train, key_eval = jax.random.split(jax.random.fold_in(jax.random.key(args.seed), n))
        label = f"{evals['label']} n={n}"
        r = {"env": row["env"], "num_seeds": n, **row}
        r["env_steps_per_update"] = agent.env_steps_per_update
        r["ours_config"] = config_dict(agent.config)
        r["ours_hparams"] = hparams_dict(hp)
        rows.append(r)
        keys = jax.random.split(key_train, n)
        r["ours"] = train_with_evals(agent, hp, keys, key_eval, **{**evals, "label": label})
        save_partial(args, name, rows)
        gc.collect()
        seeds = [args.seed + i for i in range(n)]
        budget = evals["threshold"], evals["max_seconds"]
        r["brax"] = brax_with_evals(train_fn, seeds, *budget, label)
        r["ours_over_brax"] = curve_ratios(r["ours"], r["brax"])
        save_partial(args, name, rows)
    return rows


def curve_ratios(ours: dict, anchor: dict) -> dict:
    keys = ("threshold_s", "env_steps_per_s")
    return {k: ours[k] / anchor[k] if ours.get(k) and anchor.get(k) else None for k in keys}


def curve_table(rows: list[dict], label: str, threshold: float | None):
    """Rows of `bench_ant` (or off_policy's `bench_hopper`): ours, the anchor, the ratio."""
    header = ["env", "variant", "stopped by"]
    if threshold is not None:
        header += [f"s to {threshold:g} (all incl.)", f"env steps to {threshold:g} (per seed)"]
    header += ["env steps run (per seed)", "wall (s)", "of it evaluating (s)"]
    header += ["first eval at (s)", "env steps/s (compile-free, all seeds)"]
    header += ["eval return (last)", "eval return (best)"]
    body = []
    for r in rows:
        env = f"{r['env']}, N={r['num_seeds']}"
        for name, side in (("ours", r["ours"]), (label, r.get("brax"))):
            if side is None:
                continue
            cells = [env, name, side["stop"]]
            if threshold is not None:
                cells += [
                    _fmt(side["threshold_s"], ",.1f", "not reached"),
                    _fmt(side["threshold_env_steps"], ",.0f", "-"),
                ]
            cells += [
                _fmt(side["env_steps_per_run"], ",.0f"),
                _fmt(side["wall_s"]),
                _fmt(side["eval_s"]),
                _fmt(side["first_point_wall_s"]),
                _fmt(side["env_steps_per_s"], ",.0f"),
                _fmt(side["eval_return_last"]),
                _fmt(side["eval_return_best"]),
            ]
            body.append(cells)
        if "ours_over_brax" in r:
            ratio = r["ours_over_brax"]
            cells = [env, f"ours / {label}", ""]
            if threshold is not None:
                cells += [_fmt(ratio["threshold_s"], ".2f"), ""]
            cells += ["", "", "", "", _fmt(ratio["env_steps_per_s"], ".2f"), "", ""]
            body.append(cells)
    return header, body


# ------------------------------------------------------------------------------------------- report
def _fmt(x, spec: str = ",.1f", none: str = "-") -> str:
    return none if x is None else format(x, spec)


def _side_cells(side: dict, with_threshold: bool) -> list[str]:
    cells = [
        _fmt(side["wall_incl_compile_s"]),
        _fmt(side["wall_excl_compile_s"]),
        _fmt(side["compile_s"]),
        _fmt(side["env_steps_per_s"], ",.0f"),
    ]
    if with_threshold:
        cells += [
            _fmt(side["threshold_env_steps"], ",.0f", "not reached"),
            _fmt(side["threshold_s"], ",.2f", "-"),
        ]
    cells += [
        _fmt(side.get("train_return_last10pct")),
        _fmt(side["eval_return_mean"]),
    ]
    return cells


def _ratio_cells(r: dict, with_threshold: bool) -> list[str]:
    cells = [
        _fmt(r["wall_incl_compile_s"], ".2f"),
        _fmt(r["wall_excl_compile_s"], ".2f"),
        "",
        _fmt(r["env_steps_per_s"], ".2f"),
    ]
    if with_threshold:
        cells += ["", _fmt(r.get("threshold_s"), ".2f")]
    return cells + ["", ""]


def comparison_table(rows: list[dict], anchor: str, label: str, threshold: float | None):
    header = ["env", "variant", "wall incl. compile (s)", "wall excl. compile (s)", "compile (s)"]
    header.append("env steps/s (all seeds)")
    if threshold is not None:
        header += [f"env steps to {threshold:g} (per seed)", f"s to {threshold:g} (excl. compile)"]
    header += ["train return (last 10%)", "eval return"]
    body = []
    for r in rows:
        env = f"{r['env']}, N={r['num_seeds']}"
        body.append([env, "ours", *_side_cells(r["ours"], threshold is not None)])
        body.append([env, label, *_side_cells(r[anchor], threshold is not None)])
        ratio = r[f"ours_over_{anchor}"]
        body.append([env, f"ours / {label}", *_ratio_cells(ratio, threshold is not None)])
    return header, body


def git_info() -> dict:
    def git(*cmd):
        try:
            return subprocess.run(
                ["git", *cmd], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    return {
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_in_rlsuite_envs": bool(git("status", "--porcelain", "rlsuite", "envs")),
    }


def anchor_info(args: Args) -> dict:
    files = {}
    for name in ("ppo.py", "wrappers.py"):
        path = args.purejaxrl_dir / name
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return {"purejaxrl_commit": PUREJAXRL_COMMIT, "purejaxrl_sha256": files}


def main(args: Args) -> dict:
    check_args(args, may_be_zero=("ant_reset_slots",))
    if args.brax and args.brax_seeds:  # the parts' geometry, checked before the first part runs
        brax_geometry(args)
    if args.ant_seeds:
        ant_geometry(args)
    console = Console(width=220)
    driver.use_cpu_cores(args.cpu_devices)  # before the first computation (machine_info's)
    machine = machine_info()
    machine["compilation_cache_dir"] = jax.config.jax_compilation_cache_dir
    console.print(
        f"machine: {machine['cpu']}, {machine['cpus_usable']} usable cores, "
        f"{len(machine['devices'])} JAX devices, "
        f"jax {machine['versions']['jax']} ({machine['jax_backend']})"
    )
    start = time.perf_counter()
    cartpole = bench_cartpole(args) if args.cartpole and args.seeds else []
    brax_rows = bench_brax(args) if args.brax and args.brax_seeds else []
    ant = bench_ant(args) if args.ant_seeds else []
    result = {
        "machine": machine,
        "git": git_info(),
        "anchors": anchor_info(args),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "total_wall_s": time.perf_counter() - start,
        "load_average_at_end": list(os.getloadavg()),
        "cartpole": cartpole,
        "brax": brax_rows,
        "ant": ant,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=float))

    tables = []
    if cartpole:
        title = (
            f"CartPole-v1, PureJaxRL's configuration ({cartpole[0]['env_steps_per_seed']:,} env "
            "steps per seed; N seeds vmapped on both sides)"
        )
        table = comparison_table(cartpole, "purejaxrl", "PureJaxRL", args.threshold)
        tables.append((title, *table))
    if brax_rows:
        title = (
            f"brax/{args.brax_env} ({args.brax_backend}), {brax_rows[0]['env_steps_per_seed']:,} "
            "env steps per seed; ours: N seeds vmapped, brax.training: N runs in sequence"
        )
        tables.append((title, *comparison_table(brax_rows, "brax", "brax.training", None)))
    if ant:
        title = (
            f"brax/{args.ant_env} ({args.ant_backend}), PPO at brax's published Ant configuration: "
            f"wall time to an evaluation return of {args.ant_threshold:g} (compilation and "
            f"evaluations included), at most {args.ant_max_seconds:g} s per side; ours: N seeds "
            "vmapped, brax.training: N runs in sequence"
        )
        tables.append((title, *curve_table(ant, "brax.training", args.ant_threshold)))
    for title, header, body in tables:
        print_table(console, title, header, body)
    if args.markdown:
        for title, header, body in tables:
            print(f"\n**{title}**\n\n{markdown(header, body)}")
    console.print(f"wrote {args.out} (whole run {result['total_wall_s']:.0f}s)")
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
