"""What an environment is evaluated on, declared by the environment (or its wrapper) as its
`evaluation`: plain episodes (`Evaluation`, every environment's default), goal success and time
near the goal (`GoalSuccess`, the goal contract's), trials with the adaptation curve and summed
info keys such as regret (`Trials`, the RL^2 wrapper's), achievements and their success rates
(`Achievements`, Craftax's), and named held-out levels with their
solve rates around another evaluation (`HeldOutLevels`, declared by an environment with `Levels`).

An evaluation is called with an `Evaluator`, which the training loop implements
(`rlsuite.loop.policy_evaluation`): it plays every run's policy for episodes, trials or attempts on
levels and returns host arrays. The evaluation returns `(returns [num_runs, episodes], entries)`,
whose entries `final.json` and `rlsuite eval` add to the returns' summary, and `describe` turns
those entries into the lines `rlsuite eval` prints. A new kind of evaluation is a subclass
declared by its environment; nothing in the loop or the command line names the kinds.

An evaluation may also name `references`: what known policies earn on the same task
distribution (random, Thompson sampling, Bayes-optimal for a bandit), which `rlsuite eval`
prints beside the run's own result and saves with it.

    class MyEnv(Environment):
        @property
        def evaluation(self):
            return MyEvaluation()
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import numpy as np


class Reference(NamedTuple):
    """What a known policy earns per trial (per episode outside trials) on the distribution the
    run is evaluated on: `total` its expected total reward, `stderr` the standard error of a
    simulated mean (None where `total` is exact), `regret` its expected regret where the task
    reports one (with `regret_stderr`), `basis` how the figure was obtained, in words."""

    name: str
    total: float
    stderr: float | None
    regret: float | None
    regret_stderr: float | None
    basis: str


class EpisodesResult(NamedTuple):
    returns: np.ndarray  # [num_runs, episodes]
    sums: dict  # info key -> its sum over each episode, [num_runs, episodes]


class TrialsResult(NamedTuple):
    returns: np.ndarray  # [num_runs, trials]: each trial's return
    episode_returns: np.ndarray  # [num_runs, trials, episodes]: each episode's inside them
    sums: dict  # info key -> its sum over each trial, [num_runs, trials]
    curve: tuple | None  # (mean, low, high) per episode index across runs (None: no episodes)


class Evaluator(Protocol):
    """Every run's policy played inside `jit` (`rlsuite.loop.policy_evaluation.Evaluator`)."""

    env: Any
    env_params: Any
    deterministic: bool  # the actions asked for: the policy's mode (True) or sampled

    def info_keys(self) -> set[str]:
        """The keys of the `info` dict the environment's `step` returns."""
        ...

    def episodes(
        self, sums: tuple[str, ...] = (), deterministic: bool | None = None
    ) -> EpisodesResult:
        """Each run's episodes, with the actions asked for (or `deterministic`'s)."""
        ...

    def trials(self, sums: tuple[str, ...] = ()) -> TrialsResult: ...

    def levels(self, level_params: Any, deterministic: bool | None = None) -> np.ndarray:
        """Returns `[num_runs, num_levels, attempts]` on the levels of `level_params` [N], with
        the actions asked for (or `deterministic`'s)."""
        ...

    def level_trials(self, level_params: Any) -> TrialsResult:
        """Whole trials of a task family on the tasks of `level_params` [N] (`GivenTask`
        params), as many attempts on each as `levels` plays, with the actions asked for:
        returns `[num_runs, N, attempts]`, episode_returns `[num_runs, N, attempts, episodes]`
        and the adaptation curve across runs (each run's mean over the tasks and attempts)."""
        ...


class Evaluation:
    """Episodes: each run's returns, with nothing added."""

    def __call__(self, ev: Evaluator) -> tuple[np.ndarray, dict]:
        return ev.episodes().returns, {}

    def describe(self, entries: dict) -> str | None:
        """What `rlsuite eval` prints of `entries` besides the summary (None: nothing)."""
        return None

    def references(self, env_params: Any, key: Any) -> list[Reference]:
        """Known policies' results on the distribution evaluated (none by default)."""
        return []


