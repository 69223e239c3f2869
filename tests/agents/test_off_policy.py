"""SAC and TD3 through the shared off-policy loop: replay items, warm-up, wrap-around, probes,
learning on Pendulum, seeds, resume with the buffer, memory refusal, bad input."""

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import dqn, sac, td3
from rlsuite.agents.learner import Learner, gradient_steps
from rlsuite.app.tuned import tuned
from rlsuite.environment.wrappers import TimeLimit
from rlsuite.loop import checkpoint, driver, runner
from rlsuite.networks import QEnsemble
from rlsuite.ops.validators import ConfigWarning
from tests import fitting
from tests.counter_env import Counter, CounterParams
from tests.tiers import slow_but
from tests.trees import leaves_equal

ALGOS = {
    "sac": (sac.make, sac.SACConfig, sac.SACHparams),
    "td3": (td3.make, td3.TD3Config, td3.TD3Hparams),
}
run_jit = jax.jit(driver.run_batch, static_argnums=(0, 3))
init_jit = jax.jit(driver.init_batch, static_argnums=(0,))


# ----------------------------------------------------------------------------- replay contents
@pytest.mark.parametrize("episode", ["terminate_at_5", "truncate_at_4"])
def test_n_step_items_in_the_buffer_match_a_python_loop(episode):
    # Counter: obs = start + count, reward = action + 1. With learning_starts beyond the run,
    # every action is uniform in [-1, 1] and nothing is learned: the buffer holds the n-step items
    # of known episodes. Episodes end by termination (count 5) or by truncation (4 steps).
    if episode == "terminate_at_5":
        env, params, length, terminal = Counter(), CounterParams(terminate_at=5), 5, True
    else:
        env, params, length, terminal = TimeLimit(Counter(), 4), CounterParams(0), 4, False
    n, gamma, num_envs, updates = 3, 0.5, 2, 12
    config = sac.SACConfig(
        num_envs=num_envs, buffer_size=64, batch_size=4, learning_starts=10**6, n_step=n
    )
    agent = sac.make(config, env, params)
    hp = sac.SACHparams(gamma=gamma)
    state, _ = jax.jit(driver.train, static_argnums=(0, 3))(agent, jax.random.key(3), hp, updates)
    buf = state.buffer
    written = (updates - (n - 1)) * num_envs  # the last n - 1 steps still wait for their window
    assert int(buf.size) == written and int(buf.insert_pos) == written
    data = jax.tree.map(np.asarray, buf.data)
    for e in range(num_envs):
        obs = data["obs"][e:written:num_envs, 0]  # step s of env e sits in slot s * E + e
        action = data["action"][e:written:num_envs, 0]
        assert np.all(np.abs(action) <= 1.0) and np.std(action) > 0.2  # uniform warm-up actions
        for s in range(written // num_envs - n):  # steps whose window lies inside the data
            total, scale, last = 0.0, 1.0, s
            for k in range(n):  # plain loop: sum until the episode's last step (s + k) % L == L - 1
                total += scale * (action[s + k] + 1.0)
                scale *= gamma
                last = s + k
                if (s + k) % length == length - 1:
                    break
            done_terminal = terminal and last % length == length - 1
            slot = s * num_envs + e
            np.testing.assert_allclose(data["reward"][slot], total, rtol=1e-6)
            np.testing.assert_allclose(data["discount"][slot], 0.0 if done_terminal else scale)
            # next_obs is the observation after the last step, before any reset: obs + 1.
            np.testing.assert_allclose(data["next_obs"][slot, 0], obs[last] + 1.0)
            ended = last % length == length - 1  # the flags are those of the last step summed
            assert data["terminated"][slot] == (terminal and ended)
            assert data["truncated"][slot] == (not terminal and ended)


def test_learning_waits_for_learning_starts_and_a_batch():
    env, params = envs.make("pendulum")
    config = sac.SACConfig(
        num_envs=2, buffer_size=32, batch_size=8, learning_starts=10, hidden_sizes=(16,)
    )
    agent = sac.make(config, env, params)
    _, metrics = jax.jit(driver.train, static_argnums=(0, 3))(
        agent, jax.random.key(0), agent.default_hparams, 8
    )
    loss = np.asarray(metrics["losses/critic_loss"])
    # Update u has taken 2 (u + 1) env steps: learning from u = 4 (10 steps, 10 >= batch 8).
    assert np.isnan(loss[:4]).all() and np.isfinite(loss[4:]).all()
    np.testing.assert_array_equal(metrics["charts/buffer_size"], [2, 4, 6, 8, 10, 12, 14, 16])


def test_full_buffer_wraps_around_oldest_first():
    # Random warm-up actions only (learning_starts beyond the run), so the transitions do not
    # depend on the buffer: a 40-slot buffer after 100 items holds the newest 40 of a large one.
    env, params = envs.make("pendulum")
    train = jax.jit(driver.train, static_argnums=(0, 3))
    data = {}
    for capacity in (40, 128):
        config = sac.SACConfig(
            num_envs=4, buffer_size=capacity, batch_size=4, learning_starts=10**6, hidden_sizes=(8,)
        )
        state, _ = train(sac.make(config, env, params), jax.random.key(1), sac.SACHparams(), 25)
        data[capacity] = jax.tree.map(np.asarray, state.buffer.data)
        size, pos = int(state.buffer.size), int(state.buffer.insert_pos)
        assert (size, pos) == ((40, 100 % 40) if capacity == 40 else (100, 100))
    for name in ("obs", "action", "reward", "discount", "next_obs", "terminated", "truncated"):
        newest = np.roll(data[40][name], -(100 % 40), axis=0)  # oldest first
        np.testing.assert_array_equal(newest, data[128][name][60:100])


# TD3 in the slow run: the off-policy loop is one for both, SAC its default representative.
@pytest.mark.parametrize("algo", slow_but("sac", ["sac", "td3"]))
def test_learning_goes_on_after_the_buffer_is_full(algo):
    make, Config, Hparams = ALGOS[algo]
    env, params = envs.make("pendulum")
    config = Config(
        num_envs=4, buffer_size=40, batch_size=16, learning_starts=16, hidden_sizes=(16,)
    )
    agent = make(config, env, params)
    state, metrics = jax.jit(driver.train, static_argnums=(0, 3))(
        agent, jax.random.key(1), Hparams(), 25
    )
    # One update steps the 4 envs once (SAC) or twice (TD3: whole policy_delay cycles).
    steps = {"sac": 4, "td3": 8}[algo]
    assert agent.env_steps_per_update == steps
    assert int(state.buffer.size) == 40 and int(state.buffer.insert_pos) == (25 * steps) % 40
    loss = np.asarray(metrics["losses/critic_loss"])
    first = 16 // steps - 1  # the update that reaches learning_starts=16
    assert np.isnan(loss[:first]).all() and np.isfinite(loss[first:]).all()
    # The critic keeps changing after the buffer filled (40 steps): learning did not stall.
    full = 40 // steps
    assert len(np.unique(loss[full:])) == 25 - full


def test_observation_statistics_follow_every_collected_observation():
    env, params = envs.make("pendulum")
    config = sac.SACConfig(
        num_envs=3,
        buffer_size=64,
        batch_size=8,
        learning_starts=12,
        hidden_sizes=(8,),
        normalize_observations=True,
    )
    agent = sac.make(config, env, params)
    state, _ = jax.jit(driver.train, static_argnums=(0, 3))(
        agent, jax.random.key(2), agent.default_hparams, 10
    )
    stats, obs = state.obs_stats, np.asarray(state.buffer.data["obs"][:30])  # raw in the buffer
    assert float(stats.count) == 30
    np.testing.assert_allclose(stats.mean, obs.mean(axis=0), atol=1e-5)
    np.testing.assert_allclose(stats.var, obs.var(axis=0), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------------------- probes
PROBE = dict(
    num_envs=8, buffer_size=4_000, batch_size=64, learning_starts=64, hidden_sizes=(32, 32)
)


def train_probe(algo, name, updates=250, **hparams):
    make, Config, Hparams = ALGOS[algo]
    env, params = envs.make(f"probe/{name}", continuous=True)
    defaults = {"sac": dict(alpha=1e-3), "td3": dict()}[algo]
    # tau 0.05: targets follow within the short run (at 0.005 they lag behind by ~30%).
    hp = Hparams(actor_lr=3e-3, critic_lr=3e-3, gamma=0.9, tau=0.05, **{**defaults, **hparams})
    config = Config(**PROBE, **({"autotune": False} if algo == "sac" else {}))
    agent = make(config, env, params)
    state, _ = jax.jit(driver.train, static_argnums=(0, 3))(agent, jax.random.key(0), hp, updates)
    critic = QEnsemble(config.hidden_sizes, 2, config.activation)

    def greedy(obs):
        obs = jnp.asarray(obs, jnp.float32).reshape(-1, 1)
        return agent.act(state, obs, jax.random.key(0), True)

    def q(obs):
        """Both critics at the policy's own (greedy) action: `[2, len(obs)]`."""
        obs = jnp.asarray(obs, jnp.float32).reshape(-1, 1)
        return np.asarray(critic.apply(state.learner.critic, obs, greedy(obs)))

    return q, greedy


# TD3 in the slow run: the off-policy loop is one for both, SAC its default representative.
@pytest.mark.parametrize("algo", slow_but("sac", ["sac", "td3"]))
def test_probes_values_and_policies(algo):
    # Values are read at the policy's own action (TD3's data concentrates there; elsewhere its
    # critics extrapolate).
    q, _ = train_probe(algo, "constant_reward")
    np.testing.assert_allclose(q([0.0]), 1.0, atol=0.05)  # one-step episodes of reward 1
    q, _ = train_probe(algo, "constant_reward", reward_scale=3.0)
    np.testing.assert_allclose(q([0.0]), 3.0, atol=0.15)  # learned from 3 x the reward
    q, _ = train_probe(algo, "one_step_discount")
    # Q(obs 0, .) = 0 + gamma * Q(obs 1, .) = 0.9 (alpha 1e-3 makes SAC's entropy term negligible).
    np.testing.assert_allclose(q([0.0, 1.0]), [[0.9, 1.0]] * 2, atol=0.05)
    _, greedy = train_probe(algo, "action_reward", updates=500)
    np.testing.assert_allclose(greedy([0.0])[:, 0], [0.5], atol=0.1)  # argmax of -(a - 0.5)^2
    _, greedy = train_probe(algo, "observation_action_reward", updates=500)
    np.testing.assert_allclose(greedy([-1.0, 1.0])[:, 0], [-0.5, 0.5], atol=0.1)  # a = 0.5 obs


# ----------------------------------------------------------------------------------- learning
@pytest.mark.slow
@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_pendulum_four_vmapped_seeds_reach_minus_250_within_15k_steps(algo):
    make, Config, Hparams = ALGOS[algo]
    defaults = tuned(algo, "pendulum")
    config = Config(**defaults["config"])
    if algo == "td3":  # a buffer smaller than the run: it wraps around while learning
        config = Config(**{**defaults["config"], "buffer_size": 5_000})
    assert config.total_timesteps == 15_000
    env, params = envs.make("pendulum")
    agent = make(config, env, params)
    hp = Hparams(**defaults["hparams"])
    states = init_jit(agent, jax.random.split(jax.random.key(0), 4), hp)
    states, _ = run_jit(agent, states, hp, config.num_updates)
    if algo == "td3":
        np.testing.assert_array_equal(states.buffer.size, [5_000] * 4)
    evaluate = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))
    returns = np.asarray(evaluate(agent, states, jax.random.key(1), 10).returns)
    assert returns.mean() >= -250, returns.mean(axis=1)


