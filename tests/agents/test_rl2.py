"""RL^2 (`rlsuite.agents.rl2`): recurrent A2C/PPO on task families learns to adapt within a trial.

Thresholds measured on the CI machine (2 cores, no accelerator):
- Duan et al.'s bandits, k = 5, n = 10, the tuned A2C: evaluation total reward >= 5.84, Thompson
  sampling's (tests/envs/test_bandit_baselines.py); the same agent with its memory and previous
  inputs reset every episode is memoryless and earns 5.0 in expectation (<= 5.05 asserted).
- the maze, 3 episodes per trial: episode 3 returns more than episode 1, the paired bootstrap
  interval of the difference above 0.
- gymnax's two-arm bandit with the notebook's recipe (slow): regret per 100 pulls <= 1.0, 1.5,
  4.5 for p = 0.1, 0.25, 0.4.
"""

import json

import jax
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import ppo, registry, rl2
from rlsuite.app import tuned
from rlsuite.loop import agent as agent_lib
from rlsuite.loop import driver
from rlsuite.loop.episodes import evaluate_trials, paired_difference

THOMPSON_K5_N10 = 5.84
TABULAR_UPDATES = 400
TABULAR_GAIN = 4.5  # half the gain over random measured at TABULAR_UPDATES (below)


def _tuned_agent(env_name, **env_kwargs):
    entry = tuned.tuned("rl2", env_name)
    env, params = envs.make(env_name, **env_kwargs)
    agent = rl2.make(rl2.RL2Config(**entry["config"]), env, params)
    return agent, ppo.PPOHparams(**entry["hparams"])


def _train(agent, hparams, seed=0):
    train = jax.jit(driver.train, static_argnums=(0, 3))
    state, metrics = train(agent, jax.random.key(seed), hparams, agent.config.num_updates)
    return state, metrics


@pytest.fixture(scope="module")
def duan():
    agent, hparams = _tuned_agent("meta/bandit")
    assert agent.config.num_updates == 3000 and agent.config.num_envs == 256
    state, _ = _train(agent, hparams)
    return agent, state


@pytest.mark.slow
def test_duan_bandit_a2c_beats_thompson_sampling(duan):
    agent, state = duan
    policy = agent_lib.policy(agent, state, True)
    result = evaluate_trials(agent.env, agent.env_params, policy, jax.random.key(1), 20_000)
    total = float(result.returns.mean())
    assert total >= THOMPSON_K5_N10, total
    # It adapts: the last pull of a trial earns more than the first (which can only guess).
    curve = np.asarray(result.episode_returns).mean(axis=0)
    assert curve[-1] > curve[0] + 0.1, curve


@pytest.mark.slow  # the trained bandit agent (duan): over a minute
def test_without_memory_across_pulls_the_same_agent_earns_chance(duan):
    # The negative control: the trained agent on the same task distribution, its carry and its
    # previous inputs reset at every pull (memory="episode"): every pull is then the same fresh
    # policy on exchangeable arms, worth E[p] = 0.5, so a trial of 10 is worth 5.0.
    agent, state = duan
    env, params = envs.make("meta/bandit", memory="episode")
    policy = agent_lib.policy(agent, state, True)
    result = evaluate_trials(env, params, policy, jax.random.key(2), 50_000)
    total = float(result.returns.mean())
    assert total <= 5.05, total  # standard error about 0.015 over 50,000 trials
    assert np.ptp(np.asarray(result.episode_returns).mean(axis=0)) < 0.03  # a flat curve


@pytest.mark.slow
def test_maze_later_episodes_of_a_trial_return_more():
    agent, hparams = _tuned_agent("meta/maze")  # what rlsuite train rl2 --env meta/maze runs
    assert agent.config.num_updates == 120 and agent.config.hidden_sizes == (64,)
    state, _ = _train(agent, hparams)
    policy = agent_lib.policy(agent, state, False)
    result = evaluate_trials(agent.env, agent.env_params, policy, jax.random.key(3), 2000)
    returns = np.asarray(result.episode_returns)  # [trials, 3]
    # Trials are the resampled unit of the paired bootstrap (one seed): [trials, 1, episodes].
    mean, low, high = paired_difference(returns[:, None, :], later=2, earlier=0)
    assert low > 0, (mean, low, high, returns.mean(axis=0))


