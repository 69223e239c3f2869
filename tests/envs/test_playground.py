"""MuJoCo Playground's DM Control suite through `envs/playground_adapter.py`.

Parity: 1,000 random-action steps of two environments, with an episode length of 100 so that ten
episodes end in each, equal Playground's own environment behind its brax training wrapper
(`wrap_for_brax_training(..., full_reset=True)`) step for step: observations, rewards, the
done and truncation flags, and each episode's start (our auto-reset given the key the wrapper
resets with), on three tasks of different kinds (a cart-pole, a pendulum swung up, a
planar runner with contacts). Our pre-reset observation is Playground's own step's (the wrapper
keeps none). The wrapper's `info["truncation"]` is not compared: with `full_reset=True` it is the
reset's, 0, at every time-limit end (asserted below), where ours says truncated."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.environment import auto_reset, select

pytest.importorskip("mujoco_playground")

LENGTH, STEPS, NUM_ENVS = 100, 1000, 2


def _reference(task: str, actions):
    """Playground's environment behind its training wrapper: per step the observation, reward,
    done and truncation flags, the pre-reset observation (Playground's raw step) and the key
    the wrapper's full reset uses where an episode ends."""
    from mujoco_playground import dm_control_suite, wrapper

    raw = dm_control_suite.load(task, config_overrides={"impl": "jax"})
    wrapped = wrapper.wrap_for_brax_training(raw, episode_length=LENGTH, full_reset=True)
    keys = jax.random.split(jax.random.key(7), NUM_ENVS)
    keys = jax.random.key_data(keys)

    def split(rng):  # the wrapper's `jax.vmap(jax.random.split)(rng)[..., 1]`
        return jax.vmap(jax.random.split)(rng)[..., 1]

    def one(state, action):
        reset_key = split(split(state.info["AutoResetWrapper_rng"]))
        # (copies of the dicts: a task writes its reward terms into `metrics` in place)
        before = state.replace(info=dict(state.info), metrics=dict(state.metrics))
        pre = jax.vmap(raw.step)(before, action).obs
        state = wrapped.step(state, action)
        out = (state.obs, state.reward, state.done, state.info["truncation"], pre, reset_key)
        return state, out

    @jax.jit
    def run(keys, actions):
        state = wrapped.reset(keys)
        first_key = split(keys)
        return state.obs, first_key, jax.lax.scan(one, state, actions)[1]

    return run(keys, actions)


def _ours(task: str, actions, first_key, reset_keys):
    """Our adapter (as `envs.make` builds it, with `TimeLimit`) stepped with our auto-reset,
    each reset given the wrapper's key."""
    env, params = envs.make(f"playground/{task}", max_episode_steps=LENGTH)

    def one(carry, xs):
        obs, state = carry
        action, reset_key = xs
        result = jax.vmap(env.step_without_reset, in_axes=(None, 0, 0, None))(
            jax.random.key(0), state, action, params
        )

        def reset_where(done, obs, state):
            fresh = jax.vmap(env.reset, in_axes=(0, None))(reset_key, params)
            return jax.vmap(select)(done, fresh, (obs, state))

        obs, state, reward, terminated, truncated, info = auto_reset(result, reset_where)
        return (obs, state), (obs, reward, terminated, truncated, info["final_observation"])

    @jax.jit
    def run(actions, first_key, reset_keys):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(first_key, params)
        return obs, jax.lax.scan(one, (obs, state), (actions, reset_keys))[1]

    return run(actions, first_key, reset_keys)


@pytest.mark.parametrize(
    "task",
    [
        pytest.param("CartpoleBalance", marks=pytest.mark.slow),  # one task in the default run
        "PendulumSwingup",
        # 3,000 cheetah steps on a CPU (ours, the wrapper's and its raw step): 80 s
        pytest.param("CheetahRun", marks=pytest.mark.slow),
    ],
)
def test_parity_with_playgrounds_training_wrapper(task):
    env, params = envs.make(f"playground/{task}")
    size = env.action_space(params).shape[0]
    actions = jax.random.uniform(jax.random.key(1), (STEPS, NUM_ENVS, size), minval=-1, maxval=1)
    first_obs, first_key, ref = _reference(task, actions)
    obs, reward, done, truncation, pre, reset_keys = map(np.asarray, ref)
    assert done.sum() == NUM_ENVS * STEPS // LENGTH  # ten ends per environment
    our_first, ours = _ours(task, actions, first_key, jnp.asarray(reset_keys))
    our_obs, our_reward, terminated, truncated, final = map(np.asarray, ours)
    np.testing.assert_array_equal(np.asarray(our_first), np.asarray(first_obs))
    np.testing.assert_array_equal(our_obs, obs)
    np.testing.assert_array_equal(our_reward, reward)
    np.testing.assert_array_equal(terminated | truncated, done > 0.5)
    # Every end is the time limit's: truncated at steps 100, 200, ..., never terminated.
    ends = (np.arange(1, STEPS + 1) % LENGTH == 0)[:, None]
    np.testing.assert_array_equal(truncated, np.broadcast_to(ends, truncated.shape))
    assert not terminated.any()
    # The wrapper's full reset replaces the step's info with the reset's, so its truncation flag
    # (what brax's PPO bootstraps by) reads 0 at every time-limit end; ours says truncated.
    assert not truncation.any()
    # The truncation step's observation to bootstrap from is the pre-reset one, not the reset's.
    np.testing.assert_array_equal(final, pre)
    assert not np.allclose(final[truncated], our_obs[truncated])


# ----------------------------------------------------------------- names, options, refusals


def test_the_suites_tasks_are_named_and_the_others_refused_saying_why():
    from rlsuite.envs import playground_adapter as pg

    names = envs.names()
    assert "playground/CartpoleBalance" in names and "playground/CheetahRun" in names
    assert len([n for n in names if n.startswith("playground/")]) == len(pg.playground_names())
    assert len(pg.playground_names()) + len(pg.unbuildable()) == 25  # the DM Control suite's 25
    with pytest.raises(ValueError, match="Go1Getup.*Menagerie.*downloads nothing"):
        envs.make("playground/Go1Getup")
    with pytest.raises(ValueError, match="PandaPickCube.*Menagerie"):
        envs.make("playground/PandaPickCube")
    with pytest.raises(ValueError, match="unknown environment 'playground/Cartpole'; did you"):
        envs.make("playground/Cartpole")


def test_a_task_the_pinned_mujoco_cannot_build_is_refused_by_name():
    import mujoco
    from rlsuite.envs import playground_adapter as pg

    if not pg.unbuildable():  # a MuJoCo with MjSpec.find_body builds Reacher
        envs.make("playground/ReacherEasy")
        return
    assert not hasattr(mujoco.MjSpec, "find_body")
    assert set(pg.unbuildable()) == {"ReacherEasy", "ReacherHard"}
    with pytest.raises(ValueError, match="ReacherEasy.*MjSpec.find_body"):
        envs.make("playground/ReacherEasy")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"foo": 1}, r"unknown config key\(s\) \['foo'\]; allowed: action_repeat, .*body_mass"),
        ({"impl": "cuda"}, "impl='cuda'; allowed: jax, warp"),
        ({"randomize": "yes"}, "randomize='yes'; allowed: true or false"),
        ({"vision": True}, "vision=True observes a dict of pixels"),
        ({"body_mass": [1.0, 2.0]}, r"params.body_mass of shape \(2,\); allowed: shape \(3,\)"),
        ({"body_mass": [0.0, -1.0, 0.1]}, r"params.body_mass=\[0.0, -1.0, 0.1.*values >= 0"),
    ],
)
def test_bad_options_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        envs.make("playground/CartpoleBalance", **kwargs)


