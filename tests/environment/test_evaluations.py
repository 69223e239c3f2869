"""What an environment declares it is evaluated on (`rlsuite.environment.evaluations`) and the
loop's `Evaluator` that plays it (`rlsuite.loop.policy_evaluation`)."""

import json

import numpy as np
import pytest
from rlsuite.envs.cartpole import CartPole

from rlsuite import envs
from rlsuite.app import cli
from rlsuite.environment import evaluations
from tests.app.test_cli import TINY


class LongEpisodes(evaluations.Evaluation):
    """A toy kind of evaluation: the share of each run's episodes that last over 20 steps (a
    CartPole episode's return is its length)."""

    def __call__(self, ev):
        result = ev.episodes()
        share = (result.returns > 20).mean(axis=1)
        return result.returns, {
            "eval_long_per_seed": share.tolist(),
            "eval_long_mean": float(share.mean()),
        }

    def describe(self, entries):
        return f"long episodes: {entries['eval_long_mean']:.3f} of them"


class ToyCartPole(CartPole):
    @property
    def evaluation(self):
        return LongEpisodes()


@pytest.fixture
def toy_env():
    envs.register("toy/cartpole", ToyCartPole, max_episode_steps=100)
    yield "toy/cartpole"
    envs.registry.REGISTERED.pop("toy/cartpole")


def test_a_new_kind_of_evaluation_is_one_object_declared_by_its_environment(
    toy_env, tmp_path, capsys
):
    """Declared by the environment, the toy evaluation reaches final.json, `rlsuite eval` and the
    report through the loop's and the command line's own code, none of which names it."""
    out = tmp_path / "toy"
    budget = ["--total-timesteps", "128", "--chunks", "1", "--eval-episodes", "4", *TINY]
    assert cli.main(["train", "ppo", "--env", toy_env, "--out", str(out), *budget]) == 0
    final = json.loads((out / "final.json").read_text())
    lengths = np.asarray(final["eval_return_per_seed"])  # the mean length; the share is apart
    assert len(final["eval_long_per_seed"]) == 1 and lengths.shape == (1,)
    assert 0 <= final["eval_long_mean"] <= 1
    capsys.readouterr()
    assert cli.main(["eval", str(out), "--episodes", "5"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "eval_greedy_5_seed0.json").read_text())
    assert summary["episodes"] == 5 and len(summary["eval_long_per_seed"]) == 1
    assert "| seed | eval_return | eval_long |" in printed  # the table, then the toy's line
    assert f"long episodes: {summary['eval_long_mean']:.3f} of them\nwrote " in printed
    assert cli.main(["report", str(out)]) == 0
    page = (out / "report.md").read_text()
    assert "| seed | eval_return | eval_long |" in page


def test_each_kind_of_environment_declares_its_evaluation():
    kinds = {
        "cartpole": evaluations.Evaluation,
        "maze/small": evaluations.SolveRates,  # 7 x 7: no held-out mazes
        "maze": evaluations.HeldOutLevels,
        "goal/point_reach": evaluations.GoalSuccess,
        "point_mass": evaluations.GoalSuccess,
        "meta/bandit": evaluations.Trials,
    }
    for name, kind in kinds.items():
        env, _ = envs.make(name)
        assert type(env.evaluation) is kind, name
    maze, _ = envs.make("maze")
    assert type(maze.evaluation.base) is evaluations.SolveRates


