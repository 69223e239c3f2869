"""Distributional DQN in one file: C51, QR-DQN, IQN or Rainbow, with the values they act on
swapped.

    python experiments/distributional.py --algo c51 --env cartpole --num-seeds 4
    python experiments/distributional.py --algo qrdqn --env cartpole --values-idea cvar --alpha 0.25
    python experiments/distributional.py --algo iqn --env acrobot --values-idea cvar

An idea to try: a risk-averse agent (IQN's paper, section 3.1) acts on, and bootstraps from, the
conditional value at risk of each action's return distribution, the mean of its lowest `alpha`
fraction, instead of its mean. The head's `values` is the one part swapped
(`rlsuite.agents.value_heads.ValueHead`); the loop, replay and loss are the family's.

Every config and hyperparameter field of the chosen family is a flag (`--help` after `--algo`);
defaults are the suite's tuned ones for the environment (`rlsuite.app.tuned`). Seeds are vmapped
into one jitted call. With `--out`, the run writes checkpoints (replay buffer included), metrics
and `final.json` there; `--resume` with the same flags continues it after a kill.
"""

import dataclasses
import importlib
import sys
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import tyro

from rlsuite import envs
from rlsuite.agents import dqn, registry, value_heads
from rlsuite.app.argv import env_from_argv, flag_value
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import tuned
from rlsuite.loop import platform, runner
from rlsuite.ops import distributional

FAMILIES = ("c51", "qrdqn", "iqn", "rainbow")


def cvar_of_masses(values, probs, alpha):
    """The mean of the lowest `alpha` of the mass `probs [..., K]` sitting at `values [..., K]`
    (sorted within each row): each value keeps the part of its mass below the `alpha` level."""
    below = jnp.cumsum(probs, axis=-1) - probs  # the mass under each value
    kept = jnp.clip(alpha - below, 0.0, probs)
    return jnp.sum(kept * values, axis=-1) / alpha


def cvar_values(algo: str, config, alpha: float):
    """The head's `values` replaced by each action's CVaR at level `alpha` (`key`: a noisy
    network's draw, as the head's own `values` takes it)."""
    if algo in ("c51", "rainbow"):
        atoms = distributional.support(config.num_atoms, config.v_min, config.v_max)

        def values(module, params, obs, key=None):
            probs = jax.nn.softmax(value_heads.apply(module, params, obs, key=key), axis=-1)
            return cvar_of_masses(atoms, probs, alpha)

    elif algo == "qrdqn":

        def values(module, params, obs, key=None):
            quantiles = jnp.sort(value_heads.apply(module, params, obs, key=key), axis=-1)
            uniform = jnp.full(quantiles.shape, 1.0 / quantiles.shape[-1])
            return cvar_of_masses(quantiles, uniform, alpha)

    else:  # iqn: quantiles at the fractions below alpha, alpha times the midpoints

        def values(module, params, obs, key=None):  # IQN has no noisy layers here
            taus = alpha * distributional.quantile_midpoints(config.num_policy_taus)
            return module.apply(params, obs, taus).mean(axis=-1)

    return values


def args_class(algo: str) -> type:
    """The flags of `algo`'s configuration and of the script."""
    family = registry.get(algo)

    @dataclasses.dataclass
    class Args:
        config: Annotated[family.config_cls, tyro.conf.OmitArgPrefixes]
        hparams: Annotated[family.hparams_cls, tyro.conf.OmitArgPrefixes]
        env: str
        """environment name (`envs.names()`); it needs a discrete action space"""
        algo: Literal["c51", "qrdqn", "iqn", "rainbow"] = "c51"
        """the distributional family"""
        values_idea: Literal["mean", "cvar"] = "mean"
        """what acting and the bootstrap action read: the family's mean, or the idea here"""
        alpha: float = 0.25
        """the CVaR's level: the lowest fraction of the return distribution it averages"""
        num_seeds: int = 4
        """independent runs, vmapped"""
        seed: int = 0
        """seed of the batch of runs"""
        out: str | None = None
        """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
        resume: bool = False
        """continue the run in --out from its last checkpoint (give the same flags)"""
        eval_episodes: int = 10
        """evaluation episodes per seed at the end"""

    return Args


def main(argv: list[str]) -> dict:
    algo = flag_value(argv, "--algo") or "c51"
    if algo not in FAMILIES:
        raise ValueError(f"--algo {algo!r} is not one of: {', '.join(FAMILIES)}")
    family = registry.get(algo)
    env_name = env_from_argv(argv, family.default_env)
    defaults = tuned(algo, env_name)
    args_cls = args_class(algo)
    default = args_cls(
        config=family.config_cls(**defaults["config"]),
        hparams=family.hparams_cls(**defaults["hparams"]),
        env=env_name,
        algo=algo,
    )
    args = tyro.cli(args_cls, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    if not 0 < args.alpha <= 1:
        raise ValueError(f"--alpha must be in (0, 1], got {args.alpha}")
    env, env_params = envs.make(args.env)
    head = importlib.import_module(f"rlsuite.agents.{algo}").head(args.config)
    if args.values_idea == "cvar":
        head = head._replace(values=cvar_values(algo, args.config, args.alpha))
    agent = dqn.make(args.config, env, env_params, head=head)
    result = runner.fit(
        agent,
        jax.random.key(args.seed),
        args.hparams,
        schedule=runner.Schedule(num_seeds=args.num_seeds),
        output=runner.Output(
            out_dir=args.out,
            resume=args.resume,
            env_name=args.env,
            # a resume with another idea is refused
            metadata={"values_idea": args.values_idea, "alpha": args.alpha},
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    print(
        f"{algo} ({args.values_idea} values) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} steps, {summary['env_steps_per_second']:,} steps/s; "
        f"evaluation return {summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
