"""RARL (`rlsuite.agents.rarl`) and the disturbance channel it needs
(`rlsuite.environment.adversarial`): pendulum's external torque against the motor's by hand, the
bound, the zero-sum views, the refusals, and the command line with an exact resume."""

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import ppo, rarl, registry
from rlsuite.agents.ppo_config import PPOBase
from rlsuite.app import cli, runs
from rlsuite.app.errors import UsageError
from rlsuite.data.transition import Transition
from rlsuite.environment.adversarial import DisturbanceView, Disturbed, physics_grid
from rlsuite.environment.wrappers import Wrapper
from rlsuite.loop.agent import config_dict
from rlsuite.loop.loggers import read_metrics
from tests.topics.test_resume import resumes_in_process


def _step(env, state, action, params):
    return env.step_without_reset(jax.random.key(0), state, jnp.asarray(action), params)


def test_pendulums_disturbance_is_a_torque_outside_the_motors_limit_and_cost():
    env, params = envs.make("pendulum")
    _, state = env.reset(jax.random.key(3), params)
    # Motor 0.5 and disturbance 0.7 move the pendulum as a motor torque of 1.2 would.
    disturbed = Disturbed(env, bound=1.0)
    obs, after, reward, *_ = _step(disturbed, state, [0.5, 0.7], params)
    _, plain, _, *_ = _step(env, state, [1.2], params)
    inner, plain_inner = after.env_state, plain.env_state
    np.testing.assert_allclose(inner.theta_dot, plain_inner.theta_dot, rtol=1e-6)
    np.testing.assert_allclose(inner.theta, plain_inner.theta, rtol=1e-6)
    # By hand: theta_dot' = theta_dot + (3 g / (2 l) sin theta + 3 / (m l^2) (u + d)) dt.
    th, thdot = float(state.env_state.theta), float(state.env_state.theta_dot)
    expected = thdot + (15.0 * math.sin(th) + 3.0 * 1.2) * 0.05
    np.testing.assert_allclose(float(inner.theta_dot), expected, rtol=1e-5)
    # The cost counts the motor's torque only (0.001 * 0.5^2) and the velocity after the
    # impulse, theta_dot + 3 * 0.7 * 0.05.
    angle = ((th + math.pi) % (2 * math.pi)) - math.pi
    pushed = thdot + 3.0 * 0.7 * 0.05
    np.testing.assert_allclose(
        float(reward), -(angle**2 + 0.1 * pushed**2 + 0.001 * 0.25), rtol=1e-5
    )
    # Beyond the motor's limit: the motor is clipped at 2, the disturbance adds to it.
    _, beyond, *_ = _step(Disturbed(env, bound=1.0), state, [5.0, 1.0], params)
    _, three, *_ = _step(Disturbed(env, bound=1.0), state, [2.0, 1.0], params)
    np.testing.assert_allclose(beyond.env_state.theta_dot, three.env_state.theta_dot)


def test_the_disturbance_is_clipped_at_its_bound_and_reported():
    env, params = envs.make("pendulum")
    _, state = env.reset(jax.random.key(0), params)
    disturbed = Disturbed(env, bound=0.5)
    space = disturbed.action_space(params)
    np.testing.assert_array_equal(space.low, [-2.0, -0.5])
    np.testing.assert_array_equal(space.high, [2.0, 0.5])
    _, big, _, _, _, info = _step(disturbed, state, [0.0, -9.0], params)
    _, bound, *_ = _step(disturbed, state, [0.0, -0.5], params)
    np.testing.assert_array_equal(big.env_state.theta_dot, bound.env_state.theta_dot)
    assert float(info["disturbance"]) == 0.5


def test_the_adversary_sees_the_disturbance_as_its_action_and_the_rewards_negated():
    env, params = envs.make("pendulum")
    _, state = env.reset(jax.random.key(1), params)
    view = DisturbanceView(env, bound=1.0)
    assert view.action_space(params).shape == (1,)
    _, after, reward, *_ = _step(view, state, [0.3], params)
    _, joint_after, joint_reward, *_ = _step(Disturbed(env, 1.0), state, [0.0, 0.3], params)
    assert float(reward) == -float(joint_reward)
    np.testing.assert_array_equal(after.env_state.theta_dot, joint_after.env_state.theta_dot)
    # RARL's views of a joint rollout: each its own part and extras, the adversary's rewards
    # the environment's negated.
    config = rarl.RARLConfig(num_envs=2, num_steps=4, num_minibatches=1, hidden_sizes=(8,))
    setup = rarl.prepare(config, env, params)
    tr = Transition(
        obs=jnp.zeros((3,)), action=jnp.array([1.5, -0.25]), reward=jnp.float32(-2.0),
        terminated=jnp.bool_(False), truncated=jnp.bool_(False), next_obs=jnp.zeros((3,)),
        info={}, extras={"protagonist": {"log_prob": 1.0}, "adversary": {"log_prob": 2.0}},
    )  # fmt: skip
    own = rarl.view(setup, tr, rarl.PROTAGONIST)
    theirs = rarl.view(setup, tr, rarl.ADVERSARY)
    assert own.action.tolist() == [1.5] and float(own.reward) == -2.0
    assert own.extras == {"log_prob": 1.0}
    assert theirs.action.tolist() == [-0.25] and float(theirs.reward) == 2.0
    assert theirs.extras == {"log_prob": 2.0}