class GoalSuccess(Evaluation):
    """Goal environments (`rlsuite.environment.goal`): the share of episodes that reached the
    goal and the steps spent near it, from `info["success"]`."""

    def __call__(self, ev: Evaluator) -> tuple[np.ndarray, dict]:
        result = ev.episodes(("success",))
        return result.returns, goal_summary(result.sums["success"])


class Trials(Evaluation):
    """Task families under the RL^2 wrapper: each episode of the evaluation is a trial; the
    adaptation curve across the trial's episodes, and each of `sums` (info keys the family
    reports, where it does) summed per trial."""

    def __init__(self, sums: tuple[str, ...] = ("regret",), references=None):
        self.sums = tuple(sums)
        self._references = references  # (env_params, key) -> list[Reference], or None

    def references(self, env_params: Any, key: Any) -> list[Reference]:
        return [] if self._references is None else self._references(env_params, key)

    def __call__(self, ev: Evaluator) -> tuple[np.ndarray, dict]:
        reported = ev.info_keys()
        result = ev.trials(tuple(k for k in self.sums if k in reported))
        return result.returns, trial_summary(result)

    def describe(self, entries: dict) -> str | None:
        return adaptation_table(entries["adaptation"]) if "adaptation" in entries else None


ACHIEVEMENT = "achievement/"  # the info key prefix of an achievement unlocked on a step


class Achievements(Evaluation):
    """Episodes of an environment with achievements (Craftax), which reports
    `info["achievement/<name>"]`, 1 on the step where the episode first unlocks `<name>`, else 0:
    with greedy and with sampled actions both (a policy's mode often stalls where its samples
    go on; Craftax's results are of sampled actions), per seed and in the mean, the
    achievements unlocked per episode (`eval_achievements_greedy_*`, `eval_achievements_sampled_*`)
    and each one's success rate, the share of episodes that unlocked it
    (`eval_achievement_rates_greedy`, `..._sampled`: name -> per seed)."""

    def __init__(self, names: tuple[str, ...]):
        self.names = tuple(names)

    def __call__(self, ev: Evaluator) -> tuple[np.ndarray, dict]:
        keys = tuple(ACHIEVEMENT + name for name in self.names)
        asked = ev.episodes(keys)
        other = ev.episodes(keys, deterministic=not ev.deterministic)
        by_mode = {ev.deterministic: asked, not ev.deterministic: other}
        entries = {}
        for mode in (True, False):
            entries.update(achievement_summary(self.names, by_mode[mode].sums, actions_word(mode)))
        return asked.returns, entries

    def describe(self, entries: dict) -> str | None:
        lines = []
        for mode in ("greedy", "sampled"):
            rates = entries.get(f"eval_achievement_rates_{mode}")
            if not rates:
                continue
            mean = entries[f"eval_achievements_{mode}_mean"]
            lines += [
                f"achievements per episode, {mode} actions: {mean:.2f} of {len(rates)}",
                "| achievement | success rate |",
                "|---|---:|",
            ]
            lines += [f"| {name} | {np.mean(seeds):.3f} |" for name, seeds in rates.items()]
        return "\n".join(lines) if lines else None


def achievement_summary(names: tuple[str, ...], sums: dict, actions: str) -> dict:
    """What `final.json` and `rlsuite eval` say of the achievements of each run's episodes with
    `actions` (`greedy` or `sampled`; `sums`: `info["achievement/<name>"]` summed per episode,
    `[num_runs, episodes]`)."""
    unlocked = np.stack([np.asarray(sums[ACHIEVEMENT + name]) > 0 for name in names], axis=-1)
    per_seed = unlocked.sum(axis=-1).mean(axis=1)
    rates = unlocked.mean(axis=1)  # [num_runs, achievements]
    return {
        f"eval_achievements_{actions}_per_seed": per_seed.tolist(),
        f"eval_achievements_{actions}_mean": float(per_seed.mean()),
        f"eval_achievement_rates_{actions}": {
            name: rates[:, i].tolist() for i, name in enumerate(names)
        },
    }