@pytest.mark.skipif(jax.default_backend() == "gpu", reason="Warp's kernels run on a CUDA GPU")
def test_warp_is_refused_where_it_cannot_run(tmp_path, capsys):
    """`impl=warp` on a CPU: refused by name with the implementations this platform runs, before
    Playground loads the task (its Warp kernels would fail inside the trace and hang)."""
    from rlsuite.app import cli

    with pytest.raises(ValueError, match="impl='warp' needs .*; allowed here: jax$"):
        envs.make("playground/PendulumSwingup", impl="warp")
    out = tmp_path / "run"
    argv = ["train", "ppo", "--env", "playground/PendulumSwingup", "--env-option", "impl=warp"]
    assert cli.main([*argv, "--out", str(out)]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].endswith("allowed here: jax") and not out.exists()


def test_options_from_the_command_line_take_their_types():
    from rlsuite.envs.options import parse_options

    options = parse_options(
        "playground/CartpoleBalance",
        {"episode_length": "200", "randomize": "true", "body_mass": "[0, 1, 0.2]"},
    )
    assert options["episode_length"] == 200 and options["randomize"] is True
    env, params = envs.make("playground/CartpoleBalance", **options)
    assert env.max_episode_steps == 200 and env.env.randomize
    np.testing.assert_array_equal(params.body_mass, np.float32([0, 1, 0.2]))
    with pytest.raises(ValueError, match="episode_length takes an integer"):
        parse_options("playground/CartpoleBalance", {"episode_length": "long"})


