"""The tuned-defaults table: every entry builds its algorithm's config and hyperparameters, and
a dataset's behaviour agent finds the right entry."""

import dataclasses

import pytest

from rlsuite import envs
from rlsuite.agents.registry import ALGORITHMS as ALGOS
from rlsuite.app.tuned import TUNED, behaviour, tuned


@pytest.mark.parametrize("algo,env", sorted(TUNED))
def test_every_entry_names_real_fields_and_a_real_environment(algo, env):
    entry = tuned(algo, env)
    config = ALGOS[algo].config_cls(**entry["config"])  # a misspelt field raises TypeError
    hparams = ALGOS[algo].hparams_cls(**entry["hparams"])
    for name, value in entry["config"].items():
        assert getattr(config, name) == value
    for name, value in entry["hparams"].items():
        assert getattr(hparams, name) == value
    assert env in envs.names()


def test_tuned_returns_copies():
    entry = tuned("sac", "brax/hopper")
    entry["config"]["num_envs"] = 1
    assert tuned("sac", "brax/hopper")["config"]["num_envs"] == 128
    assert tuned("ppo", "no-such-env") == {"config": {}, "hparams": {}}


def test_behaviour_defaults():
    hopper = tuned("sac", "brax/hopper")
    # brax.training's published hopper SAC configuration.
    assert hopper["config"]["gradient_steps"] == 64 and hopper["config"]["batch_size"] == 512
    assert hopper["hparams"]["reward_scale"] == 30.0 and hopper["hparams"]["gamma"] == 0.997
    # The buffer holds the whole default run, as a medium-replay dataset needs.
    assert hopper["config"]["buffer_size"] >= hopper["config"]["total_timesteps"]
    assert behaviour("sac", "brax/hopper") == hopper
    # Brax environments without an entry borrow hopper's; others keep their own or none.
    assert behaviour("sac", "brax/walker2d") == hopper
    assert behaviour("sac", "brax/halfcheetah") == hopper
    assert behaviour("sac", "pendulum") == tuned("sac", "pendulum") != hopper
    assert behaviour("td3", "brax/hopper") == {"config": {}, "hparams": {}}
    assert behaviour("sac", "point_mass") == {"config": {}, "hparams": {}}


def test_dataset_collect_trains_its_behaviour_with_the_behaviour_defaults(monkeypatch, tmp_path):
    import rlsuite.app.collect
    from rlsuite.app import dataset

    class Stop(Exception):
        pass

    seen = {}

    def record(agent, hparams, key, env, medium, *args, **kwargs):
        seen.update(config=agent.config, hparams=hparams, medium=medium)
        raise Stop

    monkeypatch.setattr(rlsuite.app.collect, "train_behaviour", record)
    out = tmp_path / "walker2d-medium.hdf5"
    argv = ["collect", "--env", "brax/walker2d", "--quality", "medium", "--size", "1000"]
    with pytest.raises(Stop):
        dataset.main([*argv, "--out", str(out), "--total-timesteps", "65536"])
    expected = behaviour("sac", "brax/walker2d")
    config = {**expected["config"], "total_timesteps": 65_536}  # the flag overrides the entry
    assert seen["config"] == dataclasses.replace(seen["config"], **config)
    assert seen["config"].total_timesteps == 65_536
    assert seen["hparams"] == ALGOS["sac"].hparams_cls(**expected["hparams"])
    assert seen["medium"] and not out.exists()  # a medium dataset trains the medium run


def test_every_meta_rl_task_family_has_a_tuned_rl2_entry():
    # `rlsuite train rl2 --env meta/<family>` never runs RL2Config's own defaults, which learn
    # the bandit only (meta/maze's policy fell from +1.25 to -1.5 on them).
    families = [name for name in envs.names() if name.startswith("meta/")]
    assert len(families) == 7
    assert [name for name in families if ("rl2", name) not in TUNED] == []


def test_the_suites_entries_close_the_table_in_their_own_order():
    """`rlsuite.app.tuned_suites` holds the suites' entries; the table ends with them, as they
    are (MinAtar first, MiniGrid last), after the classic environments' own."""
    from rlsuite.app.tuned_suites import SUITES

    keys = list(TUNED)
    assert keys[-len(SUITES) :] == list(SUITES)
    assert all(TUNED[key] is SUITES[key] for key in SUITES)
    assert keys[-len(SUITES)][1].endswith("-MinAtar") and keys[-1][1].startswith("minigrid/")
    assert ("ppo", "cartpole") in TUNED and ("ppo", "cartpole") not in SUITES
