"""Value-based agents side by side: our DQN and PQN beside rejax's on CartPole, in one run.

1. DQN: our `dqn` at its defaults (CleanRL's `dqn_jax.py` CartPole settings, double-Q) on our
   `cartpole`, beside rejax 0.1.3 `rejax.DQN` on gymnax's CartPole-v1 with the same geometry.
   Both sides train N seeds in one vmapped call (N=1 too). Geometry, ours -> rejax: num_envs ->
   num_envs (10); buffer_size -> buffer_size; learning_starts -> fill_buffer; batch_size ->
   batch_size; gradient_steps -> num_epochs (per step of all envs); total_timesteps;
   hidden_sizes -> the Q network's `hidden_layer_sizes` (set by `module.clone`: rejax 0.1.3 fixes
   (64, 64) in `create_agent`), relu on both; learning_rate; gamma; target_update_period (in
   gradient steps) x num_envs / gradient_steps -> target_update_freq (env steps), tau = 1 ->
   polyak 0 (a copy); start_e, end_e, exploration_fraction -> eps_start, eps_end,
   exploration_fraction; double -> ddqn; max_grad_norm -> max_grad_norm.
2. PQN: our `pqn` at its defaults (purejaxql's `pqn_cartpole.yaml`) beside `rejax.PQN` with the
   same geometry: num_envs, num_steps, num_minibatches, update_epochs -> num_epochs,
   learning_rate, gamma, q_lambda -> td_lambda, epsilon's schedule, max_grad_norm, hidden_sizes
   (`module.clone`; rejax's LayerNorm-and-relu activation kept). rejax has no reward scale and no
   learning-rate decay: ours runs here with `reward_scale=1` and `anneal_lr=False` so that both
   learn the same targets at the same step size.

Differences that remain (rejax's code fixes them): rejax's `done` (terminated | truncated) ends the
bootstrap at CartPole's 500-step limit (ours bootstraps a truncation from its true last
observation); rejax clips gradients element-wise (`optax.clip`), ours by global norm; rejax acts
with its network (epsilon-greedy) as soon as the buffer is filled and starts learning one step
later; network initialisation (rejax: lecun-normal; ours: orthogonal); rejax's PQN bootstraps the
rollout's last step from `max Q(last_obs)` with `last_done` (ours: from the true next observation
of every step). The env-side shim and the episode-statistics callback are `benchmarks/
off_policy.py`'s (`RejaxEnv`, `episode_stats_callback`, `rejax_curve`); timing, evaluation,
tables and JSON are `benchmarks/side_by_side.py`'s. Readings: benchmarks/RESULTS.md.

    python benchmarks/value_based.py                       # defaults, on a CPU
    python benchmarks/value_based.py --seeds 1 8 64        # on a GPU
    python benchmarks/value_based.py --algos pqn --seeds 1 # PQN only

What this file does not measure yet: PQN beside purejaxql's and rejax's at purejaxql's MinAtar
configuration, and DQN on MinAtar Breakout (the value-based issue's other parts).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import side_by_side
import tyro
from off_policy import RejaxEnv, episode_stats_callback, rejax_curve
from report import check_args

from rlsuite import envs
from rlsuite.loop.agent import config_dict

ALGOS = ("dqn", "pqn")


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    """Flags of the value-based benchmark."""

    algos: list[str] = dataclasses.field(default_factory=lambda: ["dqn", "pqn"])
    """Algorithms to compare with rejax (dqn, pqn)."""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of vmapped seeds (both sides vmap them)."""
    dqn_timesteps: int = 200_000
    """DQN's env steps per seed (its schedule's fraction is of these)."""
    pqn_timesteps: int = 200_000
    """PQN's env steps per seed."""
    threshold: float = 475.0
    """CartPole return threshold for the time-to-threshold columns."""
    repeats: int = 1
    """Compile-free timed calls of each side after the first; the best is kept."""
    out: Path = Path("benchmarks/results/value_based.json")
    """Where the whole run's JSON goes."""


def dqn_agents(args: Args):
    """Ours (agent, hparams), rejax's DQN and the mapping, on CartPole."""
    import gymnax
    import rejax

    from rlsuite.agents import dqn

    env, env_params = envs.make("cartpole")
    config = dqn.DQNConfig(total_timesteps=args.dqn_timesteps)
    agent = dqn.make(config, env, env_params)
    hp = agent.default_hparams
    gym_env, gym_params = gymnax.make("CartPole-v1")
    kwargs = dict(
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
        max_grad_norm=float(hp.max_grad_norm),
        agent_kwargs={"activation": "relu"},
        eval_freq=config.num_envs,
        skip_initial_evaluation=True,
    )
    anchor = rejax.DQN.create(env=RejaxEnv(gym_env), env_params=gym_params, **kwargs)
    anchor = anchor.replace(
        agent=anchor.agent.clone(hidden_layer_sizes=config.hidden_sizes),
        eval_callback=episode_stats_callback,
    )
    kwargs["hidden_layer_sizes (module.clone)"] = list(config.hidden_sizes)
    return env, env_params, agent, hp, anchor, 1, _mapping(config, hp, kwargs)