def test_the_time_limit_is_the_tasks_episode_length_and_reward_terms_are_in_info():
    env, params = envs.make("playground/CartpoleBalance")
    assert env.max_episode_steps == 1000  # Playground's config
    _, state = env.reset(jax.random.key(0), params)
    _, _, reward, terminated, truncated, info = jax.jit(env.step)(
        jax.random.key(1), state, jnp.zeros(1), params
    )
    terms = {k: float(v) for k, v in info.items() if k.startswith("reward/")}
    assert {"reward/upright", "reward/centered", "reward/small_control"} <= set(terms)
    # CartpoleBalance's reward is the product of its four dense terms.
    product = np.prod([terms[f"reward/{k}"] for k in ("upright", "centered")])
    product *= terms["reward/small_control"] * terms["reward/small_velocity"]
    np.testing.assert_allclose(float(reward), product, rtol=1e-6)
    assert not bool(terminated) and not bool(truncated)


# ----------------------------------------------------------------- physics as params


POLE = 2  # CartpoleBalance's bodies: world, cart, pole_1


def _pole_masses(masses):
    env, params = envs.make("playground/CartpoleBalance")
    batch = jax.tree.map(lambda x: jnp.stack([x] * len(masses)), params)
    return env, params, batch.replace(body_mass=batch.body_mass.at[:, POLE].set(masses))


@pytest.mark.slow
def test_four_envs_of_a_ppo_run_step_each_with_its_own_pole_mass():
    from rlsuite.agents import ppo
    from rlsuite.loop.rollout import reset_each

    masses = jnp.float32([0.05, 0.1, 0.4, 1.0])
    env, params, batch = _pole_masses(masses)
    config = ppo.PPOConfig(num_envs=4, num_steps=64, hidden_sizes=(8,))
    setup = ppo.prepare(config, env, params)
    state = ppo.init(setup, jax.random.key(0), ppo.PPOHparams())
    state = state.replace(env=reset_each(setup.env, batch, jax.random.key(1)))
    _, tr = jax.jit(lambda s: ppo.collect(setup, s, jax.random.key(2)))(state)
    assert not np.any(np.asarray(tr.terminated | tr.truncated))

    def alone(physics, start, actions):
        def one(carry, action):
            obs, s, reward, *_ = env.step(jax.random.key(0), carry, action, physics)
            return s, (obs, reward)

        return jax.lax.scan(one, start, actions)[1]

    runs = []
    for i in range(4):  # the state below PPO's episode statistics, as `env` keeps it
        start = jax.tree.map(lambda x, i=i: x[i], state.env.state.env_state)
        physics = jax.tree.map(lambda x, i=i: x[i], batch)
        actions = jnp.clip(tr.action[:, i], -1.0, 1.0)  # PPO's Gaussian is clipped to the box
        obs, reward = jax.jit(alone)(physics, start, actions)
        np.testing.assert_array_equal(np.asarray(obs), np.asarray(tr.next_obs[:, i]))
        # (the reward, a product of four terms, is fused differently in the batched program:
        # equal to the last bit or two)
        np.testing.assert_allclose(np.asarray(reward), np.asarray(tr.reward[:, i]), rtol=3e-7)
        runs.append(np.asarray(jax.jit(alone)(params, start, actions)[0]))
    # With the default pole (0.1 kg) only the second environment's run is the same.
    same = [np.array_equal(runs[i], np.asarray(tr.next_obs[:, i])) for i in range(4)]
    assert same == [False, True, False, False]


