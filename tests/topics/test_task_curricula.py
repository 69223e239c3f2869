"""A curriculum over meta-RL tasks (AdA-style): task families as levels (`RL2.levels()`,
`TaskLevels`, `GivenTask`), the maze's walled tasks and the bandit's, the level scores read on
trials, held-out tasks with their adaptation curve, and `rlsuite train ued --env meta/maze`."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.tasks import bandits, maze

from rlsuite import envs
from rlsuite.app import cli
from rlsuite.environment.evaluations import HeldOutTasks, Trials
from rlsuite.environment.meta import RL2, GivenTask, TaskLevels
from rlsuite.ops import level_scores
from tests.topics.test_resume import resumes_in_process


def _rows(rows):
    return maze.task_from_rows(rows)


# ----------------------------------------------------------------- the maze's tasks
def test_reachable_cells_are_those_connected_to_the_goal():
    # A wall across row 2 leaves rows 3-4 apart from the goal at (0, 0).
    task = _rows(("G....", ".....", "#####", ".....", "....."))
    reach = np.asarray(maze.reachable(task.walls, task.goal))
    expected = np.zeros((5, 5), bool)
    expected[:2] = True
    np.testing.assert_array_equal(reach, expected)
    assert not bool(maze.well_formed(task.walls, task.goal))
    # A door at (2, 4) joins them.
    task = _rows(("G....", ".....", "####.", ".....", "....."))
    assert bool(maze.well_formed(task.walls, task.goal))
    assert int(maze.reachable(task.walls, task.goal).sum()) == 21


def test_a_goal_on_a_wall_or_a_single_free_cell_is_not_well_formed():
    task = _rows(("G....", ".....", ".....", ".....", "....."))
    assert not bool(maze.well_formed(task.walls.at[0, 0].set(True), task.goal))
    only_goal = jnp.ones((5, 5), bool).at[0, 0].set(False)
    assert not bool(maze.well_formed(only_goal, task.goal))


def test_layouts_are_well_formed_and_their_densities_stay_under_the_bound():
    env, params = envs.make("meta/maze", wall_density=0.4)
    keys = jax.random.split(jax.random.key(0), 1000)
    tasks = jax.vmap(env.levels().generate)(keys)
    assert bool(jnp.all(jax.vmap(maze.well_formed)(tasks.walls, tasks.goal)))
    density = np.asarray(tasks.walls).mean(axis=(1, 2))
    # The Bernoulli draws average 0.2 (d ~ U[0, 0.4]); cut-off cells filled raise it a little.
    assert 0.2 <= density.mean() <= 0.3, density.mean()
    assert density.min() == 0.0 and density.max() > 0.4
    # Different keys give different tasks; the same key the same one.
    assert len({np.asarray(w).tobytes() for w in tasks.walls[:50]}) > 40
    again = env.levels().generate(keys[3])
    np.testing.assert_array_equal(again.walls, tasks.walls[3])


def test_a_mutation_that_would_cut_a_cell_off_is_not_applied():
    # Goal (0, 0), free (0, 1) and (0, 2): a wall on (0, 1) would cut (0, 2) off; a wall on
    # (0, 2) leaves two free cells; removing any other wall would free an isolated cell; the
    # goal may move to (0, 1) or (0, 2).
    walls = jnp.ones((5, 5), bool).at[0, :3].set(False)
    task = maze.Maze().default_params.replace(goal=jnp.array([0, 0], jnp.int32), walls=walls)
    keys = jax.random.split(jax.random.key(1), 300)
    out = jax.vmap(lambda k: maze.mutate_task(k, task, 1))(keys)
    assert bool(jnp.all(jax.vmap(maze.well_formed)(out.walls, out.goal)))
    assert not bool(jnp.any(out.walls[:, 0, 1] & ~out.walls[:, 0, 2]))
    changed = jnp.any(out.walls != walls, axis=(1, 2)) | jnp.any(out.goal != task.goal, axis=1)
    assert 0 < int(changed.sum()) < 300  # some edits apply, the cutting ones do not
    walled_end = out.walls[:, 0, 2] & jnp.all(out.goal == task.goal, axis=1)
    assert int(walled_end.sum()) > 0


def test_mutations_keep_tasks_well_formed_and_zero_edits_is_the_identity():
    env, _ = envs.make("meta/maze", wall_density=0.4)
    levels = env.levels()
    keys = jax.random.split(jax.random.key(2), 500)
    tasks = jax.vmap(levels.generate)(keys)
    mutated = jax.vmap(lambda k, t: levels.mutate(k, t, 5))(keys, tasks)
    assert bool(jnp.all(jax.vmap(maze.well_formed)(mutated.walls, mutated.goal)))
    cells = jnp.sum(mutated.walls != tasks.walls, axis=(1, 2))
    assert int(cells.max()) <= 5 and float(cells.mean()) > 0.5
    same = jax.vmap(lambda k, t: levels.mutate(k, t, 0))(keys, tasks)
    np.testing.assert_array_equal(same.walls, tasks.walls)
    np.testing.assert_array_equal(same.goal, tasks.goal)


def test_the_held_out_layouts_are_well_formed_and_drawn_as_written():
    names, tasks = maze.held_out_tasks()
    assert names == tuple(maze.HELD_OUT)
    assert bool(jnp.all(jax.vmap(maze.well_formed)(tasks.walls, tasks.goal)))
    corridor = names.index("corridor")
    np.testing.assert_array_equal(tasks.goal[corridor], [4, 0])
    np.testing.assert_array_equal(tasks.walls[corridor][1], [1, 1, 1, 1, 0])
    with pytest.raises(ValueError, match="one goal"):
        maze.task_from_rows((".....",) * 5)


def test_a_task_is_drawn_with_its_walls_and_goal():
    env, _ = envs.make("meta/maze", wall_density=0.4)
    names, tasks = maze.held_out_tasks()
    corridor = jax.tree.map(lambda x: np.asarray(x[names.index("corridor")]), tasks)
    image = env.levels().render(corridor)
    assert image.shape == (7 * 16, 7 * 16, 3) and image.dtype == np.uint8

    def pixel(row, col):  # the centre of cell (row, col), a cell of wall around the grid
        return image[(row + 1) * 16 + 8, (col + 1) * 16 + 8].tolist()

    assert pixel(4, 0) == [60, 170, 60]  # the goal
    assert pixel(1, 0) == [60, 60, 60]  # a wall
    assert pixel(0, 0) == [255, 255, 255]  # free
    assert image[2, 2].tolist() == [60, 60, 60]  # the border


def test_meta_maze_without_walls_keeps_its_tasks_and_evaluation():
    env, _ = envs.make("meta/maze")
    assert isinstance(env.evaluation, Trials) and not isinstance(env.evaluation, HeldOutTasks)
    task = env.levels().generate(jax.random.key(0))
    assert not bool(jnp.any(task.walls))  # goals only, as sample_task draws them
    assert isinstance(envs.make("meta/maze", wall_density=0.3)[0].evaluation, HeldOutTasks)
    with pytest.raises(ValueError, match=r"wall_density=1.5; allowed: a number in \[0, 1\]"):
        envs.make("meta/maze", wall_density=1.5)


# ----------------------------------------------------------------- the bandit's tasks
def test_a_bandit_mutation_redraws_at_most_num_edits_arms():
    params = bandits.BernoulliBandit(5).default_params
    keys = jax.random.split(jax.random.key(3), 200)
    out = jax.vmap(lambda k: bandits.mutate_probs(k, params, 2))(keys)
    changed = np.asarray(out.probs != params.probs).sum(axis=1)
    assert changed.max() <= 2 and changed.min() >= 1
    assert bool(jnp.all((out.probs >= 0) & (out.probs <= 1)))
    np.testing.assert_array_equal(bandits.mutate_probs(keys[0], params, 0).probs, params.probs)


def test_the_bandits_held_out_tasks_are_asked_for():
    assert isinstance(envs.make("meta/bandit")[0].evaluation, Trials)
    env, _ = envs.make("meta/bandit", held_out=True)
    assert isinstance(env.evaluation, HeldOutTasks)
    names, tasks = env.levels().held_out()
    assert names == tuple(bandits.HELD_OUT) and tasks.probs.shape == (5, 5)
    assert env.levels().generate(jax.random.key(0)).probs.shape == (5,)


# ----------------------------------------------------------------- RL2 on given tasks
def test_given_task_params_replay_one_task_in_every_trial():
    env, params = envs.make("meta/maze", wall_density=0.4)
    names, tasks = maze.held_out_tasks()
    given = env.levels().params_for(params, tasks)
    assert isinstance(given, GivenTask)
    one = jax.tree.map(lambda x: x[names.index("two_rooms")], given)
    obs, state = env.reset(jax.random.key(0), one)
    step = jax.jit(env.step)
    key = jax.random.key(1)
    trials = 0
    for _ in range(200):  # several trials: random actions reach the trial's end
        key, key_act, key_step = jax.random.split(key, 3)
        action = jax.random.randint(key_act, (), 0, 4)
        obs, state, _, terminated, _, _ = step(key_step, state, action, one)
        trials += int(terminated)
        np.testing.assert_array_equal(state.task.walls, one.params.walls)
        np.testing.assert_array_equal(state.task.goal, one.params.goal)
    assert trials >= 2
    # Without GivenTask every trial draws its own.
    assert env.observation_space(one).shape == env.observation_space(params).shape


def test_params_for_keeps_the_runs_settings_and_takes_the_tasks():
    env, params = envs.make("meta/maze", wall_density=0.4, step_penalty=0.1)
    _, tasks = maze.held_out_tasks()
    given = env.levels().params_for(params, tasks)
    np.testing.assert_allclose(given.params.step_penalty, np.full(6, 0.1))
    np.testing.assert_array_equal(given.params.walls, tasks.walls)


def test_task_levels_are_refused_by_name():
    inner = maze.Maze()
    with pytest.raises(ValueError, match="must name fields of .*allowed: goal, walls"):
        RL2(inner, maze.sample_task, 3, tasks=TaskLevels(("door",), maze.mutate_task))
    with pytest.raises(TypeError, match="given with a sample_task"):
        RL2(inner, None, 3, tasks=TaskLevels(("goal",), maze.mutate_task))


def test_trials_on_held_out_tasks_match_the_attempts_on_them_as_levels():
    """`Evaluator.level_trials` plays trial `i * attempts + j` with the key of attempt `j` on
    level `i` of `Evaluator.levels`: the same returns, with each episode's besides."""
    from rlsuite.agents import ued
    from rlsuite.loop import driver
    from rlsuite.loop.policy_evaluation import Evaluator

    env, params = envs.make("meta/maze", wall_density=0.4)
    config = ued.UEDConfig(num_envs=4, num_steps=8, recurrent_size=8, hidden_sizes=(8,))
    agent = ued.make(config, env, params)
    keys = jax.random.split(jax.random.key(0), 2)
    states = jax.jit(driver.init_batch, static_argnums=0)(agent, keys, ued.UEDHparams())
    levels = env.levels()
    given = levels.params_for(params, levels.held_out()[1])
    ev = Evaluator(agent, states, jax.random.key(1), 3, deterministic=False)
    trials = ev.level_trials(given)
    np.testing.assert_array_equal(trials.returns, ev.levels(given))
    assert trials.episode_returns.shape == (2, 6, 3, 3)
    np.testing.assert_allclose(trials.episode_returns.sum(-1), trials.returns, atol=1e-5)