def pqn_agents(args: Args):
    """Ours (agent, hparams), rejax's PQN and the mapping, on CartPole."""
    import gymnax
    import rejax

    from rlsuite.agents import pqn

    env, env_params = envs.make("cartpole")
    config = pqn.PQNConfig(total_timesteps=args.pqn_timesteps, anneal_lr=False)
    agent = pqn.make(config, env, env_params)
    hp = agent.default_hparams.replace(reward_scale=1.0)
    gym_env, gym_params = gymnax.make("CartPole-v1")
    kwargs = dict(
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
    anchor = rejax.PQN.create(env=RejaxEnv(gym_env), env_params=gym_params, **kwargs)
    anchor = anchor.replace(
        agent=anchor.agent.clone(hidden_layer_sizes=config.hidden_sizes),
        eval_callback=episode_stats_callback,
    )
    kwargs["hidden_layer_sizes (module.clone)"] = list(config.hidden_sizes)
    return env, env_params, agent, hp, anchor, 1, _mapping(config, hp, kwargs)


def _mapping(config, hp, kwargs) -> dict:
    return {
        "ours_config": config_dict(config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "rejax_create_kwargs": kwargs,
        "rejax_eval_callback": "episode statistics only (benchmark)",
    }


AGENTS = {"dqn": dqn_agents, "pqn": pqn_agents}


def bench(args: Args, algo: str) -> list[dict]:
    env, env_params, agent, hp, anchor, updates_per_point, mapping = AGENTS[algo](args)
    steps_per_update = agent.env_steps_per_update
    num_updates = agent.config.num_updates
    if anchor.eval_freq != steps_per_update:
        raise ValueError(f"{algo}: rejax's iteration must be one update of ours")
    train, returns = side_by_side.ours_vmapped(agent, hp, num_updates)
    rejax_train = jax.jit(jax.vmap(anchor.train))

    def greedy(params, key, obs):  # obs [..., 4]: rejax's network flattens all but axis 0
        q = anchor.agent.apply(params, obs.reshape(-1, obs.shape[-1]))
        return jnp.argmax(q, axis=-1).reshape(obs.shape[:-1])

    rows = []
    for n in args.seeds:
        keys, key_eval = side_by_side.keys_for(args.seed, n)
        calls = {
            "ours": functools.partial(train, keys),
            "rejax": functools.partial(rejax_train, jax.random.key_data(keys)),
        }
        sides, outs = side_by_side.take_turns(calls, args.repeats, f"cartpole {algo} n={n}")
        sides["ours"].update(returns(outs["ours"], key_eval, args.eval_episodes))
        train_state, callback_out = outs["rejax"]
        sides["rejax"]["train_returns"] = rejax_curve(callback_out, updates_per_point)
        sides["rejax"]["eval_returns"] = side_by_side.evaluate_params(
            env, env_params, greedy, train_state.q_ts.params, key_eval, args.eval_episodes
        )
        side_by_side.summarise_sides(sides, n, steps_per_update, num_updates, args.threshold)
        rows.append(
            {
                "env": f"cartpole / gymnax CartPole-v1, {algo.upper()}",
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


def main(args: Args) -> dict:
    check_args(args, choices={"algos": ALGOS})
    for algo in args.algos:  # each part's geometry, checked before the first part runs
        AGENTS[algo](args)
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    rows = {algo: bench(args, algo) for algo in args.algos}
    anchors = {"rejax": importlib.metadata.version("rejax")}
    result = side_by_side.write_result(args, machine, anchors, start, rows)
    tables = []
    for algo, part in rows.items():
        title = (
            f"CartPole {algo.upper()}, {part[0]['env_steps_per_seed']:,} env steps per seed; ours "
            f"vs rejax {anchors['rejax']}, N seeds vmapped on both sides"
        )
        header, body = side_by_side.comparison_table(part, "rejax", "rejax", args.threshold)
        tables.append((title, header, [[c.replace("nan", "-") for c in row] for row in body]))
    side_by_side.show(console, args, result, tables)
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
