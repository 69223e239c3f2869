"""The UED curricula (`rlsuite.agents.ued`) on the maze: scheduling, what each branch does to the
student and the buffer, replay rollouts that stay on their level, and refusals."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.maze import HELD_OUT, level_hash, well_formed

from rlsuite import envs
from rlsuite.agents import ppo, ued
from rlsuite.data import level_buffer
from rlsuite.loop import driver
from rlsuite.ops import level_scores
from tests.tiers import slow_but

NEW, REPLAY, MUTATE = ued.NEW, ued.REPLAY, ued.MUTATE


def small(curriculum, **overrides):
    """A 5 x 5 maze of up to 3 walls and horizon 12 (episodes end often), 4 levels at a time."""
    env, params = envs.make("maze", height=5, width=5, n_walls=3, max_episode_steps=12)
    fields = dict(curriculum=curriculum, num_envs=4, num_steps=32, recurrent_size=8,
                  hidden_sizes=(16,), buffer_capacity=8, update_epochs=2,
                  total_timesteps=4 * 32 * 40)  # fmt: skip
    fields.update(overrides)
    return ued.make(ued.UEDConfig(**fields), env, params)


def hparams(agent, **fields):
    return agent.default_hparams.replace(**fields)


def test_accel_schedule_has_the_stationary_fractions_of_its_chain():
    # After a replay ACCEL always mutates; otherwise it replays with probability p, else it
    # draws new levels. Stationary: r = p (n + m), m = r, n + m + r = 1, so r = p (1 - r):
    # r = m = p / (1 + p) = 4/9 and n = 1 - 2 r = 1/9 at p = 0.8. PLR: n = 0.2, r = 0.8.
    buffer = level_buffer.init(4, jnp.zeros(2))
    config = level_buffer.LevelBufferConfig(replay_prob=0.8, minimum_fill=0.5)
    for i, score in enumerate([0.1, 0.5, 0.3, 0.2]):
        buffer, _ = level_buffer.insert(buffer, jnp.full(2, i), score, None, config)

    def fractions(curriculum):
        def step(previous, key):
            replay = level_buffer.should_replay(buffer, key, config)
            branch = ued.next_branch(previous, replay, mutate=curriculum == "accel")
            return branch, branch

        keys = jax.random.split(jax.random.key(0), 20_000)
        _, branches = jax.lax.scan(step, jnp.int32(NEW), keys)
        return np.bincount(np.asarray(branches), minlength=3) / 20_000

    np.testing.assert_allclose(fractions("accel"), [1 / 9, 4 / 9, 4 / 9], atol=0.02)
    np.testing.assert_allclose(fractions("plr"), [0.2, 0.8, 0.0], atol=0.02)
    # An empty buffer, or one below its minimum fill, never replays, whatever replay_prob.
    empty = level_buffer.init(4, jnp.zeros(2))
    always = level_buffer.LevelBufferConfig(replay_prob=1.0, minimum_fill=0.0)
    assert not bool(level_buffer.should_replay(empty, jax.random.key(1), always))


@pytest.mark.parametrize("curriculum", slow_but("accel", ["robust_plr", "accel"]))
def test_robust_curricula_learn_from_replays_only(curriculum):
    # minimum_fill 0 and replay_prob 0.5: new, replay (and mutate) updates all occur.
    agent = small(curriculum, num_edits=0)
    hp = hparams(agent, replay_prob=0.5, minimum_fill=0.0)
    update = jax.jit(agent.update)
    state = agent.init(jax.random.key(3), hp)
    seen = set()
    for _ in range(14):
        before = state
        state, metrics = update(state, hp)
        branch = int(state.branch)
        seen.add(branch)
        same = [
            np.array_equal(a, b)
            for a, b in zip(
                jax.tree.leaves((before.student.params, before.student.opt_state)),
                jax.tree.leaves((state.student.params, state.student.opt_state)),
                strict=True,
            )
        ]
        steps = int(state.student.update_step) - int(before.student.update_step)
        if branch == REPLAY:
            assert not all(same) and float(metrics["ued/learned"]) == 1.0
            assert steps == 1  # the schedules advance with learning steps
        else:  # new and mutate: parameters, optimiser state and schedules as they were
            assert all(same) and float(metrics["ued/learned"]) == 0.0
            assert steps == 0
        if curriculum == "accel" and int(before.branch) == REPLAY:
            # A replay is always followed by a mutation, of the levels just replayed; with 0
            # edits those very levels.
            assert branch == MUTATE
            for a, b in zip(
                jax.tree.leaves(before.levels), jax.tree.leaves(state.levels), strict=True
            ):
                np.testing.assert_array_equal(a, b)
    assert {NEW, REPLAY} <= seen and (MUTATE in seen) == (curriculum == "accel")


def test_plr_learns_on_every_update():
    agent = small("plr")
    hp = hparams(agent, replay_prob=0.5, minimum_fill=0.0)
    state = agent.init(jax.random.key(4), hp)
    update = jax.jit(agent.update)
    for _ in range(6):
        before = state
        state, metrics = update(state, hp)
        assert float(metrics["ued/learned"]) == 1.0
        assert not np.array_equal(
            jax.tree.leaves(before.student.params)[0], jax.tree.leaves(state.student.params)[0]
        )


def test_new_levels_with_a_finished_episode_enter_the_buffer_with_their_scores():
    agent = small("plr", num_envs=6, buffer_capacity=16)
    hp = hparams(agent, replay_prob=0.0)
    setup = agent.update.args[0]  # the UEDSetup bound by make
    state = agent.init(jax.random.key(5), hp)
    # The update's own pieces, replayed by hand: the branch's levels, the rollout, the scores.
    key, key_choose, key_reset = jax.random.split(state.key, 3)
    branch, levels, _, slots = setup.curriculum.choose(setup, state, key_choose, hp)
    assert int(branch) == NEW and np.all(np.asarray(slots) == -1)
    student = state.student.replace(env=ued.play(setup, state.student, levels, key_reset))
    _, key_collect, _ = jax.random.split(student.key, 3)
    exp = ppo.experience(setup.student, student, key_collect, hp)
    dones = exp.transitions.terminated | exp.transitions.truncated
    expected = level_scores.max_mc(
        dones, exp.transitions.reward, exp.transitions.extras["value"], jnp.full(6, -jnp.inf)
    )
    finished = np.asarray(level_scores.finished(dones))
    assert finished.any()

    state, _ = jax.jit(agent.update)(state, hp)
    buffer = state.buffer
    assert int(buffer.size) == int(finished.sum())
    np.testing.assert_allclose(
        np.asarray(buffer.scores[: int(buffer.size)]),
        np.asarray(expected)[finished],
        rtol=1e-5,
    )
    stored = np.asarray(
        jax.vmap(level_hash)(jax.tree.map(lambda x: x[: int(buffer.size)], buffer.levels))
    )
    np.testing.assert_array_equal(stored, np.asarray(jax.vmap(level_hash)(levels))[finished])
    # MaxMC's best return per level is kept as the buffer's extra.
    best = np.asarray(level_scores.max_return(dones, exp.transitions.reward))[finished]
    np.testing.assert_allclose(np.asarray(buffer.extras["max_return"][: len(best)]), best)


def test_a_replay_rollout_stays_on_its_levels():
    # minimax #6: during a replay rollout of 256 steps every episode stays on the replayed
    # level, through many episode ends (horizon 12).
    agent = small("plr", num_steps=256, num_envs=4)
    hp = hparams(agent, replay_prob=1.0, minimum_fill=0.0)
    setup = agent.update.args[0]
    state = agent.init(jax.random.key(6), hp)
    update = jax.jit(agent.update)
    while int(state.buffer.size) == 0:  # new levels until the buffer holds one
        state, _ = update(state, hp)
    key, key_choose, key_reset = jax.random.split(state.key, 3)
    branch, levels, _, slots = setup.curriculum.choose(setup, state, key_choose, hp)
    assert int(branch) == REPLAY and np.all(np.asarray(slots) >= 0)
    student = state.student.replace(env=ued.play(setup, state.student, levels, key_reset))
    _, tr = ppo.collect(setup.student, student, jax.random.key(7))
    hashes = np.asarray(tr.info["level_hash"])  # [256, 4]
    np.testing.assert_array_equal(
        hashes, np.broadcast_to(np.asarray(jax.vmap(level_hash)(levels)), (256, 4))
    )
    # every 12 steps at least one episode end per environment: 21 each
    assert int(np.asarray(tr.terminated | tr.truncated).sum()) >= 4 * (256 // 12)


@pytest.mark.slow
def test_seeds_and_buffer_settings_vmap():
    agent = small("accel", num_steps=16)
    hp = agent.default_hparams
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), hp).replace(
        replay_prob=jnp.array([0.0, 1.0]), minimum_fill=jnp.array([0.0, 0.0])
    )
    keys = jax.random.split(jax.random.key(8), 2)
    states = driver.init_batch(agent, keys, batch, hparams_axis=0)
    states, metrics = driver.run_batch(agent, states, batch, 6, hparams_axis=0)
    branches = np.asarray(metrics["ued/branch"])  # [2, 6]
    assert set(branches[0]) == {NEW}  # replay_prob 0: only new levels
    assert REPLAY in set(branches[1]) and MUTATE in set(branches[1])
    again = driver.run_batch(agent, driver.init_batch(agent, keys, batch, 0), batch, 6, 0)[1]
    np.testing.assert_array_equal(np.asarray(again["ued/branch"]), branches)


def test_dr_is_the_student_on_random_levels():
    agent = small("dr")
    hp = agent.default_hparams
    state = agent.init(jax.random.key(9), hp)
    state, metrics = jax.jit(agent.update)(state, hp)
    # No buffer and no levels set by the curriculum: the environments keep the shared params,
    # which draw a fresh level at every reset.
    assert "ued/branch" not in metrics and int(state.buffer.size) == 0
    assert state.student.env.params is None and bool(agent.env_params.random_level)


def test_bad_input_is_refused_before_anything_runs():
    env, params = envs.make("maze", height=5, width=5, n_walls=3)
    with pytest.raises(
        ValueError, match="curriculum='paired_x'.*dr, plr, robust_plr, accel, paired"
    ):
        ued.UEDConfig(curriculum="paired_x")
    with pytest.raises(ValueError, match="score='regret'.*maxmc, pvl, learnability"):
        ued.UEDConfig(score="regret")
    with pytest.raises(ValueError, match="buffer_capacity=0"):
        ued.UEDConfig(buffer_capacity=0)
    with pytest.raises(ValueError, match="num_edits=-1"):
        ued.UEDConfig(num_edits=-1)
    agent = ued.make(ued.UEDConfig(num_envs=2, num_steps=4), env, params)
    for field, value in (("replay_prob", 1.5), ("staleness_coeff", -0.1), ("temperature", 0.0),
                         ("minimum_fill", 2.0)):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            agent.check_hparams(agent.default_hparams.replace(**{field: value}))
    no_editor = env.levels()._replace(editor=None)
    with pytest.raises(ValueError, match="curriculum='paired' needs a level editor"):
        ued.make(ued.UEDConfig(curriculum="paired"), env, params, levels=no_editor)
    cartpole, cartpole_params = envs.make("cartpole")
    with pytest.raises(ValueError, match="levels"):
        ued.make(ued.UEDConfig(), cartpole, cartpole_params)


@pytest.mark.slow
@pytest.mark.timeout(900)  # three processes, each compiling
def test_train_eval_and_plot_the_levels_from_the_cli(tmp_path):
    from PIL import Image

    from tests.app.test_cli import rlsuite

    out = tmp_path / "run"
    tiny = ["--env", "maze", "--curriculum", "plr", "--total-timesteps", "3072", "--num-envs", "4"]
    tiny += ["--num-steps", "64", "--recurrent-size", "8", "--hidden-sizes", "8"]
    tiny += ["--buffer-capacity", "8", "--minimum-fill", "0", "--num-seeds", "2", "--no-progress"]
    proc = rlsuite("train", "ued", *tiny, "--eval-episodes", "2", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ued on maze: 2 seeds x 3,072 env steps" in proc.stdout
    final = json.loads((out / "final.json").read_text())
    held_out = final["held_out"]
    assert held_out["names"] == list(HELD_OUT)
    assert np.shape(held_out["returns"]) == (2, 8, 2)  # seeds x mazes x attempts
    assert held_out["actions"] == "greedy" and np.shape(held_out["returns_sampled"]) == (2, 8, 2)
    assert len(final["eval_solve_rate_greedy_per_seed"]) == 2  # on random levels, both ways
    assert 0 <= final["eval_solve_rate_sampled_mean"] <= 1
    proc = rlsuite("eval", out, "--episodes", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    columns = "| seed | eval_return | eval_solve_rate_greedy | eval_solve_rate_sampled |"
    assert columns in proc.stdout
    lines = proc.stdout.splitlines()
    for mode in ("greedy", "sampled"):  # a table of the held-out mazes for each
        at = lines.index(f"held-out levels, {mode} actions:")
        assert lines[at + 1] == "| level | solve rate | mean return | attempts |"
        rows = lines[at + 3 : at + 12]
        assert [row.split(" | ")[0][2:] for row in rows] == [*HELD_OUT, "mean"]
        assert all(row.endswith(" | 6 |") for row in rows[:-1])  # 3 attempts x 2 seeds
    image = tmp_path / "levels.png"
    proc = rlsuite("plot", out, "--levels", "--out", image)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # 8 mazes, then at least one buffer level (12 updates of PLR with minimum fill 0): 3 or 4
    # rows of 4 panels, 800 pixels wide and 250 per row.
    width, height = Image.open(image).size
    assert width == 800 and height in (750, 1000)
    proc = rlsuite("plot", out, "--levels", "--out", image)
    assert proc.returncode == 2 and "exists" in proc.stderr  # never overwritten
    # The report shows the held-out mazes' solve rates of final.json, as the evaluation says.
    proc = rlsuite("report", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = (out / "report.md").read_text()
    table = page[page.index("| level | solve rate | mean return | attempts |") :]
    assert [row.split(" | ")[0][2:] for row in table.splitlines()[2:11]] == [*HELD_OUT, "mean"]


def test_paired_is_its_own_algorithm_with_a_state_of_its_own():
    # PAIRED keeps three agents and the levels built last: no level buffer, scores or branch.
    agent = small("paired")
    shape = jax.eval_shape(agent.init, jax.random.key(0), agent.default_hparams)
    assert isinstance(shape, ued.paired.PAIREDState) and agent.name == "ued"
    assert [f.name for f in dataclasses.fields(shape)] == [
        "student",
        "levels",
        "key",
        "antagonist",
        "adversary",
    ]
    env, params = envs.make("maze", height=5, width=5, n_walls=3)
    with pytest.raises(ValueError, match="curriculum='paired' scores no levels"):
        ued.make(ued.UEDConfig(curriculum="paired"), env, params, score=ued.score_levels)
    assert isinstance(jax.eval_shape(small("plr").init, jax.random.key(0), hparams(agent)),
                      ued.UEDState)  # fmt: skip


@pytest.mark.slow
def test_paired_builds_levels_and_trains_all_three_agents():
    agent = small("paired", num_envs=4, num_steps=32, regret_clip=True)
    hp = agent.default_hparams
    keys = jax.random.split(jax.random.key(10), 2)
    states = driver.init_batch(agent, keys, hp)
    after, metrics = driver.run_batch(agent, states, hp, 3)
    for name in ("student", "antagonist", "adversary"):  # each learns on every update
        before_params = jax.tree.leaves(getattr(states, name).params)[0]
        after_params = jax.tree.leaves(getattr(after, name).params)[0]
        assert not np.array_equal(before_params, after_params), name
    regret = np.asarray(metrics["ued/regret"])
    assert np.isfinite(regret).all() and (regret >= 0).all()  # clipped at 0
    # The adversary's levels: 5 x 5, well formed, at most n_walls = 3 walls (the generator's).
    levels = after.levels
    assert levels.wall_map.shape == (2, 4, 5, 5)
    assert bool(jax.vmap(jax.vmap(well_formed))(levels).all())
    assert int(levels.wall_map.sum(axis=(-2, -1)).max()) <= 3
    for name in ("ued/solved", "ued/antagonist_solved", "losses/value_loss"):
        assert np.isfinite(np.asarray(metrics[name])).all(), name
    # Different seeds build different levels.
    assert not np.array_equal(np.asarray(levels.wall_map[0]), np.asarray(levels.wall_map[1]))


def test_accel_mutates_the_easiest_levels_of_the_flat_score_array():
    # dcd #11: "easy" parents are positions in the flat score array. Scores of 8 replayed
    # levels, the lowest (0.1) at index 5: the 4 easiest are 5, 3 (0.3), 1 (0.4), 0 (0.5), each
    # mutated twice; a NaN (no finished episode) is never among them.
    scores = jnp.array([0.5, 0.4, 0.9, 0.3, 0.6, 0.1, 0.7, jnp.nan])
    levels = {"id": jnp.arange(8)}
    picked = ued.accel_parents("easy", levels, scores)["id"]
    np.testing.assert_array_equal(picked, [5, 3, 1, 0, 5, 3, 1, 0])
    assert ued.accel_parents("batch", levels, scores) is levels
    # Through the curriculum: after a replay, a 0-edit mutation of the easiest levels.
    agent = small("accel", num_envs=4, num_edits=0, accel_parents="easy")
    hp = hparams(agent, replay_prob=0.5, minimum_fill=0.0)
    setup = agent.update.args[0]
    state = agent.init(jax.random.key(11), hp)
    state = state.replace(branch=jnp.int32(REPLAY), scores=jnp.array([0.7, 0.2, 0.9, 0.4]))
    branch, levels, _, slots = setup.curriculum.choose(setup, state, jax.random.key(12), hp)
    assert int(branch) == MUTATE and np.all(np.asarray(slots) == -1)
    expected = jax.tree.map(lambda x: x[jnp.array([1, 3, 0, 2])], state.levels)
    for a, b in zip(*map(jax.tree.leaves, (levels, expected)), strict=True):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------- a curriculum of one's own, registered as a value
def learns_from_new_levels(branch):
    return branch == NEW  # Robust PLR's opposite: replays only score their levels


def mean_reward(config, tr, advantages, max_returns):
    finished = level_scores.finished(tr.terminated | tr.truncated)
    return jnp.where(finished, tr.reward.mean(axis=0), jnp.nan)


TOY = ued.Curriculum(choose=ued.choose_levels, learns=learns_from_new_levels, score=mean_reward)


@pytest.fixture
def toy():
    ued.register_curriculum("toy", TOY)
    yield TOY
    ued.unregister_curriculum("toy")


def test_a_curriculum_registered_from_outside_trains_as_its_functions_say(toy, tmp_path):
    agent = small("toy")
    setup = agent.update.args[0]
    assert setup.curriculum is toy and setup.score is mean_reward
    hp = hparams(agent, replay_prob=0.5, minimum_fill=0.0)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    _, metrics = train(agent, jax.random.key(0), hp, 12)
    branch, learned = (np.asarray(metrics[f"ued/{k}"]) for k in ("branch", "learned"))
    assert set(branch.tolist()) == {NEW, REPLAY}
    np.testing.assert_array_equal(learned, branch == NEW)
    # A score passed to make takes precedence over the curriculum's.
    env, params = envs.make("maze", height=5, width=5, n_walls=3)
    other = ued.make(ued.UEDConfig(curriculum="toy"), env, params, score=ued.score_levels)
    assert other.update.args[0].score is ued.score_levels


# Slow (a run's chunk program compiled again: 15 s with an empty compilation cache); the default
# run trains the registered curriculum through the driver (above).
@pytest.mark.slow
def test_a_curriculum_registered_from_outside_trains_from_the_command_line(toy, tmp_path):
    from rlsuite.app import cli

    out = tmp_path / "run"
    flags = ["--env", "maze/small", "--curriculum", "toy", "--total-timesteps", "256"]
    flags += ["--num-envs", "4", "--num-steps", "32", "--recurrent-size", "8", "--hidden-sizes"]
    flags += ["8", "--update-epochs", "1", "--buffer-capacity", "8", "--minimum-fill", "0"]
    flags += ["--eval-episodes", "1", "--chunks", "1", "--cpu-devices", "1", "--no-progress"]
    assert cli.main(["train", "ued", *flags, "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["curriculum"] == "toy"
    assert json.loads((out / "final.json").read_text())["env_steps"] == 256


def test_a_curriculum_is_registered_only_under_a_new_name_with_functions():
    for name, message in [("plr", "built-in"), ("paired", "built-in"), ("Toy", "lowercase")]:
        with pytest.raises(ValueError, match=message):
            ued.register_curriculum(name, TOY)
    with pytest.raises(TypeError, match=r"a Curriculum is needed, got tuple"):
        ued.register_curriculum("toy", tuple(TOY))
    with pytest.raises(TypeError, match=r"Curriculum.learns must be a function, got NoneType"):
        ued.register_curriculum("toy", TOY._replace(learns=None))
    with pytest.raises(TypeError, match=r"Curriculum.choose must be a function or None, got int"):
        ued.register_curriculum("toy", TOY._replace(choose=3))
    assert "toy" not in ued.CURRICULA
    with pytest.raises(ValueError, match=r"allowed: dr, plr, robust_plr, accel, paired"):
        ued.UEDConfig(curriculum="toy")
    with pytest.raises(ValueError, match="no registered curriculum 'plr'"):
        ued.unregister_curriculum("plr")


@pytest.mark.slow
def test_plot_levels_of_a_paired_run_draws_the_levels_its_adversary_built(tmp_path):
    from PIL import Image

    from tests.app.test_cli import rlsuite

    out = tmp_path / "run"
    tiny = ["--curriculum", "paired", "--env", "maze", "--total-timesteps", "2048"]
    tiny += ["--num-envs", "4", "--num-steps", "64", "--recurrent-size", "8", "--hidden-sizes", "8"]
    proc = rlsuite("train", "ued", *tiny, "--eval-episodes", "1", "--no-progress", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    image = tmp_path / "levels.png"
    proc = rlsuite("plot", out, "--levels", "--out", image)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The 8 held-out mazes, then the 4 levels (num_envs) seed 0's adversary built last: 3 rows.
    assert Image.open(image).size == (800, 750)
