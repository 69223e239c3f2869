"""The algorithm registry: the built-in families' records, a family registered from outside that
`rlsuite train` runs with no change to the command line, and the refusals."""

import importlib.metadata
import json
import warnings

import pytest

from rlsuite.agents import (
    bc,
    c51,
    cql,
    crl,
    csve,
    dpo,
    dqn,
    fixpo,
    iql,
    iqn,
    lpo,
    ppo,
    pqn,
    qrdqn,
    rainbow,
    rarl,
    registry,
    rl2,
    sac,
    sac_her,
    saq,
    td3,
    td3_bc,
    ued,
)
from rlsuite.agents.registry import Algorithm
from rlsuite.app import cli, tuned
from rlsuite.loop.loggers import read_metrics
from tests import toy_algorithm

BUILT_IN = {
    # name: (module, config class, hparams class, offline, default env); the families with
    # memory are WITH_MEMORY
    "ppo": (ppo, ppo.PPOConfig, ppo.PPOHparams, False, "cartpole"),
    "sac": (sac, sac.SACConfig, sac.SACHparams, False, "pendulum"),
    "td3": (td3, td3.TD3Config, td3.TD3Hparams, False, "pendulum"),
    "bc": (bc, bc.BCConfig, bc.BCHparams, True, "pendulum"),
    "td3_bc": (td3_bc, td3_bc.TD3BCConfig, td3_bc.TD3BCHparams, True, "pendulum"),
    "iql": (iql, iql.IQLConfig, iql.IQLHparams, True, "pendulum"),
    "cql": (cql, cql.CQLConfig, cql.CQLHparams, True, "pendulum"),
    "rl2": (rl2, rl2.RL2Config, ppo.PPOHparams, False, "meta/bandit"),
    "ued": (ued, ued.UEDConfig, ued.UEDHparams, False, "maze/small"),
    "crl": (crl, crl.CRLConfig, crl.CRLHparams, False, "goal/point_reach"),
    "sac_her": (sac_her, sac_her.SACHERConfig, sac.SACHparams, False, "goal/point_reach"),
    "dqn": (dqn, dqn.DQNConfig, dqn.DQNHparams, False, "cartpole"),
    "c51": (c51, c51.C51Config, dqn.DQNHparams, False, "cartpole"),
    "qrdqn": (qrdqn, qrdqn.QRDQNConfig, dqn.DQNHparams, False, "cartpole"),
    "iqn": (iqn, iqn.IQNConfig, dqn.DQNHparams, False, "cartpole"),
    "rainbow": (rainbow, rainbow.RainbowConfig, rainbow.RainbowHparams, False, "cartpole"),
    "pqn": (pqn, pqn.PQNConfig, pqn.PQNHparams, False, "cartpole"),
    "fixpo": (fixpo, fixpo.FixPOConfig, fixpo.FixPOHparams, False, "cartpole"),
    "rarl": (rarl, rarl.RARLConfig, ppo.PPOHparams, False, "pendulum"),
    "dpo": (dpo, dpo.DPOConfig, ppo.PPOHparams, False, "cartpole"),
    "lpo": (lpo, lpo.LPOConfig, ppo.PPOHparams, False, "cartpole"),
    "csve": (csve, csve.CSVEConfig, csve.CSVEHparams, True, "pendulum"),
    "saq": (saq, saq.SAQConfig, saq.SAQHparams, True, "pendulum"),
}
WITH_MEMORY = ("ppo", "rl2", "ued", "pqn", "fixpo", "dpo")


@pytest.fixture
def toy():
    """The toy family registered for one test, and removed after it."""
    registry.register(toy_algorithm.ALGORITHM)
    try:
        yield toy_algorithm.ALGORITHM
    finally:
        registry.unregister("toy")