# ----------------------------------------------------------------- scores read on trials
def test_level_scores_on_trials_count_a_trial_as_one_episode():
    """Two-armed bandit probs (1, 0), trials of three pulls: arms 0, 1, 1 (return 1), then
    0, 0, 0 (return 3), then 1, 1 (unfinished). Only the trial ends are episode ends."""
    env, _ = envs.make("meta/bandit", num_arms=2, pulls=3)
    task = GivenTask(env.default_params.replace(probs=jnp.array([1.0, 0.0])))
    _, state = env.reset(jax.random.key(0), task)
    rewards, dones, inner = [], [], []
    for t, action in enumerate([0, 1, 1, 0, 0, 0, 1, 1]):
        _, state, r, term, trunc, info = env.step(jax.random.key(t), state, action, task)
        rewards.append(float(r))
        dones.append(bool(term | trunc))
        inner.append(bool(info["episode_done"]))
    assert rewards == [1, 0, 0, 1, 1, 1, 0, 0]
    assert dones == [False, False, True, False, False, True, False, False]
    assert all(inner)  # every pull ends an inner episode, none of which ends a trial's score
    r, d = jnp.array(rewards)[:, None], jnp.array(dones)[:, None]
    assert float(level_scores.max_return(d, r)[0]) == 3.0
    assert float(level_scores.mean_return(d, r)[0]) == 2.0
    # SFL's success read at each trial's last pull: 0 then 1, p = 1/2.
    assert float(level_scores.learnability(d, r > 0)[0]) == 0.25
    # MaxMC with V = 0.5 throughout: R_max - V = 2.5 on every step of both trials.
    values = jnp.full_like(r, 0.5)
    assert float(level_scores.max_mc(d, r, values)[0]) == 2.5