class FakeEvaluator:
    """Hand-made results in place of played episodes."""

    env, env_params = None, None

    def __init__(self, keys=("regret",), deterministic=True):
        self.keys, self.asked, self.deterministic = set(keys), [], deterministic

    def info_keys(self):
        return self.keys

    def episodes(self, sums=(), deterministic=None):
        mode = self.deterministic if deterministic is None else deterministic
        self.asked.append(("episodes", sums) if mode else ("sampled episodes", sums))
        success = np.array([[0.0, 3.0, 1.0, 0.0], [2.0, 2.0, 0.0, 0.0]])
        if not mode:  # sampled: run 0 solves 3 of its 4 episodes, run 1 one
            returns = np.array([[1.0, 0.5, 0.0, 2.0], [0, 0, 0, 0.1]])
        else:  # greedy: run 0 solves 1, run 1 none
            returns = np.array([[0.0, 0.0, 0.0, 1.0], [0, 0, 0, 0]])
        return evaluations.EpisodesResult(returns, {"success": success})

    def trials(self, sums=()):
        self.asked.append(("trials", sums))
        episode_returns = np.zeros((2, 3, 2))
        curve = (np.array([1.0, 2.0]), np.array([0.5, 1.5]), np.array([1.5, 2.5]))
        return evaluations.TrialsResult(
            np.ones((2, 3)), episode_returns, {k: np.full((2, 3), 0.25) for k in sums}, curve
        )

    def levels(self, level_params, deterministic=None):
        mode = self.deterministic if deterministic is None else deterministic
        self.asked.append(("levels", level_params) if mode else ("sampled levels", level_params))
        if not mode:
            return np.array([[[1.0, 1.0]], [[1.0, 0.0]]])
        return np.array([[[1.0, 0.0]], [[0.0, 0.0]]])  # [2 runs, 1 level, 2 attempts]


def test_the_kinds_summarise_by_hand_derived_values():
    ev = FakeEvaluator()
    _, goal = evaluations.GoalSuccess()(ev)
    # run 0: 2 of 4 episodes reached the goal, 4 steps near it over 4 episodes; run 1: 2, 4
    assert goal["eval_success_any_per_seed"] == [0.5, 0.5]
    assert goal["eval_time_near_goal_per_seed"] == [1.0, 1.0]
    assert ev.asked == [("episodes", ("success",))]
    ev = FakeEvaluator(keys=("regret", "other"))
    _, trials = evaluations.Trials(("regret", "absent"))(ev)
    assert ev.asked == [("trials", ("regret",))]  # only the keys the family reports
    assert trials["adaptation"]["episode_return_mean"] == [1.0, 2.0]
    assert trials["eval_regret_per_seed"] == [0.25, 0.25]
    text = evaluations.Trials().describe(trials)
    assert text.splitlines()[1] == "  episode   1:     1.000  [0.500, 1.500]"

    class Levels:
        held_out = staticmethod(lambda: (("corridor",), "levels"))
        params_for = staticmethod(lambda params, levels: f"params of {levels}")

    ev = FakeEvaluator()
    held = evaluations.with_held_out(Levels(), evaluations.GoalSuccess())
    _, entries = held(ev)
    assert ev.asked == [
        ("episodes", ("success",)),
        ("levels", "params of levels"),
        ("sampled levels", "params of levels"),
    ]
    assert list(entries) == ["held_out", *goal]  # the held-out levels first, as final.json had
    assert entries["held_out"] == {
        "names": ["corridor"],
        "actions": "greedy",
        "returns": [[[1.0, 0.0]], [[0.0, 0.0]]],
        "returns_sampled": [[[1.0, 1.0]], [[1.0, 0.0]]],
    }
    text = held.describe(entries)
    # Greedy: 1 of 4 attempts solved; sampled: 3 of 4, mean return 0.75.
    greedy = "held-out levels, greedy actions:\n| level | solve rate | mean return | attempts |"
    assert greedy in text and "| corridor | 0.25 | 0.250 | 4 |" in text
    assert "held-out levels, sampled actions:" in text and "| corridor | 0.75 | 0.750 | 4 |" in text
    # An evaluation asked for sampled actions keeps them as `returns`, the greedy ones apart.
    _, entries = held(FakeEvaluator(deterministic=False))
    assert entries["held_out"]["actions"] == "sampled"
    assert entries["held_out"]["returns"] == [[[1.0, 1.0]], [[1.0, 0.0]]]
    assert entries["held_out"]["returns_greedy"] == [[[1.0, 0.0]], [[0.0, 0.0]]]
    # A final.json written before both were kept: its returns, greedy.
    old = {"held_out": {"names": ["corridor"], "returns": [[[1.0, 0.0]], [[0.0, 0.0]]]}}
    assert held.describe(old).count("held-out levels") == 1
    # Solve rates both ways on the environment's own levels (a return above 0 solves):
    # greedy, run 0 solves 1 of 4 and run 1 none; sampled, run 0 solves 3 of 4 and run 1 one.
    ev = FakeEvaluator()
    returns, rates = evaluations.SolveRates()(ev)
    assert ev.asked == [("episodes", ()), ("sampled episodes", ())]
    assert returns.tolist() == [[0.0, 0.0, 0.0, 1.0], [0, 0, 0, 0]]  # the actions asked for
    assert rates == {
        "eval_solve_rate_greedy_per_seed": [0.25, 0.0],
        "eval_solve_rate_greedy_mean": 0.125,
        "eval_solve_rate_sampled_per_seed": [0.75, 0.25],
        "eval_solve_rate_sampled_mean": 0.5,
    }
    returns, same = evaluations.SolveRates()(FakeEvaluator(deterministic=False))
    assert same == rates and returns.tolist()[0] == [1.0, 0.5, 0.0, 2.0]
    assert evaluations.with_held_out(None) is not None
    assert type(evaluations.with_held_out(None)) is evaluations.Evaluation