def test_one_update_trains_both_learners_in_alternation():
    env, params = envs.make("pendulum")
    config = rarl.RARLConfig(
        num_envs=4, num_steps=16, num_minibatches=2, hidden_sizes=(8,), total_timesteps=64 * 8,
        protagonist_updates=2, disturbance_bound=0.4,
    )  # fmt: skip
    agent = rarl.make(config, env, params)
    assert agent.env_steps_per_update == 2 * 64 and config.num_updates == 4
    hp = agent.default_hparams
    state = agent.init(jax.random.key(0), hp)
    after, metrics = jax.jit(agent.update)(state, hp)
    # Each learner took its own number of PPO updates, its learning rate annealed over its own
    # count (the protagonist's 2 per update, 8 in all; the adversary's 1, 4 in all).
    assert int(after.protagonist.update_step) == 2 and int(after.adversary.update_step) == 1
    np.testing.assert_allclose(float(metrics["charts/learning_rate"]), 2.5e-4 * (1 - 0.5 / 8))
    np.testing.assert_allclose(float(metrics["adversary/charts/learning_rate"]), 2.5e-4)
    for side in ("protagonist", "adversary"):
        before = jax.tree.leaves(getattr(state, side).params)
        now = jax.tree.leaves(getattr(after, side).params)
        assert any(not np.array_equal(a, b) for a, b in zip(before, now, strict=True)), side
    assert 0.0 < metrics["rarl/disturbance_max"] <= jnp.float32(0.4)  # the bound, as float32
    assert float(metrics["rarl/adversary_env_steps"]) == 64
    # The agent acts as the protagonist alone, on the undisturbed environment.
    assert agent.env.action_space(params).shape == (1,)
    action = agent.act(after, jnp.zeros(3), jax.random.key(1), True)
    assert action.shape == (1,)


def test_refusals_name_the_field_or_the_environment():
    with pytest.raises(ValueError, match="RARLConfig.disturbance_bound must be a finite number"):
        rarl.RARLConfig(disturbance_bound=0.0)
    with pytest.raises(ValueError, match="RARLConfig.disturbance_bound must be a finite number"):
        rarl.RARLConfig(disturbance_bound=float("inf"))
    with pytest.raises(ValueError, match="RARLConfig.adversary_updates must be an integer >= 1"):
        rarl.RARLConfig(adversary_updates=0)
    with pytest.raises(ValueError, match="CartPole has no disturbance channel"):
        rarl.make(rarl.RARLConfig(), *envs.make("cartpole"))
    with pytest.raises(TypeError, match="needs a RARLConfig"):
        rarl.make(ppo.PPOConfig(), *envs.make("pendulum"))


def test_the_learners_are_feed_forward_gaussians_with_no_field_to_say_otherwise(tmp_path, capsys):
    # RARLConfig inherits PPO's shared fields, not the memory and distribution it would refuse.
    names = {f.name for f in dataclasses.fields(rarl.RARLConfig)}
    assert not names & {"distribution", "recurrent", "recurrent_size", "head_sizes"}
    assert names > {f.name for f in dataclasses.fields(PPOBase)}
    with pytest.raises(TypeError, match="recurrent"):
        rarl.RARLConfig(recurrent="lstm")
    config = rarl.RARLConfig(num_envs=2, num_steps=8, total_timesteps=160, hidden_sizes=(5,))
    learner = rarl.learner_config(config, 3)  # 160 // 16 = 10 updates, 3 PPO updates in each
    assert (learner.distribution, learner.recurrent) == ("gaussian", None)
    assert (learner.total_timesteps, learner.num_updates, learner.hidden_sizes) == (480, 30, (5,))
    # A record written while they were fields (each at its one allowed value) reads back; one
    # that held another value is refused by name; what is recorded still names them.
    algo = registry.get("rarl")
    recorded = config_dict(rarl.RARLConfig(num_envs=2, num_steps=8, num_minibatches=2))
    assert (recorded["distribution"], recorded["recurrent"]) == ("gaussian", None)
    assert (recorded["recurrent_size"], recorded["head_sizes"]) == (128, [])
    assert runs.config_of(algo, recorded) == rarl.RARLConfig(
        num_envs=2, num_steps=8, num_minibatches=2
    )
    with pytest.raises(UsageError, match=r"RARLConfig has no field recurrent .*'lstm'"):
        runs.config_of(algo, {**recorded, "recurrent": "lstm"})
    out = tmp_path / "run"
    assert cli.main(
        ["train", "rarl", "--env", "pendulum", "--recurrent", "lstm", "--out", str(out)]
    )
    assert "rarl takes no recurrent policy" in capsys.readouterr().err and not out.exists()


