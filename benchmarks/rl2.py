"""RL^2's parts side by side: our recurrent PPO beside PureJaxRL's `ppo_rnn.py` on CartPole, and
our A2C on the two-arm bandit beside gymnax's meta-A2C notebook recipe.

Two comparisons, in one run, on one machine:

1. CartPole-v1 at the configuration of PureJaxRL's `purejaxrl/ppo_rnn.py` `__main__` (GRU PPO: LR
   2.5e-4 annealed, 4 envs, 128 steps, 5e5 timesteps, 4 epochs, 4 minibatches of whole env
   sequences, gamma 0.99, lambda 0.95, clip 0.2 (policy and value), entropy 0.01, value 0.5, grad
   norm 0.5; network Dense 128 relu -> GRU 128 -> actor and critic heads of Dense 128 relu). Its
   env is gymnax's CartPole-v1, fully observed: the script flattens the observation and changes
   nothing else (no velocity masking). Ours: `ppo.make(PPOConfig(recurrent="gru",
   recurrent_size=128, hidden_sizes=(128,), head_sizes=(128,), activation="relu", num_envs=4,
   num_steps=128, num_minibatches=4, update_epochs=4, total_timesteps=...),
   *envs.make("cartpole"))` with the default `PPOHparams()` (PureJaxRL's values), trained as
   jitted `driver.init_batch` + `driver.run_batch`. PureJaxRL: `jax.jit(jax.vmap(make_train(
   config)))(keys)`. Both train `--total-timesteps` per seed (65,536 by default, to fit this CPU
   budget; the published 500,000 with `--total-timesteps 500000`). For each N in `--seeds`, each
   side is called 1 + `--repeats` times with the same N keys, the sides taking turns
   (`side_by_side.take_turns`): the first call includes compilation, the best later one does
   not. PureJaxRL initialises its network inside the vmapped `train`, i.e. with a batched QR
   (orthogonal initialisation), where XLA's CPU thread pool can deadlock (jaxlib 0.10.2 on 2
   cores; here its 8-seed call hung in `jax::OrthogonalQr`). By default its orthogonal
   initialisers are therefore `mapped_over_batch` (one QR per seed; the same initial values);
   `--no-anchor-mapped-init` runs it as published. Ours maps its
   inits over seeds with `lax.map` (`driver.init_batch`). Every call also runs under a hard time
   limit (`--call-timeout`, as pytest-timeout's thread method): past it the stacks are dumped
   and the process exits, keeping the JSON written so far (the CartPole part runs last). Final
   returns: deterministic episodes through our evaluator on our CartPole, both sides, from the
   same keys (PureJaxRL's policy with its GRU carry, `recurrent_policy`).
   Differences that remain (PureJaxRL's code fixes them): its GAE ends at `done` (terminated or
   truncated: a time-limit end is treated as terminal), ours bootstraps a truncated step from
   V(next_obs) under the memory of that step; its head layers are initialised with orthogonal
   gain 2 (ours sqrt(2)); its GRU is flax's `GRUCell` built without a size (flax < 0.7), here
   the current cell of the carry's size (`load_ppo_rnn`).
2. gymnax's two-arm bandit (`BernoulliBandit-misc`: arms {p, 1 - p} in a random order, 100 pulls)
   with the recipe of gymnax's `examples/03_meta_a2c.ipynb`: an LSTM of 48 units, 64 trials of 100
   pulls per update, Adam (eps 1e-4) at 0.005, gamma 0.8, value weight 0.5, entropy weight 1.0
   multiplied by 0.999 after each update (floor 0.01), global-norm clip 5. The anchor is that
   recipe as the notebook trains it (`notebook_*` below: haiku's LSTM and linear heads, a Python
   loop of `jax.value_and_grad` of a jitted batch loss, optax steps and the entropy decay outside
   jit), written here for gymnax 1.0: gymnax 1.0's bandit no longer reports `info["regret"]`, so
   `WithRegret` adds the expected regret max(probs) - probs[action] (the definition of ours).
   Ours: `rl2.make(RL2Config(**tuned["config"]), *envs.make("meta/two_arm_bandit", p=p))` with
   `PPOHparams(**tuned["hparams"])`, the tuned entry `("rl2", "meta/two_arm_bandit")`, trained
   with `driver.init_batch` + `driver.run_batch` (N seeds vmapped), evaluated with
   `driver.evaluate_trials_batch` (`evaluate_trials(..., sum_info=("regret",))`). Both sides
   train `--bandit-updates` (2,000) updates; N anchor runs go one after another (the notebook's
   loop cannot vmap seeds). Regret per 100 pulls: `--bandit-eval-trials` trials per seed on each
   side's own environment (the anchor's observation is gymnax's [reward, one-hot action, time],
   ours RL2's [one-hot previous action, previous reward, previous done]), with sampled actions
   (the notebook's evaluation) and greedy ones. Wall time: ours, the first (compiling) call of
   the init and the ahead-of-time compilation of the training scan are the compilation, the
   compiled training run is the rest; the anchor, its whole loop, the first `ANCHOR_WARMUP`
   updates (tracing, compilation) counted as compilation with the others' rate.
   Differences the tuned entry leaves (ours is RL2Config's A2C, not a copy of the notebook):
   ours has a (64, 64) tanh MLP before the LSTM (the notebook feeds the LSTM directly),
   orthogonal initialisation (haiku's truncated normal), GAE with lambda 0.95 (the notebook:
   Monte-Carlo returns, lambda 1), advantages normalised per update, the value loss halved
   (0.5 (V - R)^2), Adam eps 1e-5, no time input. The notebook's value head gives `[T, 1]`
   values, so its advantages `returns - values` broadcast to `[T, T]`: its policy gradient's
   baseline is the trial's mean value prediction and every prediction regresses on every step's
   return (the recipe as published; kept).

Readings: docs/benchmarks/rl2.md. PureJaxRL is run from the git-ignored `benchmarks/_anchors/`
(benchmarks/README.md), never copied; the notebook's recipe needs dm-haiku (an anchor, not a
dependency of the library).

    python benchmarks/rl2.py                        # defaults, on a CPU (under 20 minutes)
    python benchmarks/rl2.py --no-cartpole --bandit-p 0.1 0.25 0.4 --bandit-seeds 4
    python benchmarks/rl2.py --no-bandit --total-timesteps 500000 --seeds 1 8 64   # a GPU
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import flax.linen as linen
import jax
import jax.numpy as jnp
import numpy as np
import side_by_side
import tyro
from ppo import _FiveValueStep, per_update_return
from report import check_args, fmt, progress

from rlsuite import envs
from rlsuite.agents import ppo, rl2
from rlsuite.app import tuned
from rlsuite.loop import driver
from rlsuite.loop.agent import config_dict
from rlsuite.loop.episodes import evaluate
from rlsuite.loop.rollout import RecurrentPolicy
from rlsuite.networks import mapped_over_batch

ROOT = Path(__file__).resolve().parent.parent
PUREJAXRL_COMMIT = "31756b197773a52db763fdbe6d635e4b46522a73"
ANCHOR_WARMUP = 2  # notebook updates counted as its compilation (tracing, first dispatches)


@dataclasses.dataclass
class Args:
    """Flags of the RL^2 benchmark."""

    cpu_devices: int | None = None
    """CPU cores made JAX devices before anything runs (`platform.use_cpu_cores`; None: every
    core, as `rlsuite train` does). Ours splits its seeds over them; PureJaxRL's
    `jit(vmap(train))` and the notebook run on one device. 1: every side on one device."""
    seed: int = 0
    """Base seed; each N gets its own keys (the same on both sides)."""
    cartpole: bool = True
    """Run the CartPole comparison with PureJaxRL's ppo_rnn.py."""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of vmapped seeds for the CartPole comparison (both sides vmap them)."""
    total_timesteps: int = 65_536
    """CartPole env steps per seed (PureJaxRL publishes 500,000; the default fits a 2-core CPU's
    budget)."""
    repeats: int = 1
    """Compile-free timed CartPole calls of each side after the first; the best is kept."""
    threshold: float = 475.0
    """CartPole return threshold for the time-to-threshold columns."""
    eval_episodes: int = 10
    """Deterministic CartPole evaluation episodes per seed (every side, our evaluator)."""
    anchor_mapped_init: bool = True
    """Run PureJaxRL's orthogonal initialisers once per seed under its vmap (`mapped_over_batch`:
    the same values); False: as published, whose vmapped init can deadlock on a CPU (it did
    here once in two tries at 8 seeds; the call then ends at --call-timeout)."""
    call_timeout: int = 1800
    """Hard limit in seconds on each CartPole call: past it the stacks are dumped and the
    process exits (a deadlocked XLA thread pool cannot be interrupted otherwise). The default
    leaves room for the default sizes on 2 CPU cores; raise it for longer runs."""
    purejaxrl_dir: Path = ROOT / "benchmarks/_anchors/purejaxrl"
    """Folder holding PureJaxRL's `ppo_rnn.py` and `wrappers.py` (commit PUREJAXRL_COMMIT)."""
    bandit: bool = True
    """Run the two-arm bandit comparison with the gymnax notebook's recipe."""
    bandit_p: list[float] = dataclasses.field(default_factory=lambda: [0.1])
    """Arm probability p of the bandit ({p, 1 - p}); one comparison per value."""
    bandit_seeds: int = 2
    """Seeds per p (ours vmapped, the notebook's runs in sequence)."""
    bandit_updates: int = 2_000
    """A2C updates per run (64 trials of 100 pulls each)."""
    bandit_eval_trials: int = 1_000
    """Evaluation trials per seed (each side on its own environment)."""
    out: Path = Path("benchmarks/results/rl2.json")
    """Where to write the JSON results."""
    markdown: bool = True
    """Also print the tables as Markdown (for its page, docs/benchmarks/)."""


