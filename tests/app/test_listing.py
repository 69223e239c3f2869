"""What a new user asks first: the version, help without an algorithm, and `rlsuite list` of the
algorithms, the environments (with their spaces and the algorithms that take them) and the tuned
pairs; a note when a run starts from untuned defaults."""

import importlib.metadata

import pytest

from rlsuite import envs
from rlsuite.agents import registry
from rlsuite.app import cli, train
from rlsuite.app.argv import read
from rlsuite.app.tuned import TUNED


def test_the_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"rlsuite {importlib.metadata.version('rlsuite')}\n"


@pytest.mark.parametrize("command", [["train", "--help"], ["train", "-h"], ["dataset", "--help"]])
def test_help_without_an_algorithm_or_subcommand_is_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(command)
    assert done.value.code == 0
    out = capsys.readouterr().out
    if command[0] == "dataset":
        assert "rlsuite dataset collect --env NAME" in out
    else:
        assert all(name in out for name in registry.names())
        assert "module:Class" in out and "rlsuite list envs" in out


def test_list_algos_tuned_and_env_names(capsys):
    assert cli.main(["list", "algos"]) == 0
    out = capsys.readouterr().out
    for name in registry.names():
        assert f"\n{name} " in f"\n{out}"
    assert "Soft Actor-Critic (Haarnoja et al. 2018" in out  # "et al." does not end the sentence
    assert cli.main(["list", "tuned"]) == 0
    out = capsys.readouterr().out
    assert all(f"{algo} on {env}: " in out for algo, env in TUNED)
    assert "ppo on cartpole: num_envs=8, num_steps=64, total_timesteps=500000" in out
    assert cli.main(["list", "envs"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in envs.names())


def test_list_envs_with_a_pattern_gives_spaces_and_the_algorithms_that_take_them(capsys):
    assert cli.main(["list", "envs", "meta/bandit", "probe/action_r*", "pendulum"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The bandit's observation: the 5-arm one-hot of the last action, its reward, the trial's
    # done and time flags (RL^2's inputs, 5 + 3); the probe's a one-element zero, 2 actions.
    assert lines == [
        "pendulum: observation Box(3,), action Box(1,); ppo, sac, td3, fixpo, rarl, dpo, lpo",
        "probe/action_reward: observation Box(1,), action Discrete(2); ppo, dqn, c51, qrdqn, iqn, "
        "rainbow, pqn, fixpo, dpo, lpo",
        "meta/bandit: observation Box(8,), action Discrete(5); ppo, rl2, ued, dqn, c51, qrdqn, "
        "iqn, rainbow, pqn, fixpo, dpo, lpo",
    ]
    # A pattern without a wildcard selects the names that hold it.
    assert cli.main(["list", "envs", "bandit"]) == 0
    shown = [line.split(":")[0] for line in capsys.readouterr().out.splitlines()]
    assert shown == [n for n in envs.names() if "bandit" in n] and "meta/bandit" in shown
    assert cli.main(["list", "envs", "nothing/*"]) == 2
    assert "no environment name matches nothing/*" in capsys.readouterr().err
    assert cli.main(["list", "things"]) == 2
    assert "unknown list 'things'" in capsys.readouterr().err


def test_a_run_on_untuned_defaults_says_so_before_it_starts(capsys, tmp_path):
    train.new_run(read(["ppo", "--env", "acrobot", "--out", str(tmp_path / "a")]), "train")
    assert (
        "note: no tuned defaults for ppo on acrobot; it starts from ppo's own, 499,712 env steps "
        "per seed, which may not learn it"
    ) in capsys.readouterr().err
    train.new_run(read(["ppo", "--env", "cartpole", "--out", str(tmp_path / "c")]), "train")
    said = capsys.readouterr()
    assert said.err == "" and said.out == (
        "rlsuite train: ppo on cartpole starts from the tuned defaults of ppo on cartpole, "
        "499,712 env steps per seed\n"
    )
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()  # nothing written


def test_listing_returns_what_it_prints():
    from rlsuite.app import listing

    shown = listing.environments("pendulum")["envs"]
    algos = ["ppo", "sac", "td3", "fixpo", "rarl", "dpo", "lpo"]
    assert shown == {"pendulum": {"observation": "Box(3,)", "action": "Box(1,)", "algos": algos}}
    assert listing.algos()["algos"] == registry.names()
    assert len(listing.tuned()["tuned"]) == len(TUNED)
