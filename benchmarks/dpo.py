"""DPO beside PureJaxRL's `dpo_continuous_action.py` on Brax hopper, in one run on one machine.

PureJaxRL's script (commit PUREJAXRL_COMMIT, fetched: benchmarks/README.md) trains PPO with DPO's
drift on a Brax environment behind its `BraxGymnaxWrapper` (brax's positional backend, episodes
of 1,000 steps, observations and rewards normalised by its vector wrappers). Both sides here run
its published numbers (lr 3e-4 held constant, 4 epochs of 32 minibatches, gamma 0.99, lambda
0.95, DPO's alpha 2 and beta 0.6, no entropy bonus, tanh 256 x 256 networks) at a CPU's sizes
(`--num-envs`, `--num-steps`, `--total-timesteps`; the script's own are 2,048 envs x 10 steps
for 50 million steps), on the same physics:

- ours: `dpo.make(DPOConfig(...))` on `envs.make("brax/hopper", backend="positional")`, with
  `normalize_observations` and `scale_rewards`, N seeds vmapped (`side_by_side.ours_vmapped`);
- PureJaxRL: its `make_train(config)`, unmodified, `jit(vmap(train))` over the same N keys
  (`benchmarks/ppo.py`'s `load_purejaxrl` imports it). Its network's orthogonal initialisers
  run once per seed under that vmap (`rlsuite.networks.orthogonal` in its module: the same
  values): initialised batched, as published, its 4-seed call hung XLA's CPU pool here, every
  thread waiting, as `benchmarks/rl2.py` found of PureJaxRL's `ppo_rnn.py`.

Each side's call is compiled by its first call, then timed (`side_by_side.take_turns`). Reported:
wall time with and without compilation, env steps/s and their ratio, the training return over
the last tenth of the updates, and the evaluation return of each side's final policy on our
environment (`--eval-episodes` deterministic episodes per seed; PureJaxRL's policy reads its
observations through its own running normalisation, whose final statistics are applied).

    python benchmarks/dpo.py                           # 64 envs x 10 steps, 1 and 4 seeds
    python benchmarks/dpo.py --seeds 1 --total-timesteps 50000
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tyro

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side  # noqa: E402
from ppo import PUREJAXRL_COMMIT, load_purejaxrl, per_update_return  # noqa: E402
from report import check_args  # noqa: E402

from rlsuite import envs  # noqa: E402
from rlsuite.agents import dpo, ppo  # noqa: E402
from rlsuite.networks import orthogonal  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "dpo_continuous_action.py"


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 4])
    """numbers of seeds, each a comparison (ours vmapped, PureJaxRL vmapped)"""
    env: str = "hopper"
    """the Brax environment (both sides: brax's positional backend)"""
    num_envs: int = 64
    """environments per seed (PureJaxRL's script: 2,048)"""
    num_steps: int = 10
    """steps per environment per update (the script's 10)"""
    num_minibatches: int = 32
    """minibatches per epoch (the script's 32)"""
    total_timesteps: int = 200_000
    """env steps per seed (the script's 50 million)"""
    repeats: int = 1
    """compile-free calls of each side after the first; the fastest is kept"""
    purejaxrl_dir: Path = ROOT / "benchmarks/_anchors/purejaxrl"
    """folder holding PureJaxRL's dpo_continuous_action.py and wrappers.py"""
    out: Path = Path("benchmarks/results/dpo.json")
    """where to write the JSON results"""


def purejaxrl_config(args: Args) -> dict:
    """The configuration of the script's `__main__`, at `args`' sizes (DEBUG off: no callback)."""
    return {
        "LR": 3e-4,
        "NUM_ENVS": args.num_envs,
        "NUM_STEPS": args.num_steps,
        "TOTAL_TIMESTEPS": args.total_timesteps,
        "UPDATE_EPOCHS": 4,
        "NUM_MINIBATCHES": args.num_minibatches,
        "GAMMA": 0.99,
        "GAE_LAMBDA": 0.95,
        "CLIP_EPS": 0.2,
        "DPO_ALPHA": 2.0,
        "DPO_BETA": 0.6,
        "ENT_COEF": 0.0,
        "VF_COEF": 0.5,
        "MAX_GRAD_NORM": 0.5,
        "ACTIVATION": "tanh",
        "ENV_NAME": args.env,
        "ANNEAL_LR": False,
        "NORMALIZE_ENV": True,
        "DEBUG": False,
    }


def ours(args: Args):
    """Our DPO at the script's numbers: `(agent, hparams)`."""
    config = dpo.DPOConfig(
        num_envs=args.num_envs,
        num_steps=args.num_steps,
        num_minibatches=args.num_minibatches,
        update_epochs=4,
        total_timesteps=args.total_timesteps,
        hidden_sizes=(256, 256),
        activation="tanh",
        anneal_lr=False,
        normalize_observations=True,
        scale_rewards=True,
    )
    hp = ppo.PPOHparams(learning_rate=3e-4, ent_coef=0.0)
    env, env_params = envs.make(f"brax/{args.env}", backend="positional")
    return dpo.make(config, env, env_params), hp


def compare(args: Args, anchor, n: int) -> dict:
    agent, hp = ours(args)
    env, env_params = agent.env, agent.env_params
    steps_per_update, num_updates = agent.env_steps_per_update, agent.config.num_updates
    train, returns = side_by_side.ours_vmapped(agent, hp, num_updates)
    theirs = jax.jit(jax.vmap(anchor.make_train(purejaxrl_config(args))))
    network = anchor.ActorCritic(env.action_space(env_params).shape[0], activation="tanh")

    def greedy(policy, key, obs):
        params, mean, var = policy
        return network.apply(params, (obs - mean) / jnp.sqrt(var + 1e-8))[0].mode()

    keys, key_eval = side_by_side.keys_for(args.seed, n)
    calls = {
        "ours": functools.partial(train, keys),
        "purejaxrl": functools.partial(theirs, jax.random.key_data(keys)),
    }
    sides, outs = side_by_side.take_turns(calls, args.repeats, f"{args.env} n={n}")
    sides["ours"].update(returns(outs["ours"], key_eval, args.eval_episodes))
    info = outs["purejaxrl"]["metrics"]
    sides["purejaxrl"]["train_returns"] = per_update_return(
        np.asarray(info["returned_episode_returns"]), np.asarray(info["returned_episode"])
    )
    train_state, env_state = outs["purejaxrl"]["runner_state"][:2]
    # NormalizeVecReward's state holds NormalizeVecObservation's, whose statistics it keeps in
    # the batch's shape, every environment's row the same: [N, num_envs, obs].
    observed = env_state.env_state
    policy = (train_state.params, observed.mean[:, 0], observed.var[:, 0])
    sides["purejaxrl"]["eval_returns"] = side_by_side.evaluate_params(
        env, env_params, greedy, policy, key_eval, args.eval_episodes
    )
    for side in sides.values():  # no return threshold here: times, rates, returns
        side_by_side.summarise(side, n, steps_per_update, num_updates)
    return {
        "env": f"brax/{args.env} (positional) / PureJaxRL's BraxGymnaxWrapper",
        "num_seeds": n,
        "env_steps_per_seed": num_updates * steps_per_update,
        "num_updates": num_updates,
        **sides,
        "ours_over_purejaxrl": side_by_side.ratios(sides["ours"], sides["purejaxrl"]),
    }


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of the comparison, from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the DPO page)."""
    rows = result["rows"]
    header, body = side_by_side.comparison_table(rows, "purejaxrl", "PureJaxRL", None)
    args = result["args"]
    title = (
        f"DPO on brax/{args['env']} (positional), ours vs PureJaxRL's {SCRIPT} at its numbers, "
        f"{args['num_envs']} envs x {args['num_steps']} steps"
    )
    return [(title, header, body)]


def anchor_info(args: Args) -> dict:
    files = {}
    for name in (SCRIPT, "wrappers.py"):
        path = args.purejaxrl_dir / name
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return {"purejaxrl_commit": PUREJAXRL_COMMIT, "purejaxrl_sha256": files}


def main(args: Args) -> dict:
    check_args(args)
    console, machine = side_by_side.set_up(args)
    anchor = load_purejaxrl(args.purejaxrl_dir, SCRIPT)
    anchor.orthogonal = orthogonal  # once per seed under its vmap (the module docstring)
    start = time.perf_counter()
    rows, result = [], {}
    for n in args.seeds:
        rows.append(compare(args, anchor, n))
        result = side_by_side.write_result(args, machine, anchor_info(args), start, {"rows": rows})
    side_by_side.show(console, args, result, tables(result))
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
