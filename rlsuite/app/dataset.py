"""`rlsuite dataset collect`: an offline dataset in the D4RL layout, recorded from our own SAC or
TD3 (`rlsuite.app.collect`) at a quality from random to expert.

    rlsuite dataset collect --env pendulum --quality medium --size 100000 --out data/p-m.hdf5
    rlsuite dataset collect --env pendulum --env-option gravity=12.0 --quality random ...
"""

from __future__ import annotations

import dataclasses
import sys
import time

import jax

from rlsuite.agents import registry
from rlsuite.app.argv import env_options, parse, read
from rlsuite.app.errors import UsageError, choose
from rlsuite.app.run_record import env_label
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
    env_option: tuple[str, ...] = ()
    """options of the environment, FIELD=VALUE ..., as `rlsuite train` takes them (a field of
    its params, pendulum's gravity=12.0, or an argument of its constructor); recorded in the
    dataset's info (`extra["env_options"]`)"""
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
    line = read(argv[1:])  # the --env-option words gathered, as rlsuite train reads them
    args = parse(CollectArgs, list(line.parser_words()), "rlsuite dataset collect")
    choose("quality", args.quality, collect.QUALITIES)
    choose("behaviour algorithm", args.algo, ("sac", "td3"))
    out = check_new_file(args.out, overwrite=args.overwrite, hint=" or pass --overwrite")
    from rlsuite import envs

    options = envs.options.parse_options(args.env, env_options(list(line.env_options)))
    env, env_params = envs.make(args.env, **options)  # an unknown option is refused here
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
    said = "and the medium run " if medium else ""
    why = " (the expert's return is the dataset's reference)" if args.quality == "random" else ""
    print(
        f"rlsuite dataset collect: training the {algo.name} expert {said}on {args.env} first, "
        f"{config.total_timesteps:,} env steps{why}",
        file=sys.stderr,
    )
    runs = collect.train_behaviour(
        agent, hparams, key_behaviour, args.env, medium, args.eval_episodes, seed=args.seed
    )
    recorded = envs.options.options_to_json(options)
    if recorded:  # the environment the dataset was made in: its name and its options
        extra = {**runs.info.extra, "env_options": recorded}
        runs = runs._replace(info=dataclasses.replace(runs.info, extra=extra))
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
    label = env_label(args.env, recorded)
    print(
        f"{args.quality} dataset of {len(data):,} transitions on {label} in "
        f"{time.perf_counter() - start:.0f} s: random return {info.random_return:.1f}, expert "
        f"return {info.expert_return:.1f}; wrote {out}"
    )
    return summary
