"""PPO on Craftax-Classic (symbolic) side by side: ours at its tuned entry beside rejax's PPO, at
equal env steps, in one run, on one machine.

Ours: `ppo.make` with the tuned entry of `("ppo", "craftax/Craftax-Classic-Symbolic-v1")`
(rlsuite/app/tuned.py: 64 envs x 64 steps, 8 minibatches, 4 epochs, (256, 256) tanh, LR 3e-4
annealed, resets 8 envs at a time) on our adapter, N seeds vmapped (`side_by_side.ours_vmapped`).
rejax 0.1.3: `rejax.PPO.create(env="craftax/Craftax-Classic-Symbolic-v1")` (its `craftax2gymnax`,
Craftax's own auto-reset) with every number it shares with ours set to ours: num_envs, num_steps,
num_minibatches, num_epochs, learning rate, gamma, lambda, clip, value coefficient, entropy
coefficient, max grad norm, hidden sizes and tanh; `jax.jit(jax.vmap(algo.train))` over the same N
keys, its periodic evaluation replaced by nothing (one segment of the whole budget). Both train
the same number of updates, so the same env steps.

Differences that remain (rejax's code fixes them): rejax's learning rate is constant; it clips
gradients element-wise (`optax.clip`), ours by global norm; its actor and critic have separate
Adam optimisers (eps 1e-8), ours one (eps 1e-5); and Craftax's auto-reset generates a new world
for every env at every step (a `select` under `vmap`), where ours generates 8 per step
(`reset_slots`).

Each side's jitted training is compiled ahead of time (`compile_s`) and then run once
(`train_s`, compile-free; env steps per second from it). Both sides' trained policies are scored
by one evaluator written here on Craftax's own environment (no auto-reset): `--eval-episodes`
episodes per seed from fresh worlds, actions sampled from the policy (a greedy Craftax policy
gets stuck: rlsuite's `Achievements` evaluation reports both), an episode's score the number of
Craftax's 22 achievements unlocked when it ends (or at `--eval-max-steps`). The uniform random
policy goes through the same evaluator as the floor.

    python benchmarks/craftax_ppo.py                       # 2 seeds x 500k env steps per side
    python benchmarks/craftax_ppo.py --seeds 1 --total-timesteps 100000
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import side_by_side
import tyro
from report import check_args, fmt, progress

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.agents.ppo_config import PPOConfig, PPOHparams
from rlsuite.app.tuned import TUNED

NAME = "Craftax-Classic-Symbolic-v1"


@dataclasses.dataclass
class Args:
    """Flags of the Craftax PPO comparison."""

    seeds: int = 2
    """Seeds per side, vmapped on both."""
    total_timesteps: int = 500_000
    """Env steps per seed (the tuned entry's budget), in whole updates on both sides."""
    eval_episodes: int = 64
    """Evaluation episodes per seed (and of the random policy)."""
    eval_max_steps: int = 10_000
    """Steps after which an evaluation episode is scored as it stands (Craftax-Classic's limit)."""
    cpu_devices: int | None = 1
    """CPU cores made JAX devices (`platform.use_cpu_cores`); 1: both sides on one device, as the
    vmapped anchors run."""
    seed: int = 0
    """Base seed of the training and evaluation keys (the same on both sides)."""
    out: Path = Path("benchmarks/results/craftax_ppo.json")
    """Where the whole run's JSON goes."""
    markdown: bool = True
    """Also print the table as Markdown (for its page, docs/benchmarks/)."""


def ours(args: Args):
    """Our agent at the tuned entry, its hparams, and its number of updates."""
    entry = TUNED[("ppo", f"craftax/{NAME}")]
    config = PPOConfig(**{**entry["config"], "total_timesteps": args.total_timesteps})
    agent = ppo.make(config, *envs.make(f"craftax/{NAME}"))
    return agent, PPOHparams(**entry["hparams"]), config.num_updates


class GymnaxDiscrete:
    """rejax's Craftax environment (`craftax2gymnax.create_craftax`: Craftax's own, auto-reset)
    with its action space as gymnax's `Discrete`: rejax 0.1.3 tells discrete from continuous
    actions by gymnax's class, and Craftax's own `Discrete` is another, so `rejax.PPO.create`
    on `env="craftax/..."` fails (it builds a Gaussian policy and asks the space for bounds).
    Everything else is the wrapped environment's."""

    def __init__(self, env):
        self._env = env

    def action_space(self, params=None):
        from gymnax.environments import spaces

        return spaces.Discrete(self._env.action_space(params).n)

    def __getattr__(self, name):
        if name.startswith("__"):  # copy's probes, before `_env` exists
            raise AttributeError(name)
        return getattr(self.__dict__["_env"], name)


def rejax_algo(agent, hp: PPOHparams, num_updates: int):
    """rejax's PPO with ours' numbers (the module's docstring), one segment of `num_updates`."""
    import rejax
    from rejax.compat import craftax2gymnax

    c = agent.config
    steps = num_updates * c.num_envs * c.num_steps
    env, _ = craftax2gymnax.create_craftax(NAME)  # its params wrapper cannot be deep-copied
    algo = rejax.PPO.create(
        env=GymnaxDiscrete(env),  # params: the environment's defaults
        num_envs=c.num_envs,
        num_steps=c.num_steps,
        num_minibatches=c.num_minibatches,
        num_epochs=c.update_epochs,
        learning_rate=hp.learning_rate,
        gamma=hp.gamma,
        gae_lambda=hp.gae_lambda,
        clip_eps=hp.clip_eps,
        vf_coef=hp.vf_coef,
        ent_coef=hp.ent_coef,
        max_grad_norm=hp.max_grad_norm,
        total_timesteps=steps,
        eval_freq=steps,
        skip_initial_evaluation=True,
        agent_kwargs={"activation": c.activation, "hidden_layer_sizes": list(c.hidden_sizes)},
    )
    return algo.replace(eval_callback=lambda algo, ts, key: jnp.zeros(()))


def achievements(policy: Callable, key: jax.Array, episodes: int, max_steps: int) -> np.ndarray:
    """Achievements unlocked per episode `[episodes]` by `policy(obs [E, D], key) -> actions [E]`
    on Craftax's own environment without auto-reset, each episode scored when it first ends."""
    from craftax.craftax_env import make_craftax_env_from_name

    env = make_craftax_env_from_name(NAME, auto_reset=False)
    params = env.default_params
    key, reset_key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(reset_key, episodes), params)
    step = jax.vmap(env.step, (0, 0, 0, None))

    def unfinished(carry):
        t, _, _, _, done, _ = carry
        return (t < max_steps) & ~done.all()

    def one_step(carry):
        t, key, obs, state, done, score = carry
        key, act_key, step_key = jax.random.split(key, 3)
        action = policy(obs, act_key)
        obs, state, _, ended, _ = step(jax.random.split(step_key, episodes), state, action, params)
        count = state.achievements.sum(-1)
        score = jnp.where(done, score, count)  # frozen at an episode's first end
        return t + 1, key, obs, state, done | ended, score

    zero = jnp.zeros(episodes, jnp.int32)
    carry = (0, key, obs, state, jnp.zeros(episodes, bool), zero)
    *_, score = jax.jit(lambda c: jax.lax.while_loop(unfinished, one_step, c))(carry)
    return np.asarray(score)


