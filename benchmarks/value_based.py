"""Value-based agents side by side: our DQN and PQN beside rejax's and purejaxql's, in one run.

1. DQN: our `dqn` at its defaults (CleanRL's `dqn_jax.py` CartPole settings, double-Q) on our
   `cartpole`, beside rejax 0.1.3 `rejax.DQN` on gymnax's CartPole-v1 with the same geometry.
   Both sides train N seeds in one vmapped call (N=1 too). Geometry, ours -> rejax: num_envs ->
   num_envs (10); buffer_size -> buffer_size; learning_starts -> fill_buffer; batch_size ->
   batch_size; gradient_steps -> num_epochs (per step of all envs); total_timesteps;
   hidden_sizes -> the Q network's `hidden_layer_sizes` (set by `module.clone`: rejax 0.1.3 fixes
   (64, 64) in `create_agent`), relu on both; learning_rate; gamma; target_update_period (in
   gradient steps) x num_envs / gradient_steps -> target_update_freq (env steps), tau = 1 ->
   polyak 0 (a copy); start_e, end_e, exploration_fraction -> eps_start, eps_end,
   exploration_fraction; double -> ddqn; max_grad_norm -> max_grad_norm (ours 0, no clipping:
   rejax's inf). Both Q networks' kernels start lecun-normal (ours `init`, flax's default).
2. PQN: our `pqn` at its defaults (purejaxql's `pqn_cartpole.yaml`) beside `rejax.PQN` with the
   same geometry: num_envs, num_steps, num_minibatches, update_epochs -> num_epochs,
   learning_rate, gamma, q_lambda -> td_lambda, epsilon's schedule, max_grad_norm, hidden_sizes
   (`module.clone`; rejax's LayerNorm-and-relu activation kept). rejax has no reward scale and no
   learning-rate decay: ours runs here with `reward_scale=1` and `anneal_lr=False` so that both
   learn the same targets at the same step size.

Differences that remain (rejax's code fixes them): rejax's `done` (terminated | truncated) ends the
bootstrap at CartPole's 500-step limit (ours bootstraps a truncation from its true last
observation); rejax clips gradients element-wise (`optax.clip`), ours by global norm (where a
part clips: PQN, and DQN on MinAtar); rejax acts with its network (epsilon-greedy) as soon as
the buffer is filled and starts learning one step later; PQN's and the MinAtar DQN's kernels
(rejax: lecun-normal; ours: orthogonal); rejax's PQN bootstraps the
rollout's last step from `max Q(last_obs)` with `last_done` (ours: from the true next observation
of every step). The env-side shim and the episode-statistics callback are `benchmarks/
off_policy.py`'s (`RejaxEnv`, `episode_stats_callback`, `rejax_curve`); timing, evaluation,
tables and JSON are `benchmarks/side_by_side.py`'s. Readings: docs/benchmarks/value_based.md.

    python benchmarks/value_based.py                       # defaults, on a CPU
    python benchmarks/value_based.py --seeds 1 8 64        # on a GPU
    python benchmarks/value_based.py --algos pqn --seeds 1 # PQN only
    python benchmarks/value_based.py --algos pqn_minatar pqn_minatar_mlp dqn_minatar

3. PQN on a MinAtar game (`--game`, Breakout) at purejaxql's MinAtar configuration, at equal env
   steps (`--minatar-timesteps`; purejaxql's own runs are 10,000,000, a GPU's), in two parts:
   - `pqn_minatar`: ours beside purejaxql's `pqn_minatar.py` (its README's MinAtar command),
     both convolutional but not the same size: purejaxql's CNN is a 3 x 3 VALID convolution of
     16, LayerNorm, relu, a dense 128 (from 8 x 8 x 16), LayerNorm, relu, its input divided by
     255; ours the MinAtar torso (the convolution with SAME padding, no LayerNorm, a dense 128
     from 10 x 10 x 16) and one hidden layer of 128 with LayerNorm (the tuned entry's).
   - `pqn_minatar_mlp`: ours beside rejax 0.1.3's PQN, which has no convolutional Q network:
     the same network on both sides, purejaxql's for flattened observations (`pqn_gymnax.py`:
     2 x 128, LayerNorm and relu after each layer).
   Every number comes from purejaxql's `config/alg/pqn_minatar.yaml`, read from the fetched
   copy: NUM_ENVS, NUM_STEPS, NUM_MINIBATCHES, NUM_EPOCHS -> update_epochs / num_epochs, LR,
   LR_LINEAR_DECAY -> anneal_lr (rejax has no decay), GAMMA, LAMBDA -> q_lambda / td_lambda,
   EPS_START / EPS_FINISH / EPS_DECAY -> start_e / end_e / exploration_fraction, MAX_GRAD_NORM;
   TOTAL_TIMESTEPS and TOTAL_TIMESTEPS_DECAY are both the benchmark's budget (epsilon and the
   learning rate decay over the run, as in purejaxql's full runs). Optimisers: purejaxql RAdam,
   rejax and ours Adam; rejax clips gradients element-wise. purejaxql's and rejax's `done` ends
   the bootstrap at MinAtar's time limit too. purejaxql's module is imported unmodified: hydra,
   omegaconf and wandb are stub modules where not installed (only its `__main__` uses them), and
   its `LogWrapper` name is replaced by gymnax's own LogWrapper behind the five-value step it was
   written for (`PureJaxQLLog`), which adds each step's finished-episode return to `info` so that
   its per-update curve means what ours and rejax's mean (the episodes that ended in the update).
4. `dqn_minatar`: DQN on the same game, ours beside rejax's DQN with the same geometry
   (`dqn_minatar_geometry`: the MinAtar paper's DQN scaled to a CPU's budget,
   `--dqn-minatar-timesteps`), both with the 2 x 128 MLP of part 3 (rejax's only Q network).

purejaxql is run from the git-ignored `benchmarks/_anchors/purejaxql` (benchmarks/README.md says
how to fetch it; `--purejaxql-dir` points at another copy); the JSON records its files' SHA-256.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import side_by_side
import tyro
from off_policy import RejaxEnv, episode_stats_callback, rejax_curve
from ppo import _FiveValueStep
from report import check_args

from rlsuite import envs
from rlsuite.loop.agent import config_dict

ALGOS = ("dqn", "pqn", "pqn_minatar", "pqn_minatar_mlp", "dqn_minatar")
MINATAR_MLP = (128, 128)  # purejaxql's pqn_gymnax.py network for flattened observations
GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")
PUREJAXQL_COMMIT = "47af6d7b35c89ddfe633aaf7341bdb8964cb7cce"
PUREJAXQL_FILES = ("purejaxql/pqn_minatar.py", "purejaxql/config/alg/pqn_minatar.yaml")


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    """Flags of the value-based benchmark."""

    algos: list[str] = dataclasses.field(default_factory=lambda: list(ALGOS))
    """Parts to run: dqn and pqn (CartPole); pqn_minatar, pqn_minatar_mlp, dqn_minatar (--game)."""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of vmapped seeds (every side vmaps them)."""
    dqn_timesteps: int = 200_000
    """DQN's env steps per seed on CartPole (its schedule's fraction is of these)."""
    pqn_timesteps: int = 200_000
    """PQN's env steps per seed on CartPole."""
    threshold: float = 475.0
    """CartPole return threshold for the time-to-threshold columns."""
    game: str = "Breakout"
    """MinAtar game of the MinAtar parts (gymnax's <game>-MinAtar)."""
    minatar_timesteps: int = 500_000
    """PQN's env steps per seed on MinAtar (purejaxql's own runs: 10,000,000)."""
    dqn_minatar_timesteps: int = 200_000
    """DQN's env steps per seed on MinAtar."""
    purejaxql_dir: Path = side_by_side.ROOT / "benchmarks/_anchors/purejaxql"
    """A copy of purejaxql's repository (benchmarks/README.md says how to fetch it)."""
    repeats: int = 1
    """Compile-free timed calls of each side after the first; the best is kept."""
    out: Path = Path("benchmarks/results/value_based.json")
    """Where the whole run's JSON goes."""