def actions_word(deterministic: bool) -> str:
    return "greedy" if deterministic else "sampled"


class SolveRates(Evaluation):
    """A levelled environment's episodes on its own random levels (a maze with a generator):
    the returns with the actions asked for, and the solve rate (the share of episodes with a
    return above 0) with greedy and with sampled actions both, since a young student often
    solves with sampled actions what its mode never does: `eval_solve_rate_greedy_*` and
    `eval_solve_rate_sampled_*`."""

    def __call__(self, ev: Evaluator) -> tuple[np.ndarray, dict]:
        returns = ev.episodes().returns
        other = ev.episodes(deterministic=not ev.deterministic).returns
        by_mode = {ev.deterministic: returns, not ev.deterministic: other}
        entries = {}
        for mode in (True, False):
            per_seed = (np.asarray(by_mode[mode]) > 0).mean(axis=1)
            name = f"eval_solve_rate_{actions_word(mode)}"
            entries[f"{name}_per_seed"] = per_seed.tolist()
            entries[f"{name}_mean"] = float(per_seed.mean())
        return returns, entries


class HeldOutLevels(Evaluation):
    """An environment with named held-out levels (`Levels.held_out`, the maze's eight): `base`'s
    evaluation, then as many attempts as its episodes on each held-out level, with the actions
    asked for (`returns`, their kind in `actions`) and with the other kind
    (`returns_greedy` or `returns_sampled`)."""

    def __init__(self, base: Evaluation, levels: Any):
        self.base, self.levels = base, levels

    def __call__(self, ev: Evaluator) -> tuple[np.ndarray, dict]:
        returns, entries = self.base(ev)
        names, levels = self.levels.held_out()
        params = self.levels.params_for(ev.env_params, levels)
        other = not ev.deterministic
        held_out = {
            "names": list(names),
            "actions": actions_word(ev.deterministic),
            "returns": np.asarray(ev.levels(params)).tolist(),
            f"returns_{actions_word(other)}": np.asarray(ev.levels(params, other)).tolist(),
        }
        return returns, {"held_out": held_out, **entries}

    def describe(self, entries: dict) -> str | None:
        lines = [self.base.describe(entries)]
        if "held_out" in entries:
            held_out = entries["held_out"]
            for mode, returns in held_out_returns(held_out).items():
                lines.append(f"held-out levels, {mode} actions:")
                lines.append(solve_rate_table(held_out["names"], returns))
        lines = [line for line in lines if line is not None]
        return "\n".join(lines) if lines else None

    def references(self, env_params: Any, key: Any) -> list[Reference]:
        return self.base.references(env_params, key)