# -------------------------------------------------------------------- anchor: PureJaxRL's GRU PPO
def mapped_orthogonal(scale=1.0, **kwargs) -> Callable:
    """`flax.linen.initializers.orthogonal`, `mapped_over_batch` (`rlsuite.networks`')."""
    return mapped_over_batch(linen.initializers.orthogonal(scale, **kwargs))


def old_gru_cell(recurrent_kernel_init: Callable) -> type:
    """flax < 0.7's `GRUCell` as `ppo_rnn.py` uses it: built without a size (`GRUCell()`; the
    carry's last axis gives it), with a static `initialize_carry(key, batch_dims, size)` (zeros).
    Current flax's cell of the carry's size takes the step (same gates, same initialisers;
    the recurrent one is `recurrent_kernel_init`). Named `GRUCell`, so that its parameters (and
    the keys flax derives from their names) do not depend on the initialiser."""

    class GRUCell(linen.Module):
        @linen.compact
        def __call__(self, carry, inputs):
            size = carry.shape[-1]
            cell = linen.GRUCell(size, recurrent_kernel_init=recurrent_kernel_init, name="cell")
            return cell(carry, inputs)

        @staticmethod
        def initialize_carry(key, batch_dims, size):
            return jnp.zeros((*batch_dims, size))

    return GRUCell