@dataclasses.dataclass
class Anchor:
    """One implementation beside ours: `train(raw_keys [N, 2] uint32) -> output`, `curve(output)
    -> [N, U]` mean return of the training episodes that ended in each update (NaN: none),
    `params(output)` the N trained parameter sets stacked, `act(params, key, obs_batch)` one
    set's greedy action, and its version for the JSON. A policy with memory gives `initial(
    num_envs) -> carry` too, and its `act(params, key, obs_batch, carry) -> (action, carry)`
    (`side_by_side.evaluate_params`)."""

    label: str
    train: Callable
    curve: Callable
    params: Callable
    act: Callable
    version: str
    initial: Callable | None = None


@dataclasses.dataclass
class Part:
    """Ours (agent, hparams) on `env`, the anchors beside it, the mapping of their settings, the
    threshold of the time-to-threshold columns (None: none) and a title."""

    name: str
    env: Any
    env_params: Any
    agent: Any
    hp: Any
    anchors: dict[str, Anchor]
    mapping: dict
    threshold: float | None


# ------------------------------------------------------------------------------------------- rejax
def rejax_anchor(anchor, agent) -> Anchor:
    """rejax's `algo.train` vmapped over raw keys, its curve from `episode_stats_callback` (a
    point per rejax iteration, which must be one update of ours) and its Q network's greedy
    action (rejax's MLP flattens all but axis 0)."""
    if anchor.eval_freq != agent.env_steps_per_update:
        raise ValueError(
            f"rejax's iteration ({anchor.eval_freq} env steps) must be one update of ours "
            f"({agent.env_steps_per_update})"
        )

    def act(params, key, obs):
        q = anchor.agent.apply(params, obs.reshape(obs.shape[0], -1))
        return jnp.argmax(q, axis=-1)

    return Anchor(
        label="rejax",
        train=jax.jit(jax.vmap(anchor.train)),
        curve=lambda out: rejax_curve(out[1], 1),
        params=lambda out: out[0].q_ts.params,
        act=act,
        version=importlib.metadata.version("rejax"),
    )