# -------------------------------------------------------------------------------------- seeds
# TD3 in the slow run: the off-policy loop is one for both, SAC its default representative.
@pytest.mark.parametrize("algo", slow_but("sac", ["sac", "td3"]))
def test_same_key_same_run_different_key_different_run(algo):
    make, Config, Hparams = ALGOS[algo]
    env, params = envs.make("pendulum")
    config = Config(num_envs=2, buffer_size=64, batch_size=8, learning_starts=8, hidden_sizes=(8,))
    agent = make(config, env, params)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    a, ma = train(agent, jax.random.key(0), Hparams(), 12)
    b, mb = train(agent, jax.random.key(0), Hparams(), 12)
    c, mc = train(agent, jax.random.key(1), Hparams(), 12)
    assert leaves_equal(a, b) and leaves_equal(ma, mb)
    if algo == "td3":  # a cycle of 2 gradient steps: its keys are reshaped into cycles
        # A raw `PRNGKey` (uint32[2], the same bits as `key(0)`) gives the same run.
        d, md = train(agent, jax.random.PRNGKey(0), Hparams(), 12)
        assert leaves_equal(a.learner, d.learner) and leaves_equal(ma, md)
    assert not np.allclose(ma["losses/critic_loss"][6:], mc["losses/critic_loss"][6:])
    # Each vmapped seed's first learning update (8 env steps: update 3 of SAC's 2 env steps
    # each, update 1 of TD3's 4) matches its separate run.
    first = 8 // agent.env_steps_per_update - 1
    assert np.isnan(ma["losses/critic_loss"][first - 1])
    states = init_jit(agent, jnp.stack([jax.random.key(0), jax.random.key(1)]), Hparams())
    _, batched = run_jit(agent, states, Hparams(), 12)
    np.testing.assert_allclose(
        batched["losses/critic_loss"][:, first],
        [ma["losses/critic_loss"][first], mc["losses/critic_loss"][first]],
        rtol=1e-4,
    )