def run_side(label: str, train: Callable, keys: jax.Array) -> tuple[dict, object]:
    """Compile `train(keys)` ahead of time, then run it once: its times and its output."""
    compiled, compile_s = side_by_side.timed_compile(jax.jit(train), keys)
    progress(f"{label}: compiled in {compile_s:.1f}s")
    train_s, out = side_by_side.timed(compiled, keys)
    progress(f"{label}: trained in {train_s:.1f}s")
    return {"compile_s": compile_s, "train_s": train_s}, out


def score_seeds(policy_of: Callable, n: int, key: jax.Array, args: Args) -> np.ndarray:
    """`[n, episodes]` achievements of each seed's policy (`policy_of(i)`), the same keys for
    every side."""
    keys, size, limit = jax.random.split(key, n), args.eval_episodes, args.eval_max_steps
    return np.stack([achievements(policy_of(i), keys[i], size, limit) for i in range(n)])


def index(tree, i: int):
    """Seed `i` of a pytree batched over seeds."""
    return jax.tree.map(lambda x: x[i], tree)


def summary(scores: np.ndarray) -> dict:
    per_seed = scores.mean(axis=1)
    return {
        "achievements_mean": float(scores.mean()),
        "achievements_per_seed": [float(x) for x in per_seed],
        "achievements_sem": float(scores.std(ddof=1) / np.sqrt(scores.size)),
    }