# ----------------------------------------------------------------- from the command line
UED_MAZE = [
    "train", "ued", "--env", "meta/maze", "--env-option", "wall_density=0.4",
    "--num-envs", "8", "--num-steps", "60", "--buffer-capacity", "32",
    "--total-timesteps", "1920", "--num-seeds", "2", "--chunks", "4", "--eval-episodes", "4",
    "--no-progress",
]  # fmt: skip


@pytest.fixture(scope="module")
def plr_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ada") / "plr"
    assert cli.main([*UED_MAZE, "--curriculum", "plr", "--out", str(out)]) == 0
    return out


def test_ued_on_the_maze_tasks_reports_held_out_tasks_and_their_adaptation(plr_run, capsys):
    final = json.loads((plr_run / "final.json").read_text())
    held_out = final["held_out"]
    assert held_out["names"] == list(maze.HELD_OUT)
    assert np.shape(held_out["returns"]) == (2, 6, 4)
    assert np.shape(held_out["returns_sampled"]) == (2, 6, 4)
    curve = final["held_out_adaptation"]
    assert len(curve["episode_return_mean"]) == 3
    per_task = np.asarray(list(curve["episode_return_per_task"].values()))
    assert per_task.shape == (6, 3)
    # The curve's episodes sum to the trial returns (3 episodes, every trial finishes).
    trial_mean = np.mean(held_out["returns"])
    np.testing.assert_allclose(np.sum(curve["episode_return_mean"]), trial_mean, rtol=1e-5)
    rows = [json.loads(line) for line in (plr_run / "metrics.jsonl").read_text().splitlines()]
    assert {row["ued/branch"] for row in rows} <= {0.0, 1.0}
    assert cli.main(["eval", str(plr_run), "--episodes", "4"]) == 0
    printed = capsys.readouterr().out
    assert "held-out tasks (trial returns), greedy actions:" in printed
    assert "adaptation on the held-out tasks" in printed
    # The held-out layouts and the buffer's top tasks, drawn; the layouts' solve rates are
    # those the evaluation just printed, not final.json's.
    out = plr_run.parent / "levels.png"
    assert cli.main(["plot", str(plr_run), "--levels", "--out", str(out)]) == 0
    assert out.stat().st_size > 0
    assert "solve rates of eval_greedy_4_seed0.json (4 attempts" in capsys.readouterr().err