# TD3 in the slow run: the off-policy loop is one for both, SAC its default representative.
@pytest.mark.parametrize("algo", slow_but("sac", ["sac", "td3"]))
def test_reset_slots_change_no_result(algo):
    # One-step episodes: every env of 4 finishes on every step, so with reset_slots=1 the resets
    # take 4 rounds a step; the run is the one the whole-batch reset computes.
    make, Config, Hparams = ALGOS[algo]
    env, params = envs.make("probe/constant_reward", continuous=True)
    config = Config(num_envs=4, buffer_size=64, batch_size=8, learning_starts=8, hidden_sizes=(8,))
    train = jax.jit(driver.train, static_argnums=(0, 3))
    expected = train(make(config, env, params), jax.random.key(0), Hparams(), 12)
    slotted = make(dataclasses.replace(config, reset_slots=1), env, params)
    actual = train(slotted, jax.random.key(0), Hparams(), 12)
    assert leaves_equal(expected, actual)
    loops = [
        train.lower(a, jax.random.key(0), Hparams(), 12).as_text().count("stablehlo.while")
        for a in (make(config, env, params), slotted)
    ]
    assert loops[1] > loops[0], loops  # the slotted one resets in rounds


# ------------------------------------------------------------------ TD3's delay as a static cycle
def test_gradient_steps_give_each_step_its_static_phase_in_whole_cycles():
    seen = []

    def learn(state, batch, key, hp, phase):
        seen.append(phase)  # at trace time: a Python int
        return state + batch, {"phase": jnp.asarray(phase)}

    learner = Learner(init=None, explore=None, greedy=None, learn=learn, period=3)
    keys = jax.random.split(jax.random.key(0), 6)
    state, metrics = gradient_steps(learner, jnp.zeros(()), lambda key: jnp.ones(()), keys, None)
    assert seen == [0, 1, 2] and float(state) == 6.0
    np.testing.assert_array_equal(metrics["phase"], [0, 1, 2, 0, 1, 2])
    with pytest.raises(ValueError, match="4 gradient steps are not whole cycles of 3"):
        gradient_steps(learner, jnp.zeros(()), lambda key: jnp.ones(()), keys[:4], None)