def main(args: Args) -> dict:
    check_args(args)
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    agent, hp, num_updates = ours(args)
    algo = rejax_algo(agent, hp, num_updates)
    steps = num_updates * agent.env_steps_per_update
    train_keys, eval_key = side_by_side.keys_for(args.seed, args.seeds)

    train_ours, _ = side_by_side.ours_vmapped(agent, hp, num_updates)
    sides = {}
    sides["ours"], (states, metrics) = run_side("ours", train_ours, train_keys)
    curve = np.asarray(metrics["charts/achievements"])  # [N, U]
    sides["ours"]["train_achievements_last10pct"] = float(
        side_by_side.nanmean(curve[:, -max(1, num_updates // 10) :])
    )
    sides["ours"] |= summary(
        score_seeds(
            lambda i: lambda obs, key: agent.act(index(states, i), obs, key, False),
            args.seeds,
            eval_key,
            args,
        )
    )
    rejax_train = jax.vmap(algo.train)
    raw_keys = jax.vmap(jax.random.key_data)(train_keys)  # rejax takes raw uint32 keys
    sides["rejax"], (ts, _) = run_side("rejax", rejax_train, raw_keys)
    actor = ts.actor_ts.params
    sides["rejax"] |= summary(
        score_seeds(
            lambda i: lambda obs, key: algo.actor.apply(index(actor, i), obs, key, method="act"),
            args.seeds,
            eval_key,
            args,
        )
    )
    from craftax.craftax_env import make_craftax_env_from_name

    num_actions = make_craftax_env_from_name(NAME, auto_reset=False).action_space().n
    sides["random"] = summary(
        score_seeds(
            lambda i: lambda obs, key: jax.random.randint(key, obs.shape[:1], 0, num_actions),
            1,
            eval_key,
            args,
        )
    )
    for side in ("ours", "rejax"):
        sides[side]["env_steps_per_s"] = args.seeds * steps / sides[side]["train_s"]
    ratio = {
        k: sides["ours"][k] / sides["rejax"][k] for k in ("env_steps_per_s", "compile_s", "train_s")
    }
    anchors = {"rejax": importlib.metadata.version("rejax")}
    anchors["craftax"] = importlib.metadata.version("craftax")
    parts = {"env_steps_per_seed": steps, "sides": sides, "ours_over_rejax": ratio}
    result = side_by_side.write_result(args, machine, anchors, start, parts)
    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of ours, rejax's and the random policy, from the JSON `main`
    writes (`benchmarks/tables.py` renders it on the PPO pages)."""
    args, anchors, sides = result["args"], result["anchors"], result["sides"]
    ratio = result["ours_over_rejax"]
    header = [
        "side",
        "compile s",
        "train s",
        "env steps/s",
        "x rejax",
        "achievements (sampled)",
        "per seed",
    ]
    body = []
    for side in ("ours", "rejax", "random"):
        s = sides[side]
        body.append(
            [
                side,
                fmt(s.get("compile_s"), ".1f"),
                fmt(s.get("train_s"), ".1f"),
                fmt(s.get("env_steps_per_s"), ",.0f"),
                fmt(ratio["env_steps_per_s"] if side == "ours" else None, ".2f"),
                f"{s['achievements_mean']:.2f} +- {s['achievements_sem']:.2f}",
                ", ".join(f"{x:.2f}" for x in s["achievements_per_seed"]),
            ]
        )
    title = (
        f"PPO on Craftax-Classic-Symbolic, {result['env_steps_per_seed']:,} env steps per seed, "
        f"{args['seeds']} seeds vmapped per side; rejax {anchors['rejax']}, craftax "
        f"{anchors['craftax']}; achievements per episode over {args['eval_episodes']} episodes a "
        "seed (+- standard error)"
    )
    return [(title, header, body)]


if __name__ == "__main__":
    main(tyro.cli(Args))