def test_the_physics_grid_scales_every_combination_and_refuses_unknown_fields():
    params = envs.make("pendulum")[1]
    cells, grid = physics_grid(params, ("mass", "length"), (0.5, 2.0))
    assert cells == [(0.5, 0.5), (0.5, 2.0), (2.0, 0.5), (2.0, 2.0)]
    np.testing.assert_allclose(grid.mass, [0.5, 0.5, 2.0, 2.0])
    np.testing.assert_allclose(grid.length, [0.5, 2.0, 0.5, 2.0])
    np.testing.assert_allclose(grid.gravity, [10.0] * 4)  # the others as they were
    with pytest.raises(ValueError, match="PendulumParams has no field 'friction'; its fields"):
        physics_grid(params, ("friction",), (1.0,))
    with pytest.raises(ValueError, match="scales must be finite numbers > 0, got 0"):
        physics_grid(params, ("mass",), (0,))


def test_a_wrapper_with_a_state_of_its_own_must_say_how_to_replace_the_inner_one():
    env, params = envs.make("pendulum")

    class Counting(Wrapper):
        def reset_env(self, key, params):
            obs, state = self.env.reset_env(key, params)
            return obs, (state, 0)

        def inner_state(self, state):
            return state[0]

    _, state = Counting(env).reset(jax.random.key(0), params)
    with pytest.raises(TypeError, match="Counting keeps a state of its own"):
        Counting(env).disturb(state, params, jnp.ones(1))


def test_the_command_line_trains_rarl_and_resumes_it_exactly(tmp_path, capsys):
    full = tmp_path / "full"
    args = ["train", "rarl", "--env", "pendulum", "--num-seeds", "2", "--total-timesteps", "768"]
    args += ["--num-envs", "4", "--num-steps", "32", "--num-minibatches", "2", "--hidden-sizes"]
    args += ["8", "--chunks", "3", "--disturbance-bound", "0.3", "--log-interval", "128"]
    args += ["--eval-episodes", "2", "--no-progress"]
    assert cli.main([*args, "--out", str(full)]) == 0
    assert "training rarl on pendulum" in capsys.readouterr().out
    rows = read_metrics(full)
    assert len(rows) == 2 * 6
    assert all(0.0 < r["rarl/disturbance_max"] <= np.float32(0.3) for r in rows)
    assert json.loads((full / "config.json").read_text())["config"]["disturbance_bound"] == 0.3
    resumes_in_process(full, tmp_path)
    # Evaluated at other physics from the command line: the run's policies on a heavier pole,
    # said and saved as such beside the evaluation at the run's own.
    for options in ([], ["--env-option", "mass=2.0"]):
        assert cli.main(["eval", str(full), "--episodes", "2", *options]) == 0
    printed = capsys.readouterr().out
    assert f"evaluation of {full} in mass=2.0 at 768 env steps" in printed
    saved = {p.name: json.loads(p.read_text()) for p in full.glob("eval_*.json")}
    assert sorted(saved) == ["eval_greedy_2_seed0.json", "eval_greedy_2_seed0_mass=2.0.json"]
    heavier, own = saved["eval_greedy_2_seed0_mass=2.0.json"], saved["eval_greedy_2_seed0.json"]
    assert heavier["env_options"] == {"mass": 2.0} and "env_options" not in own
    assert heavier["eval_return_per_seed"] != own["eval_return_per_seed"]
    assert cli.main(["eval", str(full), "--env-option", "mas=2.0"]) == 2
    assert "unknown argument(s) ['mas']; allowed: dt, gravity" in capsys.readouterr().err


@pytest.mark.slow  # MJX's compilation: about 15 s on 2 cores
def test_an_mjx_task_is_pushed_by_a_force_on_its_pole_for_one_step():
    env, params = envs.make("playground/CartpoleBalance")
    assert env.disturbance_shape(params) == (3,)
    _, state = env.reset(jax.random.key(0), params)
    disturbed = Disturbed(env, bound=2.0)
    step = jax.jit(lambda s, a: disturbed.step_without_reset(jax.random.key(0), s, a, params))
    pushed, still = state, state
    for _ in range(10):
        pushed = step(pushed, jnp.array([0.0, 2.0, 0.0, 0.0]))[1]  # 2 N along x on the pole
        still = step(still, jnp.zeros(4))[1]
    # The pole (qpos[1], its hinge angle) tips where it is pushed; the cart barely moves.
    tip = float(pushed.env_state.playground.data.qpos[1] - still.env_state.playground.data.qpos[1])
    assert abs(tip) > 0.05, tip
    # The force acts on the step it was given for: the state after it holds none.
    np.testing.assert_array_equal(pushed.env_state.playground.data.xfrc_applied, 0.0)
    with pytest.raises(ValueError, match="playground/CheetahRun has no disturbance channel"):
        Disturbed(envs.make("playground/CheetahRun")[0], bound=1.0)