class HeldOutTasks(HeldOutLevels):
    """A task family with named held-out tasks (`rlsuite.environment.meta.TaskLevels`): `base`'s
    trials, then as many whole trials as its episodes on each held-out task, as `HeldOutLevels`
    reports levels (`held_out`: each trial's return, with the actions asked for and with the
    other kind), with the adaptation curve on them (`held_out_adaptation`: the mean return per
    episode of a trial, its interval across runs, each run's curve and each task's)."""

    def __call__(self, ev: Evaluator) -> tuple[np.ndarray, dict]:
        returns, entries = self.base(ev)
        names, tasks = self.levels.held_out()
        params = self.levels.params_for(ev.env_params, tasks)
        asked = ev.level_trials(params)
        other = not ev.deterministic
        held_out = {
            "names": list(names),
            "actions": actions_word(ev.deterministic),
            "returns": np.asarray(asked.returns).tolist(),
            f"returns_{actions_word(other)}": np.asarray(ev.levels(params, other)).tolist(),
        }
        entries = {"held_out": held_out, **entries}
        if asked.curve is not None:
            mean, low, high = asked.curve
            episode_returns = np.asarray(asked.episode_returns)  # [runs, tasks, attempts, E]
            per_task = episode_returns.mean(axis=(0, 2))
            entries["held_out_adaptation"] = {
                "episode_return_mean": mean.tolist(),
                "episode_return_low": low.tolist(),
                "episode_return_high": high.tolist(),
                "episode_return_per_seed": episode_returns.mean(axis=(1, 2)).tolist(),
                "episode_return_per_task": dict(zip(names, per_task.tolist(), strict=True)),
            }
        return returns, entries

    def describe(self, entries: dict) -> str | None:
        lines = [super().describe(entries)]
        if lines[0] is not None:  # an attempt is a whole trial: solved where its return is > 0
            lines[0] = lines[0].replace("held-out levels,", "held-out tasks (trial returns),")
        if "held_out_adaptation" in entries:
            table = adaptation_table(entries["held_out_adaptation"])
            lines.append(table.replace("adaptation:", "adaptation on the held-out tasks:", 1))
        lines = [line for line in lines if line is not None]
        return "\n".join(lines) if lines else None


def held_out_returns(held_out: dict) -> dict[str, Any]:
    """The returns of an evaluation's `held_out` entry by the actions that earned them, greedy
    then sampled, where it holds them (`[num_runs, num_levels, attempts]` each; an entry written
    before both were kept holds the greedy ones only)."""
    asked = held_out.get("actions", "greedy")
    found = {}
    for mode in ("greedy", "sampled"):
        returns = held_out["returns"] if mode == asked else held_out.get(f"returns_{mode}")
        if returns is not None:
            found[mode] = returns
    return found


def with_held_out(levels: Any, base: Evaluation | None = None) -> Evaluation:
    """`base` (default: episodes), with `HeldOutLevels` where `levels` (a `Levels`) names
    held-out levels."""
    base = Evaluation() if base is None else base
    if levels is None or levels.held_out is None:
        return base
    return HeldOutLevels(base, levels)


def goal_summary(success_steps: np.ndarray) -> dict:
    """What `final.json` and `rlsuite eval` say of a goal environment's episodes (its
    `info["success"]` summed per episode, `[num_runs, episodes]`): per seed and in the mean,
    `success_any` (the share of episodes with a success step) and `time_near_goal` (steps per
    episode within the threshold of the goal)."""
    success_steps = np.asarray(success_steps)
    any_per_seed = (success_steps > 0).mean(axis=1)
    near_per_seed = success_steps.mean(axis=1)
    return {
        "eval_success_any_per_seed": any_per_seed.tolist(),
        "eval_success_any_mean": float(any_per_seed.mean()),
        "eval_time_near_goal_per_seed": near_per_seed.tolist(),
        "eval_time_near_goal_mean": float(near_per_seed.mean()),
    }


def trial_summary(result: TrialsResult) -> dict:
    """What `final.json` and `rlsuite eval` say of a task family's trials: the adaptation curve
    (mean return per episode index of the trial, bootstrap 95% interval across seeds, and each
    seed's curve) and each summed info key's mean per trial, per seed."""
    episode_returns = np.asarray(result.episode_returns)
    summary = {}
    if result.curve is not None:
        mean, low, high = result.curve
        summary["adaptation"] = {
            "episode_return_mean": mean.tolist(),
            "episode_return_low": low.tolist(),
            "episode_return_high": high.tolist(),
            "episode_return_per_seed": episode_returns.mean(axis=1).tolist(),
        }
    for name, values in result.sums.items():
        per_seed = np.asarray(values).mean(axis=1)
        summary[f"eval_{name}_per_seed"] = per_seed.tolist()
        summary[f"eval_{name}_mean"] = float(per_seed.mean())
    return summary