def test_ued_on_the_maze_tasks_resumes_exactly(plr_run, tmp_path):
    resumes_in_process(plr_run, tmp_path)


# ----------------------------------------------------------------- learning, and its control
def _held_out_gap(tmp_path, memory: str) -> np.ndarray:
    """Each seed's held-out adaptation gain, the third episode's return minus the first's, after
    100 DR updates of the tuned entry on the walled maze tasks (2 seeds, 20 trials a task)."""
    out = tmp_path / memory
    args = ["train", "ued", "--env", "meta/maze", "--env-option", "wall_density=0.4"]
    args += [f"memory={memory}", "--curriculum", "dr", "--num-seeds", "2"]
    args += ["--total-timesteps", "384000", "--eval-episodes", "20", "--out", str(out)]
    assert cli.main([*args, "--no-progress"]) == 0
    curve = json.loads((out / "final.json").read_text())["held_out_adaptation"]
    per_seed = np.asarray(curve["episode_return_per_seed"])
    return per_seed[:, 2] - per_seed[:, 0]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_student_adapts_within_a_trial_on_held_out_tasks_and_without_memory_does_not(
    tmp_path,
):
    """Measured on the 2-core machine: gains 0.356 and 0.221 with the trial's memory, -0.002
    and 0.035 with `memory="episode"` (the inputs and the memory reset at every episode end);
    the floor, 0.11, is half the smaller gain."""
    assert np.all(_held_out_gap(tmp_path, "trial") >= 0.11)
    assert not np.any(_held_out_gap(tmp_path, "episode") >= 0.11)  # the control stays below
