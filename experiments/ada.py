"""A curriculum over meta-RL tasks (AdA-style) in one file: copy it, change the task score (or
anything else), run it.

    python experiments/ada.py                                   # meta/maze with walls: dr, plr
    python experiments/ada.py --curriculum dr plr accel --num-seeds 5
    python experiments/ada.py --curriculum dr plr --score-idea near-best --out runs/ada_near
    python experiments/ada.py --env meta/bandit --curriculum dr robust_plr

The RL^2 student of UED (recurrent PPO whose memory resets at trial ends, `rlsuite.agents.ued`)
trains on a task family whose tasks are levels (`rlsuite.environment.meta.TaskLevels`): `dr`
plays a task drawn by the family's sampler in every trial; `plr`, `robust_plr` and `accel`
choose the tasks from a buffer ranked by a task score (`--score-idea`: MaxMC, positive value
loss, SFL's learnability read at each trial's end, or `near-best` below), each curriculum from
the same keys and at the same env steps. `meta/maze` draws walls (`--wall-density`, the largest
density of a task) and is evaluated on six held-out layouts; `meta/bandit` on five held-out
bandits. Every config and hyperparameter field is a flag (`--help`), the suite's tuned values for
the family as defaults.

At the end every seed's policy (greedy) plays trials on each held-out task; the script prints,
per curriculum, the mean trial return on them (mean over seeds, 95% bootstrap interval) and its
adaptation curve (the return of each episode of a trial), each curriculum minus `dr` with the
paired bootstrap interval, and each task's return. In `--out`, each curriculum's run (checkpoints,
metrics, `final.json`: `--resume` with the same flags continues them after a kill) and
`adaptation.png` (the held-out adaptation curve of each curriculum).
"""

import dataclasses
import json
import pathlib
import sys
from typing import Annotated, Literal, get_args

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import ued
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.plotting import plot_adaptation
from rlsuite.app.tuned import tuned
from rlsuite.loop import files, platform, runner
from rlsuite.ops import level_scores
from rlsuite.ops.bootstrap import bootstrap_ci


def running_returns(dones, rewards):
    """`[T, N]`: the return of each env's trial up to and including step t."""

    def step(total, xs):
        done, reward = xs
        total = total + reward
        return jnp.where(done, 0.0, total), total

    _, returns = jax.lax.scan(step, jnp.zeros(rewards.shape[1:], rewards.dtype), (dones, rewards))
    return returns


def near_best(config, transitions, advantages, max_returns):
    """An idea to try: SFL's learnability `p (1 - p)` with a trial a success where its return
    comes within 0.2 |R_max| of the best return the task has given (`R_max`: this rollout's,
    raised to `max_returns`, the best seen before), so a task scores where the student sometimes
    does as well on it as it can and sometimes not (SFL's own success needs a reward > 0 at the
    trial's last step)."""
    tr = transitions
    dones = tr.terminated | tr.truncated
    best = jnp.fmax(level_scores.max_return(dones, tr.reward), max_returns)
    success = running_returns(dones, tr.reward) >= best - 0.2 * jnp.abs(best)
    return level_scores.learnability(dones, success)


# None: the configured score (`UEDConfig.score`); a function: passed to `ued.make` as `score`.
SCORE_IDEAS = {"maxmc": None, "pvl": None, "learnability": None, "near-best": near_best}
Curriculum = Literal["dr", "plr", "robust_plr", "accel"]
ENV_OPTIONS = {"meta/maze": ("wall_density",), "meta/bandit": ()}  # flags of this script
FIXED_OPTIONS = {"meta/maze": {}, "meta/bandit": {"held_out": True}}


@dataclasses.dataclass(frozen=True)
class Config(ued.UEDConfig):
    """The student's and the curriculum's `UEDConfig`; its curriculum and score come from
    --curriculum and --score-idea."""

    curriculum: tyro.conf.Suppress[str] = "plr"  # --curriculum (a list)
    score: tyro.conf.Suppress[str] = "maxmc"  # --score-idea


