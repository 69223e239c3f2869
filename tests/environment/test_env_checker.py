"""A user's environment: its contract checked where it is first used, with errors that name the
method and the fix, and registration so that scripts and the command line reach it by name."""

import json
import os
import textwrap

import jax
import jax.numpy as jnp
import pytest

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.environment.checker import EnvContractError, check_env
from rlsuite.environment.spaces import Box
from rlsuite.environment.wrappers import TimeLimit

# A new environment as a user writes it: walk left or right on a line, reward at the right end.
WALK = textwrap.dedent(
    """
    import jax, jax.numpy as jnp
    from flax import struct
    from rlsuite.environment import Environment
    from rlsuite.environment.spaces import Box, Discrete

    @struct.dataclass
    class WalkParams:
        size: int = struct.field(pytree_node=False, default=5)

    class Walk(Environment):
        max_episode_steps = 20

        @property
        def default_params(self):
            return WalkParams()

        def reset_env(self, key, params):
            position = jnp.zeros((), jnp.int32)
            return self._obs(position, params), position

        def step_env(self, key, position, action, params):
            position = jnp.clip(position + 2 * action - 1, 0, params.size)
            terminated = position == params.size
            reward = terminated.astype(jnp.float32)
            return self._obs(position, params), position, reward, terminated, jnp.bool_(False), {}

        def _obs(self, position, params):
            return jnp.stack([position / params.size, 1.0 - position / params.size])

        def observation_space(self, params):
            return Box(0.0, 1.0, (2,))

        def action_space(self, params):
            return Discrete(2)
    """
)
namespace: dict = {}
exec(compile(WALK, "walk.py", "exec"), namespace)
Walk = namespace["Walk"]


def _broken(step=None, reset=None, **methods):
    """`Walk` with one method replaced by a mistake."""
    attrs = dict(methods)
    if step is not None:
        attrs["step_env"] = lambda self, key, s, a, p: step(Walk.step_env(self, key, s, a, p))
    if reset is not None:
        attrs["reset_env"] = lambda self, key, p: reset(Walk.reset_env(self, key, p))
    return type("Broken", (Walk,), attrs)()


def _missing(self, params):
    raise NotImplementedError


MISTAKES = {
    "gymnax's old 5-tuple": (
        _broken(step=lambda r: (r[0], r[1], r[2], r[3] | r[4], r[5])),
        "Broken.step_env returned 5 values (gymnax's old contract); return six",
    ),
    "a reward of shape (1,)": (
        _broken(step=lambda r: (r[0], r[1], r[2][None], *r[3:])),
        "returned a reward of shape (1,); it is one environment's reward, a scalar of shape ()",
    ),
    "a float terminated": (
        _broken(step=lambda r: (r[0], r[1], r[2], r[3].astype(jnp.float32), *r[4:])),
        "returned `terminated` as float32(); return a bool scalar",
    ),
    "an observation unlike its space": (
        _broken(observation_space=lambda self, params: Box(0.0, 1.0, (3,))),
        "Broken.reset_env returned an observation float32(2,), but observation_space(params) is",
    ),
    "no observation_space": (
        _broken(observation_space=_missing),
        "Broken.observation_space(params) is not implemented: return an "
        "rlsuite.environment.spaces.Box",
    ),
    "no default_params": (
        _broken(default_params=property(lambda self: _missing(self, None))),
        "Broken.default_params is not implemented: return the environment's params",
    ),
    "a state whose dtype changes": (
        _broken(step=lambda r: (r[0], r[1].astype(jnp.float32), *r[2:])),
        "Broken.step_env returned state as float32(), reset_env as int32(); return the same",
    ),
    "reset's three values": (
        _broken(reset=lambda r: (*r, {})),
        "Broken.reset_env returned 3 values; return (obs, state)",
    ),
    "info as a tuple": (
        _broken(step=lambda r: (*r[:5], ())),
        "returned info as a tuple; return a dict",
    ),
}