def test_achievements_summarise_by_hand_derived_values():
    # 2 runs x 3 episodes; each achievement's unlocks summed per episode (1 where unlocked).
    sums = {
        "achievement/wood": np.array([[1, 1, 0], [1, 1, 1]]),
        "achievement/table": np.array([[1, 0, 0], [0, 0, 0]]),
    }
    summary = evaluations.achievement_summary(("wood", "table"), sums, "greedy")
    # run 0: 2, 1, 0 achievements (mean 1); run 1: 1, 1, 1 (mean 1)
    assert summary["eval_achievements_greedy_per_seed"] == [1.0, 1.0]
    assert summary["eval_achievements_greedy_mean"] == 1.0
    rates = summary["eval_achievement_rates_greedy"]
    assert rates["wood"] == pytest.approx([2 / 3, 1.0]) and rates["table"] == pytest.approx(
        [1 / 3, 0]
    )
    sampled = {"achievement/wood": np.ones((2, 3)), "achievement/table": np.ones((2, 3))}

    class Episodes:
        asked = []
        deterministic = True

        def episodes(self, keys=(), deterministic=None):
            Episodes.asked.append((keys, deterministic))
            both = sums if deterministic is None else sampled
            return evaluations.EpisodesResult(np.zeros((2, 3)), both)

    returns, entries = evaluations.Achievements(("wood", "table"))(Episodes())
    keys = ("achievement/wood", "achievement/table")
    assert Episodes.asked == [(keys, None), (keys, False)]
    assert entries["eval_achievements_greedy_mean"] == 1.0
    assert entries["eval_achievements_sampled_per_seed"] == [2.0, 2.0]
    assert returns.shape == (2, 3)
    text = evaluations.Achievements(("wood", "table")).describe(entries)
    lines = text.splitlines()
    assert lines[0] == "achievements per episode, greedy actions: 1.00 of 2"
    assert "| wood | 0.833 |" in text and "| table | 0.167 |" in text
    assert "achievements per episode, sampled actions: 2.00 of 2" in lines


def test_the_reference_table_counts_one_seed_and_one_trial_in_the_singular():
    summary = {"eval_return_mean": 3.0, "eval_return_per_seed": [3.0], "episodes": 1}
    own = evaluations.reference_table([], summary, "seed").splitlines()[4]
    assert own.endswith("| mean over 1 seed of 1 trial each |"), own
    summary = {**summary, "eval_return_per_seed": [3.0, 3.0], "episodes": 30}
    assert "| mean over 2 seeds of 30 trials each |" in evaluations.reference_table([], summary)
