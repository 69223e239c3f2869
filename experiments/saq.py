"""SAQ in one file: copy it, change the conservative term over the codes (or anything else), run it.

    rlsuite dataset collect --env pendulum --quality medium-replay --size 20000 --out data/p-mr.hdf5
    python experiments/saq.py --dataset data/p-mr.hdf5 --num-updates 30 --hidden-sizes 64 64
    python experiments/saq.py --dataset data/p-mr.hdf5 --penalty large-margin

SAQ learns a VQ-VAE that turns each state's actions into a few discrete codes, then CQL over the
codes (`rlsuite.agents.saq`). The conservative term is a function passed in: CQL's exact
log-sum-exp over the codes, none (plain Q-learning over the codes, the control), or the idea
defined here, DQfD's large-margin term. Every config and hyperparameter field is a flag
(`--help`). Seeds are vmapped into one jitted call. With `--out`, the run writes checkpoints,
metrics and `final.json` there, and `--resume` with the same flags continues it after a kill. At
the end the script says the normalised score per seed (0: the dataset's random policy, 100: its
expert) and the last penalty.
"""

import dataclasses
import pathlib
import sys
from typing import Annotated, Literal

import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import saq
from rlsuite.app.errors import run_script
from rlsuite.app.run_record import fit_on_dataset, load_dataset
from rlsuite.loop import platform


def large_margin(q, index, margin: float = 1.0):
    """An idea to try: DQfD's large-margin term (Hester et al. 2018) over the codes,
    `E_s[max_k (Q(s, k) + margin [k != k_data]) - Q(s, k_data)]` for each critic of
    `q [J, B, K]`: zero once the dataset's code leads every other by `margin`."""
    taken = jnp.take_along_axis(q, index[None, :, None], axis=-1)[..., 0]
    others = margin * (jnp.arange(q.shape[-1]) != index[:, None])
    return (jnp.max(q + others, axis=-1) - taken).mean(axis=-1)


def no_penalty(q, index):
    """No conservative term: Q-learning over the codes (the control)."""
    del index
    return jnp.zeros(q.shape[0])


PENALTIES = {
    "cql": saq.discrete_cql_penalty,
    "large-margin": large_margin,
    "none": no_penalty,
}


@dataclasses.dataclass
class Args:
    config: Annotated[saq.SAQConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[saq.SAQHparams, tyro.conf.OmitArgPrefixes]
    dataset: pathlib.Path
    """a dataset in the D4RL layout (`rlsuite dataset collect`)"""
    penalty: Literal["cql", "large-margin", "none"] = "cql"
    """the conservative term over the codes: CQL's, the idea defined here, or none"""
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


def main(argv: list[str]) -> dict:
    default = Args(saq.SAQConfig(), saq.SAQHparams(), pathlib.Path())
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    data, sha = load_dataset(str(args.dataset))  # a missing file: one line, as rlsuite says it
    env, env_params = envs.make(data.info.env)
    agent = saq.make(args.config, env, env_params, penalty=PENALTIES[args.penalty])
    result, said, scores = fit_on_dataset(agent, data, sha, args, {"penalty": args.penalty})
    summary = result.summary
    penalty = float(np.asarray(result.metrics["losses/cql_penalty"])[..., -1].mean())
    print(
        f"saq ({args.penalty}) on {args.dataset.name} ({data.info.env}, {len(data):,} "
        f"transitions): {args.num_seeds} seeds x {summary['gradient_steps']:,} gradient steps; "
        f"{said} " + ", ".join(f"{s:.1f}" for s in scores) + f" (mean {np.mean(scores):.1f}); "
        f"last penalty {penalty:.3f}"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