def test_every_built_in_family_is_registered_with_its_record():
    assert registry.names() == list(BUILT_IN)
    assert registry.online() == [
        "ppo",
        "sac",
        "td3",
        "rl2",
        "ued",
        "crl",
        "sac_her",
        "dqn",
        "c51",
        "qrdqn",
        "iqn",
        "rainbow",
        "pqn",
        "fixpo",
        "rarl",
        "dpo",
        "lpo",
    ]
    assert registry.offline() == ["bc", "td3_bc", "iql", "cql", "csve", "saq"]
    assert registry.with_memory() == list(WITH_MEMORY)
    for name, (module, config_cls, hparams_cls, offline, default_env) in BUILT_IN.items():
        expected = Algorithm(
            name=name,
            make=module.make,
            config_cls=config_cls,
            hparams_cls=hparams_cls,
            offline=offline,
            default_env=default_env,
            memory=name in WITH_MEMORY,
            # A family's own sentence in the run summary: FixPO's trust region.
            summary=fixpo.trust_region_summary if name == "fixpo" else None,
        )
        assert registry.get(name) == expected, name
        assert registry.ALGORITHMS[name] is registry.get(name) is module.ALGORITHM
        assert tuned.default_env(name) == default_env
    assert list(registry.ALGORITHMS) == list(BUILT_IN) and len(registry.ALGORITHMS) == 23


def test_the_tuned_table_names_registered_algorithms():
    for algo, _ in tuned.TUNED:
        assert algo in registry.names(), algo
    assert {algo for algo, _ in tuned.TUNED} == {
        "ppo",
        "sac",
        "td3",
        "rl2",
        "ued",
        "crl",
        "sac_her",
        "dqn",
        "c51",
        "qrdqn",
        "iqn",
        "rainbow",
        "pqn",
        "fixpo",
        "rarl",
        "dpo",
        "lpo",
        "csve",
        "saq",
    }