def test_a_correct_environment_passes_and_trains():
    env = Walk()
    check_env(env)
    check_env(TimeLimit(env, 20))
    obs, state = env.reset(jax.random.key(0))
    assert obs.shape == (2,)
    agent = ppo.make(ppo.PPOConfig(num_envs=2, num_steps=8, num_minibatches=1), env, None)
    state = agent.init(jax.random.key(0), agent.default_hparams)
    _, metrics = jax.jit(agent.update)(state, agent.default_hparams)
    assert jnp.isfinite(metrics["losses/value_loss"])


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_mistake_is_named_before_anything_is_compiled(mistake):
    env, message = MISTAKES[mistake]
    with pytest.raises((EnvContractError, NotImplementedError)) as error:
        check_env(env)
    assert message in str(error.value)
    # Where the environment is first used: an agent's make, before anything is compiled.
    with pytest.raises((EnvContractError, NotImplementedError)) as again:
        ppo.make(ppo.PPOConfig(num_envs=2, num_steps=8, num_minibatches=1), env, None)
    assert message in str(again.value)
    # And every use after it, as long as the mistake is there (the check is not skipped).
    with pytest.raises((EnvContractError, NotImplementedError)):
        env.reset(jax.random.key(0))


def test_the_check_runs_once_per_environment(monkeypatch):
    import rlsuite.environment

    calls = []
    real = rlsuite.environment.check_env
    monkeypatch.setattr(rlsuite.environment, "check_env", lambda *a: calls.append(a) or real(*a))
    env = TimeLimit(Walk(), 20)
    for _ in range(3):
        env.reset(jax.random.key(0))
        env.step(jax.random.key(1), env.reset(jax.random.key(0))[1], jnp.int32(1))
    assert len(calls) == 1


def test_register_and_make_by_name(monkeypatch):
    from rlsuite.envs import registry

    monkeypatch.setattr(registry, "REGISTERED", {})  # other tests in this process list names
    envs.register("test/walk", Walk)
    env, params = envs.make("test/walk")
    assert "test/walk" in envs.names()
    assert isinstance(env, TimeLimit) and env.max_episode_steps == 20  # the class's own limit
    env, _ = envs.make("test/walk", max_episode_steps=None)
    assert isinstance(env, Walk)
    env, params = envs.make("test/walk", size=3)
    assert params.size == 3
    with pytest.raises(ValueError, match="built-in environment's name"):
        envs.register("cartpole", Walk)
    envs.register("test/not-an-env", lambda: object())
    with pytest.raises(TypeError, match="must return an rlsuite.environment.Environment"):
        envs.make("test/not-an-env")
    with pytest.raises(ValueError, match="no module 'no_such_module' on the path"):
        envs.make("no_such_module:Walk")


def test_the_command_line_trains_and_resumes_a_users_environment_by_module_name(
    tmp_path, monkeypatch
):
    from rlsuite.app import train
    from rlsuite.app.argv import read
    from tests.app.test_cli import rlsuite

    (tmp_path / "walk.py").write_text(WALK)
    out = tmp_path / "run"
    args = ["train", "ppo", "--env", "walk:Walk", "--total-timesteps", "256", "--num-envs", "4"]
    args += ["--num-steps", "16", "--num-minibatches", "2", "--chunks", "2", "--no-progress"]
    proc = rlsuite(*args, "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ppo on walk:Walk" in proc.stdout
    final = json.loads((out / "final.json").read_text())
    assert final["env"] == "walk:Walk"
    (out / "final.json").unlink()
    proc = rlsuite("train", "--resume", out, "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        json.loads((out / "final.json").read_text())["eval_return_per_seed"]
        == (final["eval_return_per_seed"])
    )
    # Without --out, its folder's name has no colon (which some file systems refuse).
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    default = train.new_run(read(["ppo", "--env", "walk:Walk"]), "train").out
    assert default.parent.name == "runs" and default.name.startswith("ppo_walk-Walk_")
    # A broken one is refused with the message, before training.
    (tmp_path / "walk5.py").write_text(
        WALK.replace(", jnp.bool_(False), {}", ", {}").replace("class Walk(", "class Walk5(")
    )
    proc = rlsuite("train", "ppo", "--env", "walk5:Walk5", cwd=tmp_path, env=dict(os.environ))
    assert proc.returncode == 2
    assert "Walk5.step_env returned 5 values (gymnax's old contract); return six" in proc.stderr
    assert not (tmp_path / "runs").exists()