def test_one_run_is_not_vmapped_and_equals_the_batched_path():
    # run_batch runs a batch of one as `run` (no vmap); it must give what vmapping gives.
    env, params = envs.make("pendulum")
    config = td3.TD3Config(num_envs=2, buffer_size=64, batch_size=8, learning_starts=8)
    agent = td3.make(config, env, params)
    hp = td3.TD3Hparams()
    keys = jnp.stack([jax.random.key(3), jax.random.key(4)])
    states = init_jit(agent, keys, hp)
    _, both = run_jit(agent, states, hp, 6)
    _, one = run_jit(agent, jax.tree.map(lambda x: x[:1], states), hp, 6)
    assert one["losses/critic_loss"].shape == (1, 6)
    np.testing.assert_allclose(
        one["losses/critic_loss"][0], both["losses/critic_loss"][0], rtol=1e-4
    )
    assert np.isfinite(one["losses/critic_loss"][0, 1:]).all()


# ------------------------------------------------------------------------ resume with the buffer
def test_resume_after_kill_equals_uninterrupted_run_buffer_included(tmp_path, monkeypatch):
    env, params = envs.make("pendulum")
    config = sac.SACConfig(
        num_envs=2,
        buffer_size=48,
        batch_size=8,
        learning_starts=8,
        n_step=2,
        total_timesteps=120,
        hidden_sizes=(8,),
    )
    agent = sac.make(config, env, params)

    def fit(out, **kwargs):
        options = dict(num_seeds=2, chunk_updates=20, env_name="pendulum", eval_episodes=1)
        return fitting.fit(
            agent, jax.random.key(5), out_dir=out, progress=False, **options, **kwargs
        )

    full = fit(tmp_path / "full")
    assert int(full.states.buffer.size[0]) == 48  # wrapped around before the end
    save = checkpoint.save

    def dying_save(directory, step, *args, **kwargs):
        if step == 40:
            raise KeyboardInterrupt
        return save(directory, step, *args, **kwargs)

    monkeypatch.setattr(checkpoint, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        fit(tmp_path / "killed")
    monkeypatch.setattr(checkpoint, "save", save)
    assert checkpoint.latest_step(tmp_path / "killed" / "checkpoints") == 20
    resumed = fit(tmp_path / "killed", resume=True)
    assert leaves_equal(full.states, resumed.states)  # buffer, pending window, keys, networks
    np.testing.assert_array_equal(full.eval_returns, resumed.eval_returns)


# --------------------------------------------------------------------------------- bad input
def test_buffer_too_large_is_refused_before_allocation(tmp_path):
    env, params = envs.make("pendulum")
    # 10^12 items of (3 + 1 + 1 + 1 + 3) float32 and 2 bool flags = 38 bytes each, plus the
    # int32 insert position and size: 38,000,000,000,008 bytes.
    with pytest.raises(MemoryError, match=r"38,000,000,000,008 bytes .*lower buffer_size"):
        sac.make(sac.SACConfig(buffer_size=10**12), env, params)
    # Small enough per run, too large for 2,000 runs: refused by fit before initialising. The
    # state is 7.6 TB; with checkpoints on a CPU, their host copy counts too: 15.2 TB.
    agent = td3.make(td3.TD3Config(buffer_size=10**8), env, params)
    with pytest.raises(MemoryError, match=r"2,000 runs with its checkpoint copy needs 15,2\d\d,"):
        runner.fit(
            agent,
            jax.random.key(0),
            schedule=runner.Schedule(num_seeds=2000),
            output=runner.Output(out_dir=tmp_path, progress=False),
        )
    assert not any(tmp_path.iterdir())


def test_an_n_step_the_run_cannot_use_is_refused_with_its_range():
    """Beyond the steps each environment takes in the run no item is ever stored; beyond the
    environment's time limit every item's return ends with its episode before n steps."""
    with pytest.raises(ValueError, match=r"DQNConfig.n_step=300: .* allowed: 1 to 200$"):
        dqn.DQNConfig(n_step=300, num_envs=10, total_timesteps=2_000)
    dqn.DQNConfig(n_step=200, num_envs=10, total_timesteps=2_000)
    with pytest.raises(ValueError, match=r"dqn: n_step=1000 .*CartPole.* allowed: 1 to 500$"):
        dqn.make(dqn.DQNConfig(n_step=1000), *envs.make("cartpole"))
    with pytest.raises(ValueError, match=r"sac: n_step=201 .* allowed: 1 to 200$"):
        sac.make(sac.SACConfig(n_step=201), *envs.make("pendulum"))


def test_a_run_that_ends_before_learning_starts_is_warned_of():
    """Allowed (a run may only fill its buffer), but said: no gradient step will be taken."""
    message = r"DQNConfig: the run takes 5,000 env steps, fewer than learning_starts=10,000: "
    with pytest.warns(ConfigWarning, match=message + "it fills the replay buffer and takes no"):
        dqn.DQNConfig(total_timesteps=5_000)
    with pytest.warns(ConfigWarning, match="TD3Config: the run takes 996 env steps, fewer"):
        td3.TD3Config(total_timesteps=999, num_envs=2, learning_starts=999)  # updates of 2 x 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dqn.DQNConfig(total_timesteps=10_000)  # learns on its last update


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_bad_input_is_refused_with_the_field_named(algo):
    make, Config, Hparams = ALGOS[algo]
    env, params = envs.make("pendulum")
    with pytest.raises(TypeError, match=f"{algo} handles bounded 1-D Box"):
        make(Config(), *envs.make("cartpole"))
    with pytest.raises(ValueError, match="buffer_size=8 must hold at least one batch"):
        Config(buffer_size=8, batch_size=16)
    with pytest.raises(ValueError, match="n_step must be an integer >= 1"):
        Config(n_step=0)
    with pytest.raises(ValueError, match="learning_starts must be >= 0"):
        Config(learning_starts=-1)
    with pytest.raises(ValueError, match=r"reset_slots must be an integer >= 1, got 0"):
        Config(reset_slots=0)
    with pytest.raises(ValueError, match=r"hidden_sizes must be a non-empty sequence of int"):
        Config(hidden_sizes=(256, -1))
    assert Config(hidden_sizes=[16]).hidden_sizes == (16,)
    agent = make(Config(), env, params)
    with pytest.raises(ValueError, match="critic_lr"):
        agent.check_hparams(Hparams(critic_lr=-1.0))
    with pytest.raises(ValueError, match="gamma"):
        agent.check_hparams(Hparams(gamma=1.5))
    with pytest.raises(ValueError, match=r"reward_scale=0.*allowed: a value > 0"):
        agent.check_hparams(Hparams(reward_scale=0.0))