def test_a_registered_toy_family_trains_and_evaluates_with_no_cli_change(toy, tmp_path, capsys):
    assert registry.names() == [*BUILT_IN, "toy"] and registry.online()[-1] == "toy"
    out = tmp_path / "run"
    # 2 envs x 8 steps = 16 env steps per update; 64 steps = 4 updates in 2 chunks of 2; a
    # metrics row per update (--log-interval 16).
    budget = ["--num-envs", "2", "--num-steps", "8", "--total-timesteps", "64", "--chunks", "2"]
    budget += ["--log-interval", "16", "--eval-episodes", "2", "--no-progress"]
    argv = ["train", "toy", "--env", "cartpole", "--num-seeds", "2", "--epsilon", "0.25"]
    assert cli.main([*argv, "--out", str(out), *budget]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("training toy on cartpole: 2 seeds x 64 env steps each (4 updates")
    record = json.loads((out / "config.json").read_text())
    assert record["algo"] == "toy" and record["env"] == "cartpole"
    assert record["config"] == {"num_envs": 2, "num_steps": 8, "total_timesteps": 64}
    assert record["hparams"] == {"epsilon": 0.25} and record["chunk_updates"] == 2
    final = json.loads((out / "final.json").read_text())
    assert (final["algo"], final["env"], final["num_seeds"]) == ("toy", "cartpole", 2)
    assert final["env_steps"] == 64 and len(final["eval_return_per_seed"]) == 2
    # Always action 0 (deterministic evaluation): CartPole's reward is 1 per step, so each
    # seed's mean over its 2 episodes is a whole number of steps over 2.
    assert all((2 * r).is_integer() for r in final["eval_return_per_seed"])
    rows = read_metrics(out)
    assert sorted((r["seed"], r["env_steps"]) for r in rows) == [
        (seed, steps) for seed in (0, 1) for steps in (16, 32, 48, 64)
    ]
    ended = [r for r in rows if r["charts/episodes"] > 0]
    assert ended  # 64 steps of an epsilon-greedy policy that pushes left end episodes
    for row in ended:  # reward 1 per step: a finished episode's return is its length
        assert row["charts/episodic_return"] == row["charts/episodic_length"], row
    assert cli.main(["eval", str(out), "--episodes", "3"]) == 0
    summary = json.loads((out / "eval_greedy_3_seed0.json").read_text())
    assert summary["env_steps"] == 64 and len(summary["eval_return_per_seed"]) == 2
    assert all((3 * r).is_integer() for r in summary["eval_return_per_seed"])


def test_an_unknown_algorithm_is_refused_with_the_registered_names(capsys):
    assert cli.main(["train", "nosuch"]) == 2
    err = capsys.readouterr().err
    allowed = "(allowed: ppo, sac, td3, bc, td3_bc, iql, cql, rl2, ued, crl, sac_her, dqn, c51, "
    allowed += "qrdqn, iqn, rainbow, pqn, "
    allowed += "fixpo, rarl, dpo, lpo, csve, saq)"
    assert err == f"rlsuite train: error: unknown algorithm 'nosuch' {allowed}\n"
    with pytest.raises(ValueError, match="unknown algorithm 'nosuch'; registered: ppo, sac, td3"):
        registry.get("nosuch")
    with pytest.raises(ValueError, match="unknown algorithm 'nosuch'; registered: ppo"):
        tuned.default_env("nosuch")


def test_a_taken_name_or_a_malformed_record_is_refused():
    record = registry.get("ppo")
    assert registry.register(record) is record  # the same record again: nothing changes
    with pytest.raises(ValueError, match="algorithm 'ppo' is registered already"):
        registry.register(record._replace(default_env="pendulum"))
    with pytest.raises(ValueError, match="algorithm 'sac' is registered already"):
        registry.register(toy_algorithm.ALGORITHM._replace(name="sac"))
    assert registry.get("ppo") is record and registry.get("sac") is sac.ALGORITHM
    for name in ("PPO", "1st", "my-algo", "", None):
        with pytest.raises(ValueError, match=r"Algorithm.name must be .*\[a-z\]\[a-z0-9_\]\*"):
            registry.register(toy_algorithm.ALGORITHM._replace(name=name))
    with pytest.raises(TypeError, match="config_cls must be a dataclass type"):
        registry.register(toy_algorithm.ALGORITHM._replace(config_cls=dict))
    with pytest.raises(TypeError, match="offline must be a bool"):
        registry.register(toy_algorithm.ALGORITHM._replace(offline="no"))
    with pytest.raises(TypeError, match="memory must be a bool, got 1"):
        registry.register(toy_algorithm.ALGORITHM._replace(memory=1))
    with pytest.raises(TypeError, match="'toy': summary must be callable or None, got 'held'"):
        registry.register(toy_algorithm.ALGORITHM._replace(summary="held"))
    # Memory is declared, and the config that chooses it must be there.
    message = r"'toy': memory=True, but ToyConfig has no recurrent or recurrent_size field"
    with pytest.raises(ValueError, match=message):
        registry.register(toy_algorithm.ALGORITHM._replace(memory=True))
    with pytest.raises(TypeError, match="register takes an Algorithm record, got tuple"):
        registry.register(tuple(toy_algorithm.ALGORITHM))
    with pytest.raises(ValueError, match="unregister: no algorithm 'toy' is registered"):
        registry.unregister("toy")
    assert "toy" not in registry.names()


def test_entry_points_register_third_party_families(monkeypatch):
    """A package declares `toy = "tests.toy_algorithm:ALGORITHM"` in the `rlsuite.algorithms`
    group; the first lookup registers it; one that fails to load is skipped with a warning."""
    group = registry.ENTRY_POINT_GROUP
    declared = [
        importlib.metadata.EntryPoint("toy", "tests.toy_algorithm:ALGORITHM", group),
        importlib.metadata.EntryPoint("broken", "tests.no_such_module:ALGORITHM", group),
        importlib.metadata.EntryPoint("other", "tests.toy_algorithm:ALGORITHM", group),
    ]

    def entry_points(group):
        assert group == "rlsuite.algorithms"
        return declared

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))
    monkeypatch.setattr(registry, "_loaded", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert registry.names() == [*BUILT_IN, "toy"]
    assert registry.get("toy") is toy_algorithm.ALGORITHM
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2, messages
    assert messages[0].startswith(
        "rlsuite: skipping the algorithm entry point broken = tests.no_such_module:ALGORITHM "
        "(ModuleNotFoundError"
    )
    assert messages[1] == (
        "rlsuite: skipping the algorithm entry point other = tests.toy_algorithm:ALGORITHM "
        "(ValueError: it declares an Algorithm named 'toy')"
    )
