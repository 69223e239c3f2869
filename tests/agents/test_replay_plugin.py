"""A replay buffer and a relabelling function passed into the off-policy loop: the default is
today's uniform buffer, bit for bit; a buffer passed in is the one stored, filled, sampled and
learned from; a relabelling is applied to every sampled batch; bad input is refused."""

import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from rlsuite import envs
from rlsuite.agents import sac, td3
from rlsuite.data import buffers
from rlsuite.loop import driver
from tests.trees import assert_same

train = jax.jit(driver.train, static_argnums=(0, 3))
TINY = dict(num_envs=2, buffer_size=1000, batch_size=8, learning_starts=8, hidden_sizes=(8,))


def tiny_sac_run(**make_kwargs):
    env, params = envs.make("pendulum")
    agent = sac.make(sac.SACConfig(**TINY), env, params, **make_kwargs)
    return train(agent, jax.random.key(7), sac.SACHparams(), 6)


# ----------------------------------------------------------------------- the default, unchanged
# The run of `tiny_sac_run()` in a fresh process with XLA:CPU's own defaults (no XLA_FLAGS, one
# CPU device) as well as in this worker (where an earlier test may have made the CPU cores devices,
# `platform.use_cpu_cores`, which also turns YNNPACK off, so that other last bits are computed):
# in each, the default buffer and `buffers.replay_buffer` passed in explicitly learn the same
# bits. Both sides run on the same machine in the same process, so no CPU model's last bits are
# pinned; what does not depend on float rounding (when learning starts, the buffer's sizes, the
# key after the run) is held to values derived by hand.
FRESH_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
import jax
from rlsuite.data import buffers
from tests.agents.test_replay_plugin import tiny_sac_run
from tests.trees import leaves_equal
default = tiny_sac_run()
explicit = tiny_sac_run(buffer=buffers.replay_buffer(1000))
state, metrics = default
print(json.dumps({
    "same": bool(leaves_equal(default, explicit)),
    "critic_loss": [float(v) for v in metrics["losses/critic_loss"]],
    "buffer_size": [int(v) for v in metrics["charts/buffer_size"]],
    "key": jax.random.key_data(state.key).tolist(),
}))
"""


def test_sac_default_buffer_is_unchanged_bit_for_bit():
    state, metrics = tiny_sac_run()
    explicit = tiny_sac_run(buffer=buffers.replay_buffer(1000))
    assert_same((state, metrics), explicit)
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    proc = subprocess.run(
        [sys.executable, "-c", FRESH_RUN, str(root)],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    fresh = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fresh["same"]
    # 2 envs, 2 items an update: learning starts on update 4 (learning_starts 8), before which
    # the critic's loss is NaN (no gradient step); the buffer holds 2 more items each update.
    losses = fresh["critic_loss"]
    assert all(np.isnan(losses[:3])) and all(np.isfinite(losses[3:]))
    assert fresh["buffer_size"] == [2, 4, 6, 8, 10, 12]
    assert np.asarray(metrics["charts/buffer_size"]).tolist() == fresh["buffer_size"]
    # The key after the run (threefry: integer arithmetic, the same on every machine).
    assert fresh["key"] == jax.random.key_data(state.key).tolist() == [1052407801, 3042176446]


# ------------------------------------------------------------------------ a buffer passed in
@struct.dataclass
class CountedState:
    inner: buffers.BufferState
    adds: jax.Array  # add calls
    added: jax.Array  # valid items offered to add

    @property
    def size(self):
        return self.inner.size


def counted(capacity: int) -> buffers.ReplayBuffer:
    """The uniform buffer, with a count of the add calls and valid items in its state."""
    inner = buffers.replay_buffer(capacity)

    def add(state, items, valid):
        return CountedState(
            inner.add(state.inner, items, valid), state.adds + 1, state.added + valid.sum()
        )

    return buffers.ReplayBuffer(
        init=lambda item: CountedState(inner.init(item), jnp.int32(0), jnp.int32(0)),
        add=add,
        sample=lambda state, key, batch_size: inner.sample(state.inner, key, batch_size),
        can_sample=lambda state, batch_size: inner.can_sample(state.inner, batch_size),
    )


def test_a_buffer_passed_in_is_stored_filled_and_sampled():
    # The counting wrapper delegates to the default buffer: the run is the default one, bit for
    # bit, and its state is the wrapper's, which saw 6 add calls of 2 items.
    reference, reference_metrics = tiny_sac_run()
    state, metrics = tiny_sac_run(buffer=counted(1000))
    assert isinstance(state.buffer, CountedState)
    assert (int(state.buffer.adds), int(state.buffer.added)) == (6, 12)
    assert_same(reference.buffer, state.buffer.inner)
    assert_same(reference.learner, state.learner)
    assert_same(reference_metrics, metrics)


def test_a_buffer_passed_in_brings_its_capacity_and_its_memory_check():
    env, params = envs.make("pendulum")
    for make, config in ((sac.make, sac.SACConfig(**TINY)), (td3.make, td3.TD3Config(**TINY))):
        agent = make(config, env, params, buffer=buffers.replay_buffer(64))
        shapes = jax.eval_shape(agent.init, jax.random.key(0), agent.default_hparams)
        assert shapes.buffer.data["obs"].shape == (64, 3)  # not config.buffer_size
    # The memory check sizes the buffer passed in (38 bytes an item, 8 for the counters, as in
    # test_off_policy), not config.buffer_size.
    with pytest.raises(MemoryError, match=r"sac: the replay buffer passed in needs 38,000,000,0"):
        sac.make(sac.SACConfig(**TINY), env, params, buffer=buffers.replay_buffer(10**12))
    huge = sac.SACConfig(**{**TINY, "buffer_size": 10**12})
    with pytest.raises(MemoryError, match="lower buffer_size"):
        sac.make(huge, env, params)
    sac.make(huge, env, params, buffer=buffers.replay_buffer(64))  # fits: config's size unused


# --------------------------------------------- what the learner trains on: a fixed transition
OBS, ACTION = jnp.array([0.5, -0.25, 1.0]), jnp.array([0.3])


def fixed(capacity: int, reward: float) -> buffers.ReplayBuffer:
    """The uniform buffer, except that every sample is the one transition (OBS, ACTION, reward)
    with discount 0, whose SAC critic target is `reward * reward_scale` whatever the key."""
    inner = buffers.replay_buffer(capacity)
    item = {
        "obs": OBS,
        "action": ACTION,
        "reward": jnp.float32(reward),
        "discount": jnp.float32(0.0),
        "next_obs": -OBS,
        "terminated": jnp.bool_(True),
        "truncated": jnp.bool_(False),
    }

    def sample(state, key, batch_size):
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch_size, *x.shape)), item)

    return inner._replace(sample=sample)


def assert_close(actual, wanted):
    """One jitted program against another: equal up to float32 rounding."""
    np.testing.assert_allclose(actual, wanted, rtol=1e-6, atol=1e-7)


def expected_critic(config, hp, reward, learner_state):
    """The critic after one SAC step on the batch of the fixed transition with `reward`
    (already scaled): the key only moves the actor, not the critic (discount 0)."""
    batch = {
        "obs": jnp.broadcast_to(OBS, (config.batch_size, 3)),
        "action": jnp.broadcast_to(ACTION, (config.batch_size, 1)),
        "reward": jnp.full((config.batch_size,), reward, jnp.float32),
        "discount": jnp.zeros((config.batch_size,)),
        "next_obs": jnp.broadcast_to(-OBS, (config.batch_size, 3)),
    }
    algo = sac.learner(config, (3,), 1)
    learn = jax.jit(lambda state: algo.learn(state, batch, jax.random.key(99), hp)[0])
    return learn(learner_state).critic


@pytest.mark.parametrize("relabelled", [False, True])
def test_the_learner_trains_on_the_buffer_samples_and_relabelled_batches(relabelled):
    # One update: 2 env steps, then one gradient step on the fixed transition (reward 1.5), with
    # rewards scaled by 2 after the relabelling, which sets them to -4 (and gets a key).
    env, params = envs.make("pendulum")
    config = sac.SACConfig(
        num_envs=2, buffer_size=16, batch_size=2, learning_starts=0, hidden_sizes=(8,)
    )
    hp = sac.SACHparams(reward_scale=2.0)
    seen = []

    def relabel(key, batch):
        seen.append(jax.random.key_data(key).shape)  # at trace time
        return {**batch, "reward": jnp.full_like(batch["reward"], -4.0)}

    extra = {"relabel": relabel} if relabelled else {}
    agent = sac.make(config, env, params, buffer=fixed(16, 1.5), **extra)
    state, metrics = train(agent, jax.random.key(1), hp, 1)
    before = agent.init(jax.random.key(1), hp).learner
    target = -8.0 if relabelled else 3.0
    expected = expected_critic(config, hp, target, before)
    jax.tree.map(assert_close, state.learner.critic, expected)
    # The other reward gives another critic: the comparison tells the two apart.
    other = expected_critic(config, hp, 3.0 if relabelled else -8.0, before)
    bias = state.learner.critic["params"]["MLP_0"]["Dense_1"]["bias"]
    assert not np.allclose(bias, other["params"]["MLP_0"]["Dense_1"]["bias"], rtol=1e-3)
    assert (set(seen) == {(2,)}) if relabelled else (seen == [])  # traced, given a key
    assert int(state.buffer.size) == 2  # the env steps still went to the buffer passed in
    assert np.isfinite(metrics["losses/critic_loss"][0])


# --------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("make, Config", [(sac.make, sac.SACConfig), (td3.make, td3.TD3Config)])
def test_bad_buffer_or_relabel_is_refused_before_compiling(make, Config):
    env, params = envs.make("pendulum")
    name = Config.__name__[:3].lower()
    config = Config(**TINY)
    with pytest.raises(TypeError, match=rf"{name}: buffer must be a replay buffer.*got function"):
        make(config, env, params, buffer=buffers.replay_buffer)  # the factory, not a buffer
    no_sample = {"init": None, "add": None}
    with pytest.raises(TypeError, match=r"got dict without init, add, sample, can_sample"):
        make(config, env, params, buffer=no_sample)
    partial = buffers.replay_buffer(64)._replace(sample=None)
    with pytest.raises(TypeError, match=r"got ReplayBuffer without sample$"):
        make(config, env, params, buffer=partial)
    with pytest.raises(TypeError, match=rf"{name}: relabel must be a function .*got int"):
        make(config, env, params, relabel=3)


@struct.dataclass
class Unsized:
    inner: buffers.BufferState


@struct.dataclass
class OddSize:
    inner: buffers.BufferState
    size: jax.Array


@pytest.mark.parametrize(
    "wrap, described",
    [
        (Unsized, r"Unsized.size is missing"),
        (lambda inner: OddSize(inner, jnp.float32(0.0)), r"OddSize.size is float32\[\]"),
        (lambda inner: OddSize(inner, jnp.zeros(2, jnp.int32)), r"OddSize.size is int32\[2\]"),
    ],
)
def test_a_buffer_state_without_an_integer_size_is_refused_naming_it(wrap, described):
    # The fill is part of the buffer's declared state: the loop logs it for every buffer, so a
    # state without one is refused when the agent is made, not when an update is traced.
    inner = buffers.replay_buffer(64)
    bad = inner._replace(init=lambda item: wrap(inner.init(item)))
    env, params = envs.make("pendulum")
    message = rf"sac: a replay buffer's state must have a size, .*; {described}$"
    with pytest.raises(TypeError, match=message):
        sac.make(sac.SACConfig(**TINY), env, params, buffer=bad)
    sac.make(sac.SACConfig(**TINY), env, params, buffer=counted(64))  # a property will do