@dataclasses.dataclass
class Args:
    config: Annotated[Config, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[ued.UEDHparams, tyro.conf.OmitArgPrefixes]
    env: Literal["meta/maze", "meta/bandit"] = "meta/maze"
    """task family"""
    wall_density: float = 0.4
    """meta/maze: the largest wall density of a task (each task's ~ U[0, this])"""
    curriculum: list[Curriculum] = dataclasses.field(default_factory=lambda: ["dr", "plr"])
    """curricula to train, one after the other"""
    score_idea: Literal["maxmc", "pvl", "learnability", "near-best"] = "maxmc"
    """the task score of plr, robust_plr and accel: a configured one, or the idea in this file"""
    num_seeds: int = 5
    """independent runs per curriculum, vmapped"""
    seed: int = 0
    """seed of the runs (every curriculum starts from the same keys)"""
    eval_episodes: int = 50
    """trials per seed on each held-out task (and on the family's own tasks) at the end"""
    out: str = "runs/ada"
    """directory for each curriculum's run and adaptation.png"""
    resume: bool = False
    """continue the runs in --out from their last checkpoints (give the same flags)"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, "meta/maze")
    defaults = tuned("ued", env_name)
    default = Args(
        config=Config(**defaults["config"]),
        hparams=ued.UEDHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    for name in ("num_seeds", "eval_episodes"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not args.curriculum:
        raise ValueError("--curriculum is empty; give some of " + ", ".join(get_args(Curriculum)))
    curricula = list(dict.fromkeys(args.curriculum))  # in order, each once
    out = pathlib.Path(args.out)
    picture = out / "adaptation.png"
    if not args.resume:
        files.check_new_file(picture, "--out", hint=" (the script never replaces its results)")
    options = {name: getattr(args, name) for name in ENV_OPTIONS[args.env]}
    options.update(FIXED_OPTIONS[args.env])
    env, env_params = envs.make(args.env, **options)
    agents = {c: make_agent(args, c, env, env_params) for c in curricula}
    for agent in agents.values():
        agent.check_hparams(args.hparams)  # before anything is compiled

    summaries = {}
    for curriculum, agent in agents.items():
        final = out / curriculum / "final.json"
        if args.resume and final.exists():  # this curriculum's run had finished before
            summaries[curriculum] = json.loads(final.read_text())
            continue
        result = runner.fit(
            agent,
            jax.random.key(args.seed),
            args.hparams,
            schedule=runner.Schedule(num_seeds=args.num_seeds),
            output=runner.Output(
                out_dir=out / curriculum,
                resume=args.resume,
                env_name=args.env,
                metadata={"score_idea": args.score_idea, "env_options": options},
            ),
            final=runner.Final(eval_episodes=args.eval_episodes),
        )
        summaries[curriculum] = result.summary
    print(report(summaries))
    curves = [(c, s["held_out_adaptation"]) for c, s in summaries.items()]
    plot_adaptation(curves, picture)
    print(f"wrote {picture}")
    return {c: {k: s[k] for k in ("held_out", "held_out_adaptation")} for c, s in summaries.items()}


def make_agent(args: Args, curriculum: str, env, env_params):
    """The UED agent of `curriculum`: the flags' config with its curriculum and score."""
    fields = {f.name: getattr(args.config, f.name) for f in dataclasses.fields(ued.UEDConfig)}
    idea = SCORE_IDEAS[args.score_idea]
    fields.update(curriculum=curriculum, score="maxmc" if idea is not None else args.score_idea)
    return ued.make(ued.UEDConfig(**fields), env, env_params, score=idea)


def report(summaries: dict) -> str:
    """Markdown: per curriculum, the held-out trial return and each episode of the adaptation
    curve (mean over seeds [95% bootstrap interval]); each curriculum minus dr, paired; then
    each held-out task's trial return."""

    def cell(values):
        values = np.asarray(values, np.float64)
        low, high = bootstrap_ci(values[:, None])
        return f"{values.mean():.3f} [{low[0]:.3f}, {high[0]:.3f}]"

    per_seed = {
        c: np.asarray(s["held_out"]["returns"]).mean(axis=(1, 2)) for c, s in summaries.items()
    }
    episodes = len(next(iter(summaries.values()))["held_out_adaptation"]["episode_return_mean"])
    lines = [
        "held-out tasks, greedy trials: mean over seeds [95% bootstrap interval across seeds]",
        "| curriculum | trial return | "
        + " | ".join(f"episode {i + 1}" for i in range(episodes))
        + " |",
        "|---|" + "---:|" * (episodes + 1),
    ]
    for c, s in summaries.items():
        curve = np.asarray(s["held_out_adaptation"]["episode_return_per_seed"])
        cells = [cell(per_seed[c]), *(cell(curve[:, i]) for i in range(episodes))]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    if "dr" in per_seed:
        for c in per_seed:
            if c != "dr":
                lines.append(f"| {c} - dr (paired) | {cell(per_seed[c] - per_seed['dr'])} |")
    names = next(iter(summaries.values()))["held_out"]["names"]
    lines += ["", "| task | " + " | ".join(summaries) + " |", "|---|" + "---:|" * len(summaries)]
    for i, name in enumerate(names):
        row = [
            f"{np.mean(np.asarray(s['held_out']['returns'])[:, i]):.3f}" for s in summaries.values()
        ]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