@pytest.mark.slow
def test_point_robot_second_episode_of_a_trial_returns_more():
    agent, hparams = _tuned_agent("meta/point_robot")  # rlsuite train rl2 --env meta/point_robot
    assert agent.config.num_updates == 1_500 and agent.config.num_steps == 40
    state, _ = _train(agent, hparams)
    policy = agent_lib.policy(agent, state, True)
    result = evaluate_trials(agent.env, agent.env_params, policy, jax.random.key(5), 2000)
    returns = np.asarray(result.episode_returns)  # [trials, 2]
    mean, low, high = paired_difference(returns[:, None, :], later=1, earlier=0)
    assert low > 0, (mean, low, high, returns.mean(axis=0))
    # A trial returned -41 before learning (the first update's); the tuned run reaches -10.6.
    assert returns.sum(axis=1).mean() > -20, returns.mean(axis=0)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_tabular_mdp_tuned_recipe_earns_more_than_the_random_policy():
    agent, hparams = _tuned_agent("meta/tabular_mdp")  # rlsuite train rl2 --env meta/tabular_mdp
    assert agent.config.num_updates == 1_500 and not agent.config.anneal_lr
    # The first 400 of the entry's 1,500 updates (the learning rate is constant, so these are
    # the full run's first 400), 2,560,000 env steps.
    train = jax.jit(driver.train, static_argnums=(0, 3))
    state, _ = train(agent, jax.random.key(0), hparams, TABULAR_UPDATES)
    policy = agent_lib.policy(agent, state, True)
    result = evaluate_trials(agent.env, agent.env_params, policy, jax.random.key(6), 2000)
    totals = np.asarray(result.episode_returns).sum(axis=1)  # [trials] of 10 episodes each
    low = totals.mean() - 1.96 * totals.std() / np.sqrt(totals.size)
    wrapper = agent.env  # RL2 around the TabularMDP
    random, optimal = wrapper.env.trial_references(
        wrapper.sample_task, agent.env_params, wrapper.episodes_per_trial, jax.random.key(7)
    )
    assert random.name == "random" and optimal.name.startswith("optimal")
    # Random earns 99.78 +- 0.15 and the optimal policy 218.3. Measured on the CI machine (253 s
    # with another job beside it): 108.9 (95% interval from 107.6), random 99.9 on these tasks,
    # with the episodes of a trial rising from 10.0 to 11.4. The lower end of the interval must
    # clear random by TABULAR_GAIN, half the measured gain of the mean (9.0).
    assert low > random.total + TABULAR_GAIN, (totals.mean(), low, random.total)