def load_ppo_rnn(directory: Path, map_init: bool = True) -> types.ModuleType:
    """Import PureJaxRL's `ppo_rnn.py` from `directory`, unmodified, under gymnax 1.0 and flax
    0.12: `wrappers.py`'s `navix` import gets a stub module where navix is missing (only its
    unused Navix wrapper needs it); the `gymnax` name inside the module makes envs whose `step`
    returns gymnax < 1.0's five values (`ppo._FiveValueStep`); the `nn` name is flax.linen with
    flax < 0.7's `GRUCell` (`old_gru_cell`). With `map_init`, the module's `orthogonal`
    and its GRU's recurrent initialiser are `mapped_over_batch` (same values; its vmapped init
    no longer deadlocks); without, it runs as published."""
    if not (directory / "ppo_rnn.py").exists() or not (directory / "wrappers.py").exists():
        raise FileNotFoundError(
            f"PureJaxRL's ppo_rnn.py and wrappers.py are not in {directory}; "
            "benchmarks/README.md says how to fetch them"
        )
    import gymnax

    if "navix" not in sys.modules and importlib.util.find_spec("navix") is None:
        sys.modules.setdefault("navix", types.ModuleType("navix"))
    sys.path.insert(0, str(directory))
    try:
        spec = importlib.util.spec_from_file_location("purejaxrl_ppo_rnn", directory / "ppo_rnn.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(directory))

    def make(name, **kwargs):
        env, params = gymnax.make(name, **kwargs)
        return _FiveValueStep(env), params

    module.gymnax = types.SimpleNamespace(make=make)
    cell = old_gru_cell(mapped_orthogonal() if map_init else linen.initializers.orthogonal())
    module.nn = types.SimpleNamespace(**{**vars(linen), "GRUCell": cell})
    if map_init:
        module.orthogonal = mapped_orthogonal
    return module


def ppo_rnn_config(total_timesteps: int) -> dict:
    """The configuration of PureJaxRL's `ppo_rnn.py` `__main__` (DEBUG off: no host callback;
    TOTAL_TIMESTEPS an int, as `lax.scan` needs its update count)."""
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
        "ENV_NAME": "CartPole-v1",
        "ANNEAL_LR": True,
        "DEBUG": False,
    }