def rejax_made(algo_class, gym_env, gym_params, kwargs: dict, hidden_sizes) -> Any:
    """`algo_class.create(...)` on `gym_env` behind `RejaxEnv`, with its Q network's hidden
    layers set by `module.clone` (rejax 0.1.3 fixes (64, 64) in `create_agent`) and the episode-
    statistics callback."""
    anchor = algo_class.create(env=RejaxEnv(gym_env), env_params=gym_params, **kwargs)
    anchor = anchor.replace(
        agent=anchor.agent.clone(hidden_layer_sizes=tuple(hidden_sizes)),
        eval_callback=episode_stats_callback,
    )
    kwargs["hidden_layer_sizes (module.clone)"] = list(hidden_sizes)
    return anchor


def _mapping(config, hp, kwargs) -> dict:
    return {
        "ours_config": config_dict(config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "rejax_create_kwargs": kwargs,
        "rejax_eval_callback": "episode statistics only (benchmark)",
    }


def rejax_part(
    name: str, env, agent, hp, algo_class, gym_name: str, kwargs: dict, hidden_sizes, threshold
) -> Part:
    """A part of ours beside rejax's `algo_class` on gymnax's `gym_name`, created with `kwargs`
    and Q network layers `hidden_sizes`, every side scored on `env` (our `(env, env_params)`);
    `threshold`: None for no time-to-threshold columns."""
    import gymnax

    anchor = rejax_made(algo_class, *gymnax.make(gym_name), kwargs, hidden_sizes)
    anchors = {"rejax": rejax_anchor(anchor, agent)}
    mapping = _mapping(agent.config, hp, kwargs)
    return Part(name, *env, agent, hp, anchors, mapping, threshold)


def dqn_rejax_kwargs(config, hp) -> dict:
    """rejax DQN's `create` arguments for our DQN's geometry (module docstring, part 1)."""
    return dict(
        num_envs=config.num_envs,
        buffer_size=config.buffer_size,
        fill_buffer=config.learning_starts,
        batch_size=config.batch_size,
        num_epochs=config.gradient_steps,
        total_timesteps=config.total_timesteps,
        learning_rate=float(hp.learning_rate),
        gamma=float(hp.gamma),
        target_update_freq=config.target_update_period * config.num_envs // config.gradient_steps,
        polyak=1.0 - float(hp.tau),
        eps_start=float(hp.start_e),
        eps_end=float(hp.end_e),
        exploration_fraction=float(hp.exploration_fraction),
        ddqn=config.double,
        max_grad_norm=float(hp.max_grad_norm) or float("inf"),  # ours 0: no clipping
        agent_kwargs={"activation": "relu"},
        eval_freq=config.num_envs,
        skip_initial_evaluation=True,
    )


def pqn_rejax_kwargs(config, hp) -> dict:
    """rejax PQN's `create` arguments for our PQN's geometry (module docstring, part 2)."""
    return dict(
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        num_minibatches=config.num_minibatches,
        num_epochs=config.update_epochs,
        total_timesteps=config.total_timesteps,
        learning_rate=float(hp.learning_rate),
        gamma=float(hp.gamma),
        td_lambda=float(hp.q_lambda),
        eps_start=float(hp.start_e),
        eps_end=float(hp.end_e),
        exploration_fraction=float(hp.exploration_fraction),
        max_grad_norm=float(hp.max_grad_norm),
        eval_freq=config.num_envs * config.num_steps,
        skip_initial_evaluation=True,
    )


# ---------------------------------------------------------------------------------------- CartPole
def dqn_part(args: Args) -> Part:
    """Ours and rejax's DQN on CartPole."""
    import rejax

    from rlsuite.agents import dqn

    config = dqn.DQNConfig(total_timesteps=args.dqn_timesteps)
    env = envs.make("cartpole")
    agent = dqn.make(config, *env)
    hp = agent.default_hparams
    kwargs = dqn_rejax_kwargs(config, hp)
    name = "cartpole / gymnax CartPole-v1, DQN"
    return rejax_part(
        name, env, agent, hp, rejax.DQN, "CartPole-v1", kwargs, config.hidden_sizes, args.threshold
    )


def pqn_part(args: Args) -> Part:
    """Ours and rejax's PQN on CartPole."""
    import rejax

    from rlsuite.agents import pqn

    config = pqn.PQNConfig(total_timesteps=args.pqn_timesteps, anneal_lr=False)
    env = envs.make("cartpole")
    agent = pqn.make(config, *env)
    hp = agent.default_hparams.replace(reward_scale=1.0)
    kwargs = pqn_rejax_kwargs(config, hp)
    name = "cartpole / gymnax CartPole-v1, PQN"
    return rejax_part(
        name, env, agent, hp, rejax.PQN, "CartPole-v1", kwargs, config.hidden_sizes, args.threshold
    )


# ----------------------------------------------------------------------------------------- MinAtar
class PureJaxQLLog(_FiveValueStep):
    """gymnax's `LogWrapper` behind the five-value `step` purejaxql was written for, with
    `info["ended_return"]`: the return of the episode that ended at this step (0 elsewhere).
    purejaxql averages every info key over the rollout, so `ended_return / returned_episode` of
    its metrics is the mean return of the episodes that ended in the update."""

    def __init__(self, env):
        from gymnax.wrappers.purerl import LogWrapper

        super().__init__(LogWrapper(env))

    def step(self, key, state, action, params=None):
        obs, state, reward, done, info = super().step(key, state, action, params)
        ended = info["returned_episode"]
        info["ended_return"] = jnp.where(ended, info["returned_episode_returns"], 0.0)
        return obs, state, reward, done, info


def _stub_module(name: str, **attributes) -> None:
    """A module `name` with `attributes`, registered where the real one is not installed."""
    if name in sys.modules or importlib.util.find_spec(name) is not None:
        return
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module


def load_purejaxql(directory: Path, files: tuple[str, ...] = PUREJAXQL_FILES) -> types.ModuleType:
    """purejaxql's script `files[0]` (`pqn_minatar.py`) from `directory`, unmodified (module
    docstring, part 3), once every one of `files` (the script and its yaml) is there: `hydra`,
    `omegaconf` and `wandb` are stub modules where they are not installed, and its `LogWrapper`
    name is `PureJaxQLLog`."""
    missing = [f for f in files if not (directory / f).exists()]
    if missing:
        raise FileNotFoundError(
            f"purejaxql's {', '.join(missing)} not in {directory}; benchmarks/README.md says how "
            "to fetch it (or pass --purejaxql-dir)"
        )
    _stub_module("hydra", main=lambda **_: lambda fn: fn)
    _stub_module("omegaconf", OmegaConf=None)
    _stub_module("wandb")
    path = directory / files[0]
    spec = importlib.util.spec_from_file_location(f"purejaxql_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.LogWrapper = PureJaxQLLog
    return module


def purejaxql_yaml(directory: Path, file: str, timesteps: int) -> dict:
    """A purejaxql configuration (the yaml `file` of `directory`, and its top-level defaults) at
    the benchmark's budget of `timesteps` env steps per seed (over which epsilon and the learning
    rate decay, as in purejaxql's full runs), without in-training tests or wandb."""
    import yaml

    config = yaml.safe_load((directory / file).read_text())
    config.update(
        TOTAL_TIMESTEPS=timesteps,
        TOTAL_TIMESTEPS_DECAY=timesteps,
        TEST_DURING_TRAINING=False,
        WANDB_MODE="disabled",
        NUM_SEEDS=1,
        SEED=0,
        HYP_TUNE=False,
        ENTITY="",
        PROJECT="",
        SAVE_PATH=None,
    )
    return config


def purejaxql_config(args: Args) -> dict:
    """purejaxql's MinAtar configuration at the benchmark's budget, on `--game`."""
    config = purejaxql_yaml(args.purejaxql_dir, PUREJAXQL_FILES[1], args.minatar_timesteps)
    config["ENV_NAME"] = f"{args.game}-MinAtar"
    return config


def purejaxql_curve(out) -> np.ndarray:
    """`[N, U]` mean return of the episodes that ended in each update of purejaxql's vmapped
    `train` output (NaN: none), from `PureJaxQLLog`'s info averaged over the rollout."""
    metrics = out["metrics"]
    ended = np.asarray(metrics["returned_episode"], np.float64)
    total = np.asarray(metrics["ended_return"], np.float64)
    return np.where(ended > 0, total / np.maximum(ended, 1e-12), np.nan)


def purejaxql_variables(out) -> dict:
    """The N trained variable sets (`params`, `batch_stats`) of purejaxql's `train` output."""
    state = out["runner_state"][0]
    return {"params": state.params, "batch_stats": state.batch_stats}


def purejaxql_version(directory: Path, files: tuple[str, ...]) -> str:
    """purejaxql's commit and the SHA-256 of the `files` of `directory` that ran."""
    hashes = {f: hashlib.sha256((directory / f).read_bytes()).hexdigest() for f in files}
    return f"{PUREJAXQL_COMMIT} (sha256 {hashes})"


def purejaxql_anchor(args: Args, config: dict) -> Anchor:
    """purejaxql's `make_train(config)` vmapped over raw keys, as its `single_run` does."""
    module = load_purejaxql(args.purejaxql_dir)
    env, env_params = envs.make(f"gymnax/{args.game}-MinAtar")
    network = module.QNetwork(
        action_dim=env.action_space(env_params).n,
        norm_type=config["NORM_TYPE"],
        norm_input=config.get("NORM_INPUT", False),
    )

    def act(variables, key, obs):
        return jnp.argmax(network.apply(variables, obs, train=False), axis=-1)

    return Anchor(
        label="purejaxql",
        train=jax.jit(jax.vmap(module.make_train(dict(config)))),
        curve=purejaxql_curve,
        params=purejaxql_variables,
        act=act,
        version=purejaxql_version(args.purejaxql_dir, PUREJAXQL_FILES),
    )


def pqn_purejaxql_made(pjq: dict, env, env_params, **network):
    """Our PQN on `(env, env_params)` at the purejaxql configuration `pjq` (its geometry,
    budget, schedules and step sizes: the module docstring's mapping, part 3), with the
    `PQNConfig` fields of its network in `network`: `(agent, hparams)`."""
    from rlsuite.agents import pqn

    config = pqn.PQNConfig(
        num_envs=pjq["NUM_ENVS"],
        num_steps=pjq["NUM_STEPS"],
        num_minibatches=pjq["NUM_MINIBATCHES"],
        update_epochs=pjq["NUM_EPOCHS"],
        total_timesteps=pjq["TOTAL_TIMESTEPS"],
        anneal_lr=bool(pjq["LR_LINEAR_DECAY"]),
        **network,
    )
    agent = pqn.make(config, env, env_params)
    hp = agent.default_hparams.replace(
        learning_rate=pjq["LR"],
        gamma=pjq["GAMMA"],
        q_lambda=pjq["LAMBDA"],
        start_e=pjq["EPS_START"],
        end_e=pjq["EPS_FINISH"],
        exploration_fraction=pjq["EPS_DECAY"],
        max_grad_norm=pjq["MAX_GRAD_NORM"],
        reward_scale=pjq.get("REW_SCALE", 1.0),
    )
    return agent, hp


def pqn_minatar_ours(args: Args, torso: str, hidden_sizes: tuple[int, ...]):
    """Our PQN on `--game` at purejaxql's MinAtar configuration with the given network:
    `(env, env_params, agent, hparams, purejaxql's config)`."""
    pjq = purejaxql_config(args)
    env, env_params = envs.make(f"gymnax/{args.game}-MinAtar")
    agent, hp = pqn_purejaxql_made(pjq, env, env_params, hidden_sizes=hidden_sizes, torso=torso)
    return env, env_params, agent, hp, pjq


def pqn_minatar_part(args: Args) -> Part:
    """Ours (the MinAtar torso) and purejaxql's PQN (its CNN) on `--game`."""
    env, env_params, agent, hp, pjq = pqn_minatar_ours(args, "minatar", (128,))
    mapping = {
        "ours_config": config_dict(agent.config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "purejaxql_config": pjq,
    }
    anchors = {"purejaxql": purejaxql_anchor(args, pjq)}
    name = f"gymnax/{args.game}-MinAtar, PQN (CNN)"
    return Part(name, env, env_params, agent, hp, anchors, mapping, None)


def pqn_minatar_mlp_part(args: Args) -> Part:
    """Ours and rejax's PQN on `--game`, both with purejaxql's flat-input MLP of 2 x 128."""
    import rejax

    env, env_params, agent, hp, pjq = pqn_minatar_ours(args, "mlp", MINATAR_MLP)
    kwargs = pqn_rejax_kwargs(agent.config, hp)
    name = f"gymnax/{args.game}-MinAtar, PQN (MLP)"
    env = (env, env_params)
    return rejax_part(name, env, agent, hp, rejax.PQN, pjq["ENV_NAME"], kwargs, MINATAR_MLP, None)


def dqn_minatar_geometry(args: Args) -> tuple[dict, dict]:
    """DQN's MinAtar settings (Young and Tian 2019's DQN: batch 32, target copy every 1,000
    steps, epsilon 1 -> 0.1, lr 2.5e-4, 5,000 random steps) at the budget: 8 envs (one gradient
    step of 32 per step of all 8, the paper's one per env step scaled by the envs), a replay of
    100,000, epsilon over the first 10% of the run."""
    config = dict(
        num_envs=8,
        buffer_size=100_000,
        batch_size=32,
        learning_starts=5_000,
        total_timesteps=args.dqn_minatar_timesteps,
        target_update_period=125,  # gradient steps: 1,000 env steps of 8 envs
        init="orthogonal",  # the tuned entry's, as are the gradients clipped at 10
    )
    hparams = dict(learning_rate=2.5e-4, end_e=0.1, exploration_fraction=0.1, max_grad_norm=10.0)
    config.update(torso="mlp", hidden_sizes=MINATAR_MLP)
    return config, hparams


def dqn_minatar_part(args: Args) -> Part:
    """Ours and rejax's DQN on `--game`."""
    import rejax

    from rlsuite.agents import dqn

    config_kwargs, hparams = dqn_minatar_geometry(args)
    config = dqn.DQNConfig(**config_kwargs)
    env = envs.make(f"gymnax/{args.game}-MinAtar")
    agent = dqn.make(config, *env)
    hp = agent.default_hparams.replace(**hparams)
    kwargs = dqn_rejax_kwargs(config, hp)
    name = f"gymnax/{args.game}-MinAtar, DQN (MLP)"
    game = f"{args.game}-MinAtar"
    return rejax_part(name, env, agent, hp, rejax.DQN, game, kwargs, MINATAR_MLP, None)


PARTS = {
    "dqn": dqn_part,
    "pqn": pqn_part,
    "pqn_minatar": pqn_minatar_part,
    "pqn_minatar_mlp": pqn_minatar_mlp_part,
    "dqn_minatar": dqn_minatar_part,
}


# ------------------------------------------------------------------------------------------- bench
def bench(args: Args, part: Part, save: Callable[[list[dict]], None]) -> list[dict]:
    """The part's rows, one per seed count, each passed to `save` (with those before it) as it
    is done."""
    agent, hp = part.agent, part.hp
    steps_per_update = agent.env_steps_per_update
    num_updates = agent.config.num_updates
    train, returns = side_by_side.ours_vmapped(agent, hp, num_updates)
    rows = []
    for n in args.seeds:
        keys, key_eval = side_by_side.keys_for(args.seed, n)
        raw = jax.random.key_data(keys)
        calls = {"ours": functools.partial(train, keys)}
        calls |= {name: functools.partial(a.train, raw) for name, a in part.anchors.items()}
        sides, outs = side_by_side.take_turns(calls, args.repeats, f"{part.name} n={n}")
        sides["ours"].update(returns(outs["ours"], key_eval, args.eval_episodes))
        for name, anchor in part.anchors.items():
            out = outs[name]
            sides[name]["train_returns"] = anchor.curve(out)
            sides[name]["eval_returns"] = side_by_side.evaluate_params(
                part.env,
                part.env_params,
                anchor.act,
                anchor.params(out),
                key_eval,
                args.eval_episodes,
                anchor.initial,
            )
        for side in sides.values():
            side_by_side.summarise(side, n, steps_per_update, num_updates)
            if part.threshold is not None:
                side_by_side.time_to_threshold(side, part.threshold, steps_per_update, num_updates)
        ratios = {
            f"ours_over_{name}": side_by_side.ratios(sides["ours"], sides[name])
            for name in part.anchors
        }
        rows.append(
            {
                "env": part.name,
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                "mapping": part.mapping,
                "anchors": list(part.anchors),
                "threshold": part.threshold,
                **sides,
                **ratios,
            }
        )
        save(rows)
    return rows


def main(args: Args) -> dict:
    check_args(args, choices={"algos": ALGOS, "game": GAMES})
    parts = {algo: PARTS[algo](args) for algo in args.algos}  # checked before the first runs
    return run(args, parts)


def run(args, parts: dict[str, Part]) -> dict:
    """Every part's rows (`bench`), the JSON at `args.out` rewritten after each row (marked
    partial) and at the end, the anchors' versions recorded and the tables shown."""
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    rows = {}

    def save(algo: str, part_rows: list[dict]) -> None:  # a run killed at its limit keeps these
        done = {"partial": True, "args": side_by_side.args_dict(args), **rows, algo: part_rows}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(done, indent=2, default=float))

    for algo, part in parts.items():
        rows[algo] = bench(args, part, functools.partial(save, algo))
    anchors = {
        name: anchor.version for part in parts.values() for name, anchor in part.anchors.items()
    }
    result = side_by_side.write_result(args, machine, anchors, start, rows)
    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each part beside each of its anchors, from the JSON `main`
    writes (`benchmarks/tables.py` renders it on the DQN and PQN pages)."""
    tables = []
    for algo in result["args"]["algos"]:
        rows = result[algo]
        steps = rows[0]["env_steps_per_seed"]
        for name in rows[0]["anchors"]:
            title = (
                f"{rows[0]['env']}, {steps:,} env steps per seed; ours vs {name}, N seeds vmapped "
                "on every side"
            )
            header, body = side_by_side.comparison_table(rows, name, name, rows[0]["threshold"])
            tables.append((title, header, [[c.replace("nan", "-") for c in r] for r in body]))
    return tables


if __name__ == "__main__":
    main(tyro.cli(Args))