# Standing still on cheetah-velocity earns -|v*| per step, -600 per trial of 400 steps on average
# (v* ~ U[0, 3]); its tuned entry's run (300 updates, one seed) evaluated -383 over 64 greedy
# trials. On ant-direction the untrained policy's trials return -3.3 (the ant falls within 33
# steps) and the tuned entry's run evaluated 336.6 (standing still earns about 400). Asserted:
# at least half of each gain over its reference.
MJX_TASKS = [("meta/cheetah_velocity", -600.0, -492.0), ("meta/ant_direction", -3.3, 165.0)]


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("family, reference, bound", MJX_TASKS)
def test_mjx_task_tuned_entry_gains_over_its_reference(family, reference, bound, tmp_path):
    from tests.app.test_cli import rlsuite

    out = tmp_path / "run"
    args = ["--env", family, "--num-seeds", "1", "--eval-episodes", "2"]
    proc = rlsuite("train", "rl2", *args, "--no-progress", "--out", out, timeout=1400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no tuned defaults" not in proc.stderr
    proc = rlsuite("eval", out, "--episodes", "64")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "eval_greedy_64_seed0.json").read_text())
    assert result["env_steps"] == 480_000
    assert result["eval_return_mean"] > bound > reference, result["eval_return_mean"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("p, bound", [(0.1, 1.0), (0.25, 1.5), (0.4, 4.5)])
def test_two_arm_bandit_regret_with_the_gymnax_notebook_recipe(p, bound):
    agent, hparams = _tuned_agent("meta/two_arm_bandit", p=p)
    assert agent.config.num_updates == 4000
    state, _ = _train(agent, hparams)
    policy = agent_lib.policy(agent, state, True)
    result = evaluate_trials(
        agent.env, agent.env_params, policy, jax.random.key(4), 1000, sum_info=("regret",)
    )
    regret = float(result.sums["regret"].mean())
    assert regret <= bound, (p, regret)


def test_rl2_refuses_what_it_cannot_train_before_compiling():
    bandit, params = envs.make("meta/bandit")
    with pytest.raises(ValueError, match=r"RL2Config.recurrent=None: RL\^2 needs a recurrent"):
        rl2.RL2Config(recurrent=None)
    with pytest.raises(ValueError, match=r"PPOConfig.recurrent=None: RL\^2 needs"):
        rl2.make(ppo.PPOConfig(), bandit, params)
    with pytest.raises(ValueError, match="wrapped in rlsuite.environment.meta.RL2"):
        rl2.make(rl2.RL2Config(), *envs.make("cartpole"))
    with pytest.raises(TypeError, match=r"distribution='tanh_gaussian' handles a bounded 1-D Box"):
        rl2.make(rl2.RL2Config(distribution="tanh_gaussian"), bandit, params)
    with pytest.raises(ValueError, match=r"recurrent='transformer' is not one of: lstm, gru"):
        rl2.RL2Config(recurrent="transformer")
    assert registry.get("rl2").make is rl2.make


def test_a_composition_derives_its_identity_and_nothing_else():
    """RL^2 is PPO's agent under its own name (`agent.derive`): the same stages, and a field
    other than the identity's cannot be derived."""
    bandit, params = envs.make("meta/bandit")
    config = rl2.RL2Config(num_envs=2, num_steps=8, recurrent_size=8)
    agent = rl2.make(config, bandit, params)
    assert agent.name == "rl2" and agent.config is config
    assert isinstance(agent.default_hparams, ppo.PPOHparams)
    with pytest.raises(ValueError, match=r"update cannot be derived; allowed: name, default_hp"):
        agent_lib.derive(agent, name="other", update=agent.update)
    renamed = agent_lib.derive(agent, name="other")
    assert renamed.name == "other" and renamed.update is agent.update


@pytest.mark.slow
def test_train_eval_and_plot_the_adaptation_curve_from_the_cli(tmp_path):
    from tests.app.test_cli import rlsuite

    out = tmp_path / "run"
    tiny = ["--total-timesteps", "640", "--num-envs", "8", "--num-steps", "10"]
    tiny += ["--recurrent-size", "8", "--hidden-sizes", "8", "--num-seeds", "2", "--no-progress"]
    proc = rlsuite("train", "rl2", *tiny, "--eval-episodes", "20", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rl2 on meta/bandit: 2 seeds x 640 env steps" in proc.stdout
    final = (out / "final.json").read_text()
    assert '"adaptation"' in final and '"eval_regret_mean"' in final
    proc = rlsuite("eval", out, "--episodes", "30")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "adaptation: mean return per episode of a trial" in proc.stdout
    assert proc.stdout.count("  episode ") == 10  # one line per pull of the trial
    # Then the known policies on the same tasks, exact where they can be (5 arms, 10 pulls).
    assert "references: known policies on the same task distribution" in proc.stdout
    assert "| random | 5 | 3.333 | exact, U[0, 1] arms |" in proc.stdout
    assert "| Bayes-optimal | 6.66 | 1.673 | exact, U[0, 1] arms |" in proc.stdout
    assert " | mean over 2 seeds of 30 trials each |" in proc.stdout  # the run's own row
    saved = json.loads((out / "eval_greedy_30_seed0.json").read_text())
    assert [r["name"] for r in saved["references"]][3] == "Bayes-optimal"
    image = tmp_path / "adaptation.png"
    proc = rlsuite("plot", out, "--adaptation", "--out", image)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert image.stat().st_size > 10_000
    # It draws what rlsuite eval just computed (30 trials per seed), not final.json's curve.
    assert "the adaptation curve of eval_greedy_30_seed0.json (30 trials per seed" in proc.stderr
    # The report shows final.json's adaptation curve, a line per pull of the trial.
    proc = rlsuite("report", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = (out / "report.md").read_text()
    block = page[page.index("```text\nadaptation: mean return per episode of a trial") :]
    assert block[: block.index("\n```")].count("\n  episode ") == 10
    proc = rlsuite("plot", out, "--adaptation", "--out", image)
    assert proc.returncode == 2 and "exists" in proc.stderr  # never overwritten


def test_a_recurrent_policy_for_a_family_without_memory_is_refused(capsys):
    from rlsuite.app import cli

    assert cli.main(["train", "sac", "--recurrent", "lstm"]) == 2
    err = capsys.readouterr().err
    with_memory = "the families with memory: ppo, rl2, ued, pqn, fixpo, dpo\n"
    assert f"sac takes no recurrent policy (--recurrent); {with_memory}" in err
    assert cli.main(["train", "td3", "--recurrent-size=8"]) == 2
    assert "td3 takes no recurrent policy (--recurrent-size)" in capsys.readouterr().err
