"""`rlsuite dataset collect`: an offline dataset in the D4RL layout, recorded from our own SAC or
TD3 (`rlsuite.app.collect`) at a quality from random to expert.

    rlsuite dataset collect --env pendulum --quality medium --size 100000 --out data/p-m.hdf5
"""

from __future__ import annotations

import dataclasses
import sys
import time

import jax

from rlsuite.agents import registry
from rlsuite.app.argv import parse
from rlsuite.app.errors import UsageError, choose
from rlsuite.app.tuned import behaviour


@dataclasses.dataclass
class CollectArgs:
    env: str
    """environment name (`envs.names()`); it needs a bounded continuous action space"""
    quality: str
    """random, medium, expert, medium-replay or medium-expert"""
    size: int
    """transitions to record (medium-replay keeps the whole medium run instead)"""
    out: str
    """HDF5 file to write, in the D4RL layout (must not exist unless --overwrite)"""
    algo: str = "sac"
    """behaviour algorithm: sac or td3 (its tuned defaults for the environment; a Brax environment
    without any borrows brax/hopper's)"""
    seed: int = 0
    """seed of the collection: the same seed gives the same dataset"""
    total_timesteps: int | None = None
    """training budget of the expert (default: the tuned one)"""
    num_envs: int = 10
    """parallel environments while recording"""
    eval_episodes: int = 20
    """episodes of each reference return (random and expert)"""
    overwrite: bool = False
    """replace an existing file"""


def main(argv: list[str]) -> dict:
    from rlsuite.app import collect
    from rlsuite.data.dataset_files import save_d4rl
    from rlsuite.loop.files import check_new_file

    if argv and argv[0] in ("-h", "--help"):
        print(
            "usage: rlsuite dataset collect --env NAME --quality QUALITY --size N --out FILE\n\n"
            "collect: an offline dataset (D4RL layout) from the policies of our own SAC or TD3 "
            "trained on NAME; rlsuite dataset collect --help lists its flags, and rlsuite train "
            "ALGO --dataset FILE trains an offline algorithm on it."
        )
        raise SystemExit(0)
    if not argv or argv[0] != "collect":
        raise UsageError("dataset needs a subcommand: rlsuite dataset collect --help")
    args = parse(CollectArgs, argv[1:], "rlsuite dataset collect")
    choose("quality", args.quality, collect.QUALITIES)
    choose("behaviour algorithm", args.algo, ("sac", "td3"))
    out = check_new_file(args.out, overwrite=args.overwrite, hint=" or pass --overwrite")
    from rlsuite import envs

    env, env_params = envs.make(args.env)
    algo = registry.get(args.algo)
    defaults = behaviour(args.algo, args.env)
    config = {**defaults["config"]}
    if args.total_timesteps is not None:
        config["total_timesteps"] = args.total_timesteps
    config = algo.config_cls(**config)
    if args.quality == "medium-replay":  # the buffer keeps the whole medium run
        size = max(config.buffer_size, config.total_timesteps)
        config = dataclasses.replace(config, buffer_size=size)
    agent = algo.make(config, env, env_params)
    start = time.perf_counter()
    collect.check(agent, args.quality, args.size, args.num_envs)
    key_behaviour, key_data = jax.random.split(jax.random.key(args.seed))
    hparams, medium = algo.hparams_cls(**defaults["hparams"]), collect.needs_medium(args.quality)
    runs = collect.train_behaviour(
        agent, hparams, key_behaviour, args.env, medium, args.eval_episodes, seed=args.seed
    )
    data = collect.dataset(agent, runs, key_data, args.quality, args.size, args.num_envs)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_d4rl(out, data, overwrite=args.overwrite)
    info = data.info
    if len(data) != args.size:
        print(
            f"rlsuite dataset collect: note: {args.quality} keeps the whole replay buffer of the "
            f"medium run, {len(data):,} transitions, whatever --size",
            file=sys.stderr,
        )
    summary = {"out": str(out), "transitions": len(data), **info.to_dict()}
    print(
        f"{args.quality} dataset of {len(data):,} transitions on {args.env} in "
        f"{time.perf_counter() - start:.0f} s: random return {info.random_return:.1f}, expert "
        f"return {info.expert_return:.1f}; wrote {out}"
    )
    return summary
