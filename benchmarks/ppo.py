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
   come from the same evaluator (`rlsuite.loop.episodes.evaluate`, deterministic policy) on our
   env.
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

The harness shared with `benchmarks/off_policy.py` (timing, evaluation, brax.training's runs and
its compatibility shim, tables, JSON) is `benchmarks/side_by_side.py`. PureJaxRL is run from a
git-ignored folder (`benchmarks/_anchors/`, see benchmarks/README.md), never copied into this
repository; `load_purejaxrl` says how it is made to run under gymnax 1.0. Readings:
docs/benchmarks/ppo.md.

    python benchmarks/ppo.py                      # defaults, on a CPU
    python benchmarks/ppo.py --seeds 1 8 64 --brax-seeds 1 8 64   # on a GPU
    python benchmarks/ppo.py --no-brax --seeds 1  # CartPole only, one seed
    python benchmarks/ppo.py --no-cartpole --no-brax --ant-seeds 1   # Ant to 6,000, on a GPU
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import sys
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import side_by_side
import tyro
from report import check_args

from rlsuite import envs
from rlsuite.agents import ppo

ROOT = Path(__file__).resolve().parent.parent
PUREJAXRL_COMMIT = "31756b197773a52db763fdbe6d635e4b46522a73"


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
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
    brax_learning_rate: float = 3e-4
    """Adam learning rate of both sides."""
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
    out: Path = Path("benchmarks/results/ppo.json")
    """Where to write the JSON results."""


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


def load_purejaxrl(directory: Path, script: str = "ppo.py") -> types.ModuleType:
    """Import PureJaxRL's `script` (`ppo.py`; `benchmarks/dpo.py`: `dpo_continuous_action.py`)
    from `directory`, unmodified, under gymnax 1.0.

    PureJaxRL was written for gymnax < 1.0. Its `wrappers.py` imports `navix` (a stub module is
    registered if navix is missing; only its unused Navix wrapper needs it), and gymnax 1.0's
    `step` returns six values, so the `gymnax` name inside the module is replaced by one whose
    `make` returns the env with a five-value `step` (`_FiveValueStep`: done = terminated |
    truncated, what pre-1.0 gymnax returned; gymnax 1.0's added info keys dropped)."""
    if not (directory / script).exists() or not (directory / "wrappers.py").exists():
        raise FileNotFoundError(
            f"PureJaxRL's {script} and wrappers.py are not in {directory}; "
            "benchmarks/README.md says how to fetch them"
        )
    import gymnax

    if importlib.util.find_spec("navix") is None:
        sys.modules.setdefault("navix", types.ModuleType("navix"))
    sys.path.insert(0, str(directory))
    try:
        name = f"purejaxrl_{Path(script).stem}"
        spec = importlib.util.spec_from_file_location(name, directory / script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(directory))

    def make(name, **kwargs):
        env, params = gymnax.make(name, **kwargs)
        return _FiveValueStep(env), params

    module.gymnax = types.SimpleNamespace(make=make)
    return module