def recurrent_policy(network, params, size: int) -> RecurrentPolicy:
    """PureJaxRL's `ActorCriticRNN` with `params` as our evaluator's greedy `RecurrentPolicy`
    (carry `[B, size]`, zeros at an episode's start; no reset input inside an episode)."""

    def apply(key, obs, carry):
        resets = jnp.zeros((1, obs.shape[0]), bool)
        carry, pi, _ = network.apply(params, carry, (obs[None], resets))
        return pi.mode()[0], {}, carry

    return RecurrentPolicy(apply, lambda num_envs: jnp.zeros((num_envs, size)))


def evaluate_recurrent(env, env_params, network, params, size: int, key, episodes: int):
    """`[N, episodes]` deterministic returns of N stacked parameter sets of `network`."""

    def one(params, key):
        policy = recurrent_policy(network, params, size)
        return evaluate(env, env_params, policy, key, episodes).returns

    keys = jax.random.split(key, jax.tree.leaves(params)[0].shape[0])
    return jax.jit(jax.vmap(one))(params, keys)


def bench_cartpole(args: Args, save: Callable[[str, list], None]) -> list[dict]:
    anchor = load_ppo_rnn(args.purejaxrl_dir, args.anchor_mapped_init)
    env, env_params = envs.make("cartpole")
    config = ppo.PPOConfig(
        num_envs=4,
        num_steps=128,
        num_minibatches=4,
        update_epochs=4,
        total_timesteps=args.total_timesteps,
        recurrent="gru",
        recurrent_size=128,
        hidden_sizes=(128,),
        head_sizes=(128,),
        activation="relu",
    )
    agent = ppo.make(config, env, env_params)
    hp = ppo.PPOHparams()
    steps_per_update, num_updates = agent.env_steps_per_update, config.num_updates
    train, returns = side_by_side.ours_vmapped(agent, hp, num_updates)
    pjr_train = jax.jit(jax.vmap(anchor.make_train(ppo_rnn_config(args.total_timesteps))))
    network = anchor.ActorCriticRNN(env.action_space(env_params).n, config={})

    rows = []
    for n in args.seeds:
        keys, key_eval = side_by_side.keys_for(args.seed, n)
        pjr_keys = jax.random.key_data(keys)  # PureJaxRL uses raw uint32 keys
        label = f"cartpole n={n}"
        calls = {
            "ours": side_by_side.call_with_timeout(
                functools.partial(train, keys), args.call_timeout
            ),
            "purejaxrl": side_by_side.call_with_timeout(
                functools.partial(pjr_train, pjr_keys), args.call_timeout
            ),
        }
        sides, outs = side_by_side.take_turns(calls, args.repeats, label)
        sides["ours"].update(returns(outs["ours"], key_eval, args.eval_episodes))
        info = outs["purejaxrl"]["metric"]
        sides["purejaxrl"]["train_returns"] = per_update_return(
            np.asarray(info["returned_episode_returns"]), np.asarray(info["returned_episode"])
        )
        params = outs["purejaxrl"]["runner_state"][0].params
        sides["purejaxrl"]["eval_returns"] = evaluate_recurrent(
            env, env_params, network, params, 128, key_eval, args.eval_episodes
        )
        side_by_side.summarise_sides(sides, n, steps_per_update, num_updates, args.threshold)
        rows.append(
            {
                "env": "cartpole / gymnax CartPole-v1",
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                "ours_config": config_dict(config),
                **sides,
                "ours_over_purejaxrl": side_by_side.ratios(sides["ours"], sides["purejaxrl"]),
            }
        )
        save("cartpole", rows)
    return rows