def adaptation_table(adaptation: dict) -> str:
    """The adaptation curve as lines of text: per episode index of the trial, the mean return
    and its 95% interval across seeds."""
    lines = ["adaptation: mean return per episode of a trial (95% bootstrap interval, seeds)"]
    rows = zip(
        adaptation["episode_return_mean"],
        adaptation["episode_return_low"],
        adaptation["episode_return_high"],
        strict=True,
    )
    for i, (mean, low, high) in enumerate(rows, start=1):
        lines.append(f"  episode {i:>3}: {mean:9.3f}  [{low:.3f}, {high:.3f}]")
    return "\n".join(lines)


def reference_table(references: list[Reference], summary: dict, runs_word: str = "seeds") -> str:
    """A markdown table of `references` below a row of the run's own mean result (`summary`'s
    `eval_return_mean` and, where it has one, `eval_regret_mean`), with how each was obtained."""
    regret = "eval_regret_mean" in summary or any(r.regret is not None for r in references)

    def figure(value, stderr):
        if value is None:
            return "-"
        return f"{value:.4g}" if stderr is None else f"{value:.4g} ± {stderr:.2g}"

    def row(name, total, stderr, regret_value, regret_stderr, basis):
        cells = [name, figure(total, stderr)]
        if regret:
            cells.append(figure(regret_value, regret_stderr))
        return "| " + " | ".join([*cells, basis]) + " |"

    head = ["policy", "total reward per trial", *(["regret per trial"] if regret else []), "basis"]
    own = summary.get("eval_return_mean")
    lines = [
        "references: known policies on the same task distribution (± one standard error)",
        "",
        "| " + " | ".join(head) + " |",
        "|---|" + "---:|" * (len(head) - 2) + "---|",
        row(
            "this run",
            own,
            None,
            summary.get("eval_regret_mean"),
            None,
            f"mean over {_counted(len(summary.get('eval_return_per_seed') or []), runs_word)} "
            f"of {_counted(summary['episodes'], 'trials')} each",
        ),
    ]
    lines += [row(*r) for r in references]
    return "\n".join(lines)


def _counted(count: int, nouns: str) -> str:
    """`2 seeds`, `1 seed`: `count` with its noun (`nouns`, the plural), singular for one (as
    `rlsuite.ops.validators.counted`, which this layer does not import)."""
    return f"{count} {nouns if count != 1 else nouns.removesuffix('s')}"


def solve_rate_table(names, returns) -> str:
    """A markdown table of held-out levels: per level its name, solve rate (the share of
    attempts with a return above 0), mean return and number of attempts, then a `mean` row
    (the means over the levels, the attempts summed).

    `returns` is `[num_levels, attempts]` (`rlsuite.loop.episodes.evaluate_levels`) or
    `[num_runs, num_levels, attempts]` (`evaluate_levels_batch`), whose runs' attempts are
    pooled; `names` has one name per level.
    """
    values = np.asarray(returns, dtype=np.float64)
    names = list(names)
    if values.ndim == 3:
        values = np.moveaxis(values, 1, 0).reshape(values.shape[1], -1)
    if values.ndim != 2 or values.shape[0] != len(names) or values.shape[1] == 0:
        raise ValueError(
            f"solve_rate_table: returns must be [num_levels, attempts] or [num_runs, "
            f"num_levels, attempts] with {len(names)} levels (one per name) and at least one "
            f"attempt, got shape {np.shape(returns)}"
        )
    solved = (values > 0).mean(axis=1)
    means = values.mean(axis=1)
    lines = ["| level | solve rate | mean return | attempts |", "|---|---:|---:|---:|"]
    for name, rate, mean in zip(names, solved, means, strict=True):
        lines.append(f"| {name} | {rate:.2f} | {mean:.3f} | {values.shape[1]} |")
    lines.append(f"| mean | {solved.mean():.2f} | {means.mean():.3f} | {values.size} |")
    return "\n".join(lines)