def test_the_randomiser_draws_a_batch_under_jit_within_its_ranges():
    env, params = envs.make("playground/CartpoleBalance")
    draw = jax.jit(jax.vmap(env.env.randomiser(), in_axes=(0, None)))
    batch = draw(jax.random.split(jax.random.key(0), 256), params)
    ratio = np.asarray(batch.body_mass) / np.maximum(np.asarray(params.body_mass), 1e-9)
    # Cartpole: the cart's and the pole's masses each scaled by U(0.5, 2); nothing else varies.
    assert np.all(ratio[:, 1:] >= 0.5) and np.all(ratio[:, 1:] <= 2.0)
    assert ratio[:, 1:].min() < 0.6 and ratio[:, 1:].max() > 1.9
    assert len(np.unique(ratio[:, POLE])) == 256 and not np.allclose(ratio[:, 1], ratio[:, 2])
    assert np.all(np.asarray(batch.body_mass)[:, 0] == 0)
    for field in ("geom_friction", "dof_damping", "actuator_gain"):
        np.testing.assert_array_equal(
            np.asarray(getattr(batch, field)),
            np.broadcast_to(getattr(params, field), getattr(batch, field).shape),
        )
    again = draw(jax.random.split(jax.random.key(0), 256), params)
    np.testing.assert_array_equal(np.asarray(again.body_mass), np.asarray(batch.body_mass))


def test_randomize_draws_each_episodes_physics_and_steps_with_it():
    env, params = envs.make("playground/CartpoleBalance", randomize=True)
    keys = jax.random.split(jax.random.key(3), 4)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    drawn = state.env_state.physics
    assert len(np.unique(np.asarray(drawn.body_mass[:, POLE]))) == 4
    plain, _ = envs.make("playground/CartpoleBalance")
    actions = jax.random.uniform(jax.random.key(4), (50, 4, 1), minval=-1, maxval=1)

    def run(env, state, physics, actions):
        def one(s, a):
            obs, s, *_ = env.step(jax.random.key(0), s, a, physics)
            return s, obs

        return jax.lax.scan(one, state, actions)[1]

    batched = jax.jit(jax.vmap(run, in_axes=(None, 0, None, 1), out_axes=1), static_argnums=0)
    together = np.asarray(batched(env, state, params, actions))
    for i in range(4):  # each alone, in the task without randomize, given its drawn physics
        start = jax.tree.map(lambda x, i=i: x[i], state)
        start = start.replace(env_state=start.env_state.replace(physics=None))
        physics = jax.tree.map(lambda x, i=i: x[i], drawn)
        alone = np.asarray(jax.jit(run, static_argnums=0)(plain, start, physics, actions[:, i]))
        np.testing.assert_array_equal(alone, together[:, i])
    default = np.asarray(jax.jit(run, static_argnums=0)(plain, start, params, actions[:, 3]))
    assert not np.array_equal(default, together[:, 3])


# ----------------------------------------------------------------- the command line


def test_a_task_that_needs_a_download_is_refused_before_anything_is_written(tmp_path, capsys):
    from rlsuite.app import cli

    out = tmp_path / "run"
    code = cli.main(
        ["train", "ppo", "--env", "playground/Go1JoystickFlatTerrain", "--out", str(out)]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert len(err) == 1 and "Go1JoystickFlatTerrain' cannot run here" in err[0]
    assert "MuJoCo Menagerie" in err[0] and "downloads nothing at run time" in err[0]


def test_a_playground_state_renders():
    """In a subprocess: MuJoCo's OpenGL backend is chosen before MuJoCo is first imported."""
    import subprocess
    import sys

    script = """if True:
        import jax, numpy as np
        from rlsuite.envs import rendering
        rendering.use_gl()
        import mujoco
        try:
            mujoco.Renderer(mujoco.MjModel.from_xml_string("<mujoco/>"), 16, 16).render()
        except Exception as error:
            print("SKIP", error)
            raise SystemExit(0)
        from rlsuite import envs
        env, params = envs.make("playground/CartpoleBalance")
        _, state = jax.jit(env.reset)(jax.random.key(0), params)
        image = rendering.render_state(env, params, state, 64, 48)
        assert image.shape == (48, 64, 3) and image.dtype == np.uint8, image.shape
        assert image.std() > 5, image.std()
        heavy = params.replace(body_mass=params.body_mass.at[2].set(1.0))
        again = rendering.render_state(env, heavy, state, 64, 48)
        assert np.array_equal(image, again)  # the picture is of the state, whatever the mass
    """
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if proc.stdout.startswith("SKIP"):
        pytest.skip(f"MuJoCo cannot render here: {proc.stdout.strip()}")
