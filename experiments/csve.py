"""CSVE in one file: copy it, change which states are penalised (or anything else), run it.

    rlsuite dataset collect --env pendulum --quality medium-replay --size 20000 --out data/p-mr.hdf5
    python experiments/csve.py --dataset data/p-mr.hdf5 --num-updates 30 --hidden-sizes 64 64
    python experiments/csve.py --dataset data/p-mr.hdf5 --penalised random-actions

CSVE pushes the state-value function down at states the dataset does not reach and up at its
own next states (`rlsuite.agents.csve`). Which states are penalised is a function passed in:
CSVE's (where the policy's mean action leads in the learned model), where a sampled action of
the policy leads, or the idea defined here, where uniformly random actions lead. Every config and
hyperparameter field is a flag (`--help`). Seeds are vmapped into one jitted call. With `--out`,
the run writes checkpoints, metrics and `final.json` there, and `--resume` with the same flags
continues it after a kill. At the end the script says the normalised score per seed (0: the
dataset's random policy, 100: its expert) and the last penalty.
"""

import dataclasses
import pathlib
import sys
from typing import Annotated, Literal

import jax
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import csve
from rlsuite.app.errors import run_script
from rlsuite.app.run_record import fit_on_dataset, load_dataset
from rlsuite.loop import platform


def random_actions(nets, learner, obs, key):
    """An idea to try: penalise where uniformly random actions lead, a broader set of states
    than the policy's, so V is conservative wherever the data's actions did not go."""
    key_action, key_member = jax.random.split(key)
    action = jax.random.uniform(key_action, (obs.shape[0], nets.dim), minval=-1.0, maxval=1.0)
    return csve.model_step(nets, learner, obs, action, key_member)


def policy_samples(nets, learner, obs, key):
    """Where a sampled action of the policy leads, rather than its mean."""
    key_action, key_member = jax.random.split(key)
    action = csve.explore(nets, learner, obs, key_action)
    return csve.model_step(nets, learner, obs, action, key_member)


PENALISED = {
    "policy-mean": csve.penalised_states,
    "policy-samples": policy_samples,
    "random-actions": random_actions,
}


@dataclasses.dataclass
class Args:
    config: Annotated[csve.CSVEConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[csve.CSVEHparams, tyro.conf.OmitArgPrefixes]
    dataset: pathlib.Path
    """a dataset in the D4RL layout (`rlsuite dataset collect`)"""
    penalised: Literal["policy-mean", "policy-samples", "random-actions"] = "policy-mean"
    """the states V is pushed down at: CSVE's, a sampled action's, or the idea defined here"""
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
    default = Args(csve.CSVEConfig(), csve.CSVEHparams(), pathlib.Path())
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    data, sha = load_dataset(str(args.dataset))  # a missing file: one line, as rlsuite says it
    env, env_params = envs.make(data.info.env)
    agent = csve.make(args.config, env, env_params, penalised=PENALISED[args.penalised])
    result, said, scores = fit_on_dataset(agent, data, sha, args, {"penalised": args.penalised})
    summary = result.summary
    penalty = float(np.asarray(result.metrics["losses/state_penalty"])[..., -1].mean())
    print(
        f"csve ({args.penalised}) on {args.dataset.name} ({data.info.env}, {len(data):,} "
        f"transitions): {args.num_seeds} seeds x {summary['gradient_steps']:,} gradient steps; "
        f"{said} " + ", ".join(f"{s:.1f}" for s in scores) + f" (mean {np.mean(scores):.1f}); "
        f"last penalty E[V(s^)] - E[V(s')] {penalty:.2f}"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