# ---------------------------------------------------- anchor: gymnax's meta-A2C notebook recipe
# The recipe of gymnax's examples/03_meta_a2c.ipynb (commit NOTEBOOK_COMMIT), written here for
# gymnax 1.0 and haiku: the network, the rollout, the loss and the training loop as the notebook
# does them (its values in NOTEBOOK), and nothing of ours.
NOTEBOOK_COMMIT = "086ad95697d5898b95ce3b14fa25f2b0bae4a1fc"
NOTEBOOK = {
    "lstm_units": 48,
    "workers": 64,  # trials per update
    "pulls": 100,
    "lr": 0.005,
    "adam_eps": 1e-4,
    "gamma": 0.8,
    "value_coef": 0.5,
    "entropy_coef": 1.0,
    "entropy_decay": 0.999,
    "entropy_min": 0.01,
    "max_grad_norm": 5.0,
}


class WithRegret:
    """gymnax 1.0's env whose `step` adds `info["regret"]`, the best arm's probability minus the
    pulled arm's (from the task in the state), which the notebook reads and gymnax 1.0 dropped."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, key, state, action, params=None):
        obs, next_state, reward, terminated, truncated, info = self._env.step(
            key, state, action, params
        )
        regret = state.exp_reward_best - state.reward_probs[action]
        return obs, next_state, reward, terminated, truncated, {**info, "regret": regret}


def notebook_returns(rewards: jax.Array, gamma) -> jax.Array:
    """`[T]` returns to go `R_t = r_t + gamma R_{t+1}` to the trial's end, as the notebook
    computes them (a Python loop over the steps, writing one entry at a time)."""
    running, returns = 0.0, jnp.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[0])):
        running = rewards[t] + gamma * running
        returns = returns.at[t].set(running)
    return returns


def notebook_loss(log_probs, advantages, entropies, entropy_coef, value_coef):
    """The notebook's A2C loss of one trial (REINFORCE with the stopped advantage, squared
    advantage, entropy bonus). Its `advantages` are `[T, T]` (see the module docstring)."""
    actor = -(log_probs * jax.lax.stop_gradient(advantages)).mean()
    critic = (advantages**2).mean()
    return actor + value_coef * critic - entropy_coef * entropies.mean()


def notebook_rollout(env, units: int, pulls: int):
    """haiku's `transform` of the notebook's rollout: `apply(params, key, gamma, env_params,
    greedy=False) -> (log_probs [T], advantages [T, T], entropies [T], return, regret)` of one
    trial of `pulls` steps with an LSTM of `units` and linear policy and value heads (`greedy`,
    the benchmark's addition: act by the largest logit)."""
    import distrax
    import haiku as hk

    class LSTMMetaRL(hk.RNNCore):
        def __init__(self, units: int, actions: int):
            super().__init__(name="LSTMMetaRL")
            self.lstm = hk.LSTM(units)
            self.policy = hk.Linear(actions)
            self.value = hk.Linear(1)

        def initial_state(self, batch_size):
            return self.lstm.initial_state(batch_size)

        def __call__(self, x, state):
            output, state = self.lstm(x, state)
            return state, self.policy(output), self.value(output)

    def rollout(key, gamma, env_params, greedy=False):
        key_reset, key_trial = jax.random.split(key)
        obs, env_state = env.reset(key_reset, env_params)
        core = LSTMMetaRL(units, env.num_actions)

        def step(carry, _):
            obs, env_state, memory, key = carry
            key, key_step, key_act = jax.random.split(key, 3)
            memory, logits, value = core(obs, memory)
            pi = distrax.Categorical(logits=logits)
            action, log_prob = pi.sample_and_log_prob(seed=key_act)
            if greedy:
                action = jnp.argmax(logits)
            obs, env_state, reward, _, _, info = env.step(key_step, env_state, action, env_params)
            outputs = (log_prob, value, pi.entropy(), reward, info["regret"])
            return (obs, env_state, memory, key), outputs

        carry = (obs, env_state, core.initial_state(None), key_trial)
        _, (log_probs, values, entropies, rewards, regrets) = hk.scan(step, carry, None, pulls)
        advantages = notebook_returns(rewards, gamma) - values  # [T] - [T, 1]: [T, T]
        return log_probs, advantages, entropies, rewards.sum(), regrets.sum()

    return hk.without_apply_rng(hk.transform(rollout))


def notebook_batch_loss(rollout):
    """The notebook's jitted batch loss: `(params, keys [W], gamma, entropy_coef, value_coef,
    env_params) -> (mean loss, (mean return, mean regret))` over W trials."""
    trials = jax.vmap(rollout.apply, in_axes=(None, 0, None, None))
    per_trial = jax.vmap(notebook_loss, in_axes=(0, 0, 0, None, None))

    @jax.jit
    def batch_loss(params, keys, gamma, entropy_coef, value_coef, env_params):
        log_probs, advantages, entropies, returns, regrets = trials(params, keys, gamma, env_params)
        loss = per_trial(log_probs, advantages, entropies, entropy_coef, value_coef).mean()
        return loss, (returns.mean(), regrets.mean())

    return batch_loss


def notebook_train(key, env_params, updates: int, rollout, batch_loss) -> dict:
    """The notebook's training loop (a Python loop of `value_and_grad` of the jitted batch loss,
    then optax and the entropy decay outside jit), `updates` updates from `key`: the params, the
    training regret per update, its wall time and the part of it after `ANCHOR_WARMUP` updates."""
    import optax

    nb = NOTEBOOK
    start = time.perf_counter()
    params = rollout.init(key, key, nb["gamma"], env_params)
    optimizer = optax.chain(
        optax.clip_by_global_norm(nb["max_grad_norm"]),
        optax.scale_by_adam(eps=nb["adam_eps"]),
        optax.scale(-nb["lr"]),
    )
    opt_state = optimizer.init(params)
    entropy_coef, regrets = nb["entropy_coef"], []
    grad = jax.value_and_grad(batch_loss, has_aux=True)
    for update in range(updates):
        key, key_batch = jax.random.split(key)
        keys = jax.random.split(key_batch, nb["workers"])
        (_, (_, regret)), grads = grad(
            params, keys, nb["gamma"], entropy_coef, nb["value_coef"], env_params
        )
        changes, opt_state = optimizer.update(grads, opt_state)
        params = optax.apply_updates(params, changes)
        entropy_coef = jnp.clip(entropy_coef * nb["entropy_decay"], nb["entropy_min"], 1.0)
        regrets.append(regret)
        if update + 1 == ANCHOR_WARMUP:
            jax.block_until_ready(params)
            warm = time.perf_counter()
    jax.block_until_ready(params)
    end = time.perf_counter()
    return {
        "params": params,
        "train_regret": np.asarray(jnp.stack(regrets)),
        "wall_s": end - start,
        "after_warmup_s": end - warm,
    }


# ------------------------------------------------------------------------------ two-arm bandit
def ours_bandit(p: float, keys, updates: int, key_eval, trials: int) -> dict:
    """Our tuned rl2 on meta/two_arm_bandit with arm probability `p`: len(keys) runs of
    `updates` updates vmapped, timed (init's first call and the training scan's ahead-of-time
    compilation = compilation), then each evaluated for `trials` trials, sampled and greedy."""
    entry = tuned.tuned("rl2", "meta/two_arm_bandit")
    env, env_params = envs.make("meta/two_arm_bandit", p=p)
    agent = rl2.make(rl2.RL2Config(**entry["config"]), env, env_params)
    hp = ppo.PPOHparams(**entry["hparams"])
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    evaluate_runs = jax.jit(driver.evaluate_trials_batch, static_argnums=(0, 3, 4, 5))
    start = time.perf_counter()
    states = jax.block_until_ready(init(agent, keys, hp))
    compiled = run.lower(agent, states, hp, updates).compile()
    trained = time.perf_counter()
    states, metrics = jax.block_until_ready(compiled(states, hp))
    end = time.perf_counter()
    regrets = {}
    for name, deterministic in (("sampled", False), ("greedy", True)):
        result = evaluate_runs(agent, states, key_eval, trials, deterministic, ("regret",))
        regrets[name] = np.asarray(result.sums["regret"]).mean(axis=1)  # [N]
    return {
        "config": config_dict(agent.config),
        "hparams": side_by_side.hparams_dict(hp),
        "compile_s": trained - start,
        "wall_excl_compile_s": end - trained,
        "wall_incl_compile_s": end - start,
        "regret_sampled_per_seed": regrets["sampled"].tolist(),
        "regret_greedy_per_seed": regrets["greedy"].tolist(),
    }


def notebook_bandit(p: float, keys, updates: int, key_eval, trials: int) -> dict:
    """The notebook's recipe on gymnax 1.0's BernoulliBandit-misc with `reward_prob=p`: one run
    per key, in sequence, each then evaluated for `trials` trials, sampled and greedy."""
    import gymnax

    env, env_params = gymnax.make("BernoulliBandit-misc")
    env, env_params = WithRegret(env), env_params.replace(reward_prob=p)
    rollout = notebook_rollout(env, NOTEBOOK["lstm_units"], NOTEBOOK["pulls"])
    batch_loss = notebook_batch_loss(rollout)
    evaluators = {
        name: jax.jit(
            jax.vmap(functools.partial(rollout.apply, greedy=greedy), in_axes=(None, 0, None, None))
        )
        for name, greedy in (("sampled", False), ("greedy", True))
    }
    runs, regrets = [], {"sampled": [], "greedy": []}
    eval_keys = jax.random.split(key_eval, len(keys))
    for i, key in enumerate(keys):
        run = notebook_train(key, env_params, updates, rollout, batch_loss)
        progress(f"bandit p={p} notebook run {i + 1}/{len(keys)}: {run['wall_s']:.1f}s")
        trial_keys = jax.random.split(eval_keys[i], trials)
        for name, evaluate_trials in evaluators.items():
            out = evaluate_trials(run["params"], trial_keys, NOTEBOOK["gamma"], env_params)
            regrets[name].append(float(out[-1].mean()))
        runs.append(run)
    steady = sum(r["after_warmup_s"] for r in runs) * updates / (updates - ANCHOR_WARMUP)
    wall = sum(r["wall_s"] for r in runs)
    curve = np.mean([r["train_regret"] for r in runs], axis=0)
    return {
        "recipe": NOTEBOOK,
        "per_run_wall_s": [r["wall_s"] for r in runs],
        "compile_s": max(wall - steady, 0.0),
        "wall_excl_compile_s": steady,
        "wall_incl_compile_s": wall,
        "train_regret_every_100": [round(float(x), 3) for x in curve[99::100]],
        "regret_sampled_per_seed": regrets["sampled"],
        "regret_greedy_per_seed": regrets["greedy"],
    }


def bench_bandit(args: Args, save: Callable[[str, list], None]) -> list[dict]:
    steps_per_update = NOTEBOOK["workers"] * NOTEBOOK["pulls"]
    rows = []
    for p in args.bandit_p:
        n = args.bandit_seeds
        keys, key_eval = side_by_side.keys_for(args.seed, n)
        sides = {}
        sides["ours"] = ours_bandit(p, keys, args.bandit_updates, key_eval, args.bandit_eval_trials)
        progress(f"bandit p={p} ours: {sides['ours']['wall_incl_compile_s']:.1f}s")
        sides["notebook"] = notebook_bandit(
            p, keys, args.bandit_updates, key_eval, args.bandit_eval_trials
        )
        for side in sides.values():
            side["env_steps_per_s"] = (
                n * args.bandit_updates * steps_per_update / side["wall_excl_compile_s"]
            )
            for kind in ("sampled", "greedy"):
                side[f"regret_{kind}"] = float(np.mean(side[f"regret_{kind}_per_seed"]))
        rows.append(
            {
                "env": f"two-arm bandit, p={p:g}",
                "num_seeds": n,
                "num_updates": args.bandit_updates,
                "env_steps_per_update": steps_per_update,
                "eval_trials_per_seed": args.bandit_eval_trials,
                **sides,
                "ours_over_notebook": side_by_side.ratios(sides["ours"], sides["notebook"]),
                "regret_ours_minus_notebook": {
                    kind: sides["ours"][f"regret_{kind}"] - sides["notebook"][f"regret_{kind}"]
                    for kind in ("sampled", "greedy")
                },
            }
        )
        save("bandit", rows)
    return rows


def bandit_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["env", "variant", "wall incl. compile (s)", "wall excl. compile (s)", "compile (s)"]
    header += ["env steps/s (all seeds)", "regret / 100 pulls, sampled", "greedy"]
    header += ["per seed (sampled)"]
    body = []
    for r in rows:
        env = f"{r['env']}, N={r['num_seeds']}"
        for name, label in (("ours", "ours"), ("notebook", "gymnax notebook")):
            side = r[name]
            body.append(
                [
                    env,
                    label,
                    fmt(side["wall_incl_compile_s"]),
                    fmt(side["wall_excl_compile_s"]),
                    fmt(side["compile_s"]),
                    fmt(side["env_steps_per_s"], ",.0f"),
                    fmt(side["regret_sampled"], ".2f"),
                    fmt(side["regret_greedy"], ".2f"),
                    " ".join(f"{x:.2f}" for x in side["regret_sampled_per_seed"]),
                ]
            )
        ratio, difference = r["ours_over_notebook"], r["regret_ours_minus_notebook"]
        body.append(
            [
                env,
                "ours / notebook (regret: ours - notebook)",
                fmt(ratio["wall_incl_compile_s"], ".2f"),
                fmt(ratio["wall_excl_compile_s"], ".2f"),
                "",
                fmt(ratio["env_steps_per_s"], ".2f"),
                fmt(difference["sampled"], "+.2f"),
                fmt(difference["greedy"], "+.2f"),
                "",
            ]
        )
    return header, body


# ------------------------------------------------------------------------------------------ report
def anchor_info(args: Args) -> dict:
    files = {}
    for name in ("ppo_rnn.py", "wrappers.py"):
        path = args.purejaxrl_dir / name
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    try:
        haiku = importlib.metadata.version("dm-haiku")
    except importlib.metadata.PackageNotFoundError:
        haiku = None
    return {
        "purejaxrl_commit": PUREJAXRL_COMMIT,
        "purejaxrl_sha256": files,
        "purejaxrl_init_mapped_over_seeds": args.anchor_mapped_init,
        "gymnax_notebook": f"examples/03_meta_a2c.ipynb at {NOTEBOOK_COMMIT}",
        "dm_haiku": haiku,
    }


def main(args: Args) -> dict:
    check_args(args)
    if args.bandit and args.bandit_updates <= ANCHOR_WARMUP:
        raise ValueError(f"--bandit-updates must be > {ANCHOR_WARMUP}, got {args.bandit_updates}")
    for p in args.bandit_p:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"--bandit-p must be in [0, 1], got {p}")
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    parts = {"bandit": [], "cartpole": []}

    def save(name: str, rows: list) -> dict:  # the whole JSON after every row (a stop keeps it)
        parts[name] = rows
        return side_by_side.write_result(args, machine, anchor_info(args), start, parts)

    if args.bandit and args.bandit_p:
        bench_bandit(args, save)
    cartpole = bench_cartpole(args, save) if args.cartpole and args.seeds else []
    result = save("cartpole", cartpole)
    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of the bandit part and the CartPole part, those that ran, from
    the JSON `main` writes (`benchmarks/tables.py` renders it on the RL^2 pages)."""
    args, bandit, cartpole = result["args"], result["bandit"], result["cartpole"]
    tables = []
    if bandit:
        title = (
            f"Two-arm bandit (gymnax's BernoulliBandit-misc / our meta/two_arm_bandit), A2C with "
            f"the gymnax notebook's recipe, {args['bandit_updates']:,} updates; regret per 100 "
            f"pulls over {args['bandit_eval_trials']:,} evaluation trials per seed; ours: N seeds "
            "vmapped, the notebook: N runs in sequence"
        )
        tables.append((title, *bandit_table(bandit)))
    if cartpole:
        title = (
            f"CartPole-v1, GRU PPO at PureJaxRL's ppo_rnn.py configuration "
            f"({cartpole[0]['env_steps_per_seed']:,} env steps per seed; N seeds vmapped on both "
            "sides)"
        )
        table = side_by_side.comparison_table(cartpole, "purejaxrl", "PureJaxRL", args["threshold"])
        tables.append((title, *table))
    return tables


if __name__ == "__main__":
    main(tyro.cli(Args))