def per_update_return(returns: np.ndarray, done: np.ndarray) -> np.ndarray:
    """`[N, U, T, E]` returns at episode ends -> `[N, U]` mean per update (NaN: no episode)."""
    count = done.sum(axis=(2, 3))
    total = (returns * done).sum(axis=(2, 3))
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


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
    train, returns = side_by_side.ours_vmapped(agent, hp, num_updates)
    pjr_config = purejaxrl_config(args.total_timesteps)
    pjr_train = jax.jit(jax.vmap(anchor.make_train(dict(pjr_config))))
    network = anchor.ActorCritic(env.action_space(env_params).n, activation="tanh")

    def greedy(params, key, obs):
        return network.apply(params, obs)[0].mode()

    rows = []
    for n in args.seeds:
        keys, key_eval = side_by_side.keys_for(args.seed, n)
        pjr_keys = jax.random.key_data(keys)  # PureJaxRL uses raw uint32 keys
        calls = {
            "ours": functools.partial(train, keys),
            "purejaxrl": functools.partial(pjr_train, pjr_keys),
        }
        sides, outs = side_by_side.take_turns(calls, args.repeats, f"cartpole n={n}")
        sides["ours"].update(returns(outs["ours"], key_eval, args.eval_episodes))
        info = outs["purejaxrl"]["metrics"]
        sides["purejaxrl"]["train_returns"] = per_update_return(
            np.asarray(info["returned_episode_returns"]), np.asarray(info["returned_episode"])
        )
        params = outs["purejaxrl"]["runner_state"][0].params
        sides["purejaxrl"]["eval_returns"] = side_by_side.evaluate_params(
            env, env_params, greedy, params, key_eval, args.eval_episodes
        )
        side_by_side.summarise_sides(sides, n, steps_per_update, num_updates, args.threshold)
        rows.append(
            {
                "env": "cartpole / gymnax CartPole-v1",
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                **sides,
                "ours_over_purejaxrl": side_by_side.ratios(sides["ours"], sides["purejaxrl"]),
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
    import flax.linen as nn
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
    env, env_params, brax_env = side_by_side.brax_pair(args.brax_env, args.brax_backend)
    agent = ppo.make(config, env, env_params)
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
        **side_by_side.brax_train_extras(args.brax_env),
    )
    train_fn = functools.partial(brax_ppo.train, brax_env, **brax_kwargs)

    def describe(run: dict) -> str:
        return f"{run['wall']:.1f}s (compile-free estimate {run['steady']:.1f}s)"

    def per_run(runs: list[dict]) -> dict:
        return {
            "per_run_wall_s": [r["wall"] for r in runs],
            "per_run_excl_compile_s": [r["steady"] for r in runs],
        }

    row = {
        "env": side_by_side.env_label(args.brax_env, args.brax_backend),
        "brax_train_kwargs": side_by_side.brax_kwargs_record(brax_kwargs),
    }
    one_run = functools.partial(side_by_side.brax_run, train_fn, epochs=args.brax_epochs)
    return side_by_side.beside_brax(
        args, agent, hp, (env, env_params), one_run, describe, per_run, row
    )


# ---------------------------------------------------------------------------------- Ant threshold
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


# brax.training's published Ant PPO networks and hyperparameters, in our config's and hparams' terms
# (benchmarks/scaling_device.py trains the same).
BRAX_ANT_NETWORKS = {
    "hidden_sizes": (32,) * 4,
    "critic_hidden_sizes": (256,) * 5,
    "activation": "silu",
    "anneal_lr": False,
    "clip_value_loss": False,
    "normalize_observations": True,
}


def brax_ant_hparams() -> ppo.PPOHparams:
    return ppo.PPOHparams(
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


def bench_ant(args: Args) -> list[dict]:
    from brax.training.agents.ppo import train as brax_ppo

    geometry = ant_geometry(args)
    config = ppo.PPOConfig(
        num_envs=args.ant_num_envs,
        num_steps=args.ant_num_steps,
        num_minibatches=args.ant_num_minibatches,
        update_epochs=args.ant_update_epochs,
        total_timesteps=geometry["num_timesteps"],
        distribution=args.ant_distribution,
        reset_slots=args.ant_reset_slots,
        **BRAX_ANT_NETWORKS,
    )
    hp = brax_ant_hparams()
    env, env_params, brax_env = side_by_side.brax_pair(
        args.ant_env, args.ant_backend, args.ant_episode_length
    )
    agent = ppo.make(config, env, env_params)
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
    return side_by_side.curve_rows(
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


# ------------------------------------------------------------------------------------------- report
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
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    cartpole = bench_cartpole(args) if args.cartpole and args.seeds else []
    brax_rows = bench_brax(args) if args.brax and args.brax_seeds else []
    ant = bench_ant(args) if args.ant_seeds else []
    parts = {"cartpole": cartpole, "brax": brax_rows, "ant": ant}
    result = side_by_side.write_result(args, machine, anchor_info(args), start, parts)

    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each part that ran (CartPole beside PureJaxRL, the Brax
    environments and Ant beside brax.training), from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the PPO pages)."""
    args, cartpole, brax_rows, ant = (
        result["args"],
        result["cartpole"],
        result["brax"],
        result["ant"],
    )
    tables = []
    if cartpole:
        title = (
            f"CartPole-v1, PureJaxRL's configuration ({cartpole[0]['env_steps_per_seed']:,} env "
            "steps per seed; N seeds vmapped on both sides)"
        )
        table = side_by_side.comparison_table(cartpole, "purejaxrl", "PureJaxRL", args["threshold"])
        tables.append((title, *table))
    if brax_rows:
        tables.append(side_by_side.brax_table(brax_rows))
    if ant:
        title = (
            f"brax/{args['ant_env']} ({args['ant_backend']}), PPO at brax's published Ant "
            f"configuration: wall time to an evaluation return of {args['ant_threshold']:g} "
            f"(compilation and evaluations included), at most {args['ant_max_seconds']:g} s per "
            "side; ours: N seeds vmapped, brax.training: N runs in sequence"
        )
        tables.append(
            (title, *side_by_side.curve_table(ant, "brax.training", args["ant_threshold"]))
        )
    return tables


if __name__ == "__main__":
    main(tyro.cli(Args))
