"""The run record (`rlsuite.app.runs`), its batch kinds (`rlsuite.app.batches`) and the start-up
pre-pass (`rlsuite.app.startup`): no training here, the lifecycle itself is exercised by
tests/app/test_cli.py, test_resume.py, test_sweep.py and test_pbt.py."""

import dataclasses
import json

import numpy as np
import pytest

from rlsuite.agents import ppo
from rlsuite.app import batches, runs, startup
from rlsuite.app.argv import read
from rlsuite.app.errors import UsageError

# A config.json as `rlsuite train ppo` writes it today (key order included).
RECORD = {
    "algo": "ppo",
    "env": "cartpole",
    "num_seeds": 4,
    "seed": 3,
    "chunks": 10,
    "chunk_updates": 7,
    "eval_episodes": 5,
    "logging": {"tensorboard": False, "wandb": True, "log_interval": 2048},
    "config": dataclasses.asdict(ppo.PPOConfig(num_envs=4, num_steps=16, hidden_sizes=(8, 8))),
    "hparams": dataclasses.asdict(ppo.PPOHparams(learning_rate=1e-3)),
    "devices": {"platform": "cpu", "count": 2},
    "mesh": {"runs": 1, "envs": 2},
}
SWEEP = {
    "fields": ["learning_rate", "ent_coef"],
    "configs": [{"learning_rate": 1e-3, "ent_coef": 0.0}, {"learning_rate": 3e-4, "ent_coef": 0.5}],
    "seeds": 2,
    "metric": "eval_return",
    "search": "grid",
}
POPULATION = {
    "fields": ["learning_rate"],
    "low": [1e-4],
    "high": [1e-2],
    "log": [True],
    "members": 2,
    "populations": 1,
    "configs": [{"learning_rate": 1e-3}, {"learning_rate": 2e-3}],
    "fraction": 0.25,
    "resample": 0.25,
    "exploit": True,
}


@pytest.mark.parametrize(
    "record",
    [
        RECORD,
        {**RECORD, "num_seeds": 4, "sweep": SWEEP},
        {**RECORD, "num_seeds": 2, "pbt": POPULATION},
        {**RECORD, "dataset": "/data/p.hdf5", "dataset_sha256": "ab" * 32},
    ],
    ids=["seeds", "sweep", "pbt", "offline"],
)
def test_a_record_reads_and_writes_config_json_byte_for_byte(record):
    typed = runs.RunRecord.from_dict(json.loads(json.dumps(record)))
    assert json.dumps(typed.to_dict(), indent=2) == json.dumps(record, indent=2)
    assert typed.config == ppo.PPOConfig(num_envs=4, num_steps=16, hidden_sizes=(8, 8))
    assert typed.hparams == ppo.PPOHparams(learning_rate=1e-3)
    kind = {"sweep": batches.Sweep, "pbt": batches.Population}
    expected = next((kind[k] for k in kind if k in record), type(None))
    assert type(typed.batch) is expected
    assert typed.hparams_axis == (None if typed.batch is None else 0)


def test_a_record_from_before_a_field_existed_reads_with_the_rule_it_was_made_by():
    old = {k: v for k, v in RECORD.items() if k not in ("chunk_updates", "devices", "mesh")}
    old["logging"] = {"tensorboard": False, "wandb": False}
    typed = runs.RunRecord.from_dict(old)
    num_updates = typed.config.num_updates
    assert typed.chunk_updates == max(1, num_updates // 10)  # the rule before chunk_length
    assert typed.logging.log_interval == 1  # a row per update
    assert typed.devices is None and typed.mesh is None


def test_the_batch_kinds_give_one_set_of_hparams_per_run():
    sweep = batches.Sweep(**SWEEP)
    hp = sweep.hparams(ppo.PPOHparams(ent_coef=0.1, learning_rate=5.0))
    # configuration-major: run c * seeds + s is seed s of configuration c
    np.testing.assert_allclose(hp.learning_rate, [1e-3, 1e-3, 3e-4, 3e-4], rtol=1e-6)
    np.testing.assert_allclose(hp.ent_coef, [0.0, 0.0, 0.5, 0.5])
    assert sweep.seeds_per_config == 2 and sweep.between_chunks(0, None) is None
    population = batches.Population(**POPULATION)
    hp = population.hparams(ppo.PPOHparams(ent_coef=0.1))
    np.testing.assert_allclose(hp.learning_rate, [1e-3, 2e-3], rtol=1e-6)
    assert float(hp.ent_coef) == pytest.approx(0.1)  # not drawn: shared
    assert population.seeds_per_config is None
    assert population.between_chunks(0, None) is not None
    assert dataclasses.replace(population, exploit=False).between_chunks(0, None) is None


def test_a_directory_that_is_not_a_run_is_refused_by_name(tmp_path):
    with pytest.raises(UsageError, match="holds no run to resume"):
        runs.read_record(tmp_path, "run to resume")
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(UsageError, match="config.json is not valid JSON"):
        runs.read_record(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"algo": "ppo", "env": "cartpole"}))
    with pytest.raises(UsageError, match="lacks num_seeds, config, hparams"):
        runs.read_record(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**RECORD, "algo": "ppoo"}))
    with pytest.raises(UsageError, match="unknown algorithm 'ppoo'; did you mean 'ppo'"):
        runs.read_record(tmp_path)


def test_the_start_up_plan_reads_processes_and_devices_before_jax_starts(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_NTASKS", raising=False)

    def plan(command, words):
        return startup.plan(command, read(words))

    assert plan("eval", ["run", "--cpu-devices", "3"]) == startup.Platform(None, None)
    assert plan("train", ["ppo"]) == startup.Platform(None, None)
    assert plan("train", ["ppo", "--cpu-devices", "3"]) == startup.Platform(None, 3)
    assert plan("sweep", ["ppo", "--mesh", "runs=2,envs=2"]) == startup.Platform(None, 4)
    assert plan("train", ["ppo", "--mesh", "envs=2"]) == startup.Platform(None, None)
    two = ["--num-processes", "2", "--process-id", "0"]
    assert plan("train", ["ppo", "--mesh", "runs=2,envs=2", *two]) == startup.Platform(2, 2)
    assert plan("pbt", ["ppo", "--distributed"]) == startup.Platform(0, None)
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert plan("train", ["ppo", "--distributed"]) == startup.Platform(4, None)
    monkeypatch.delenv("SLURM_NTASKS")
    # a resume: the devices the run recorded (one CPU device before they were recorded),
    # shared among the processes that continue it
    (tmp_path / "config.json").write_text(json.dumps({**RECORD, "devices": None}))
    assert plan("train", ["--resume", str(tmp_path)]) == startup.Platform(None, 1)
    (tmp_path / "config.json").write_text(json.dumps(RECORD))
    assert plan("train", ["--resume", str(tmp_path)]) == startup.Platform(None, 2)
    assert plan("train", ["--resume", str(tmp_path), *two]) == startup.Platform(2, 1)
    gpu = {**RECORD, "devices": {"platform": "gpu", "count": 1}}
    (tmp_path / "config.json").write_text(json.dumps(gpu))
    assert plan("train", ["--resume", str(tmp_path)]) == startup.Platform(None, None)
    # The numerics: asked for, or what the run recorded (XLA's defaults before they were).
    numerics = ["--deterministic", "--matmul-precision", "highest"]
    assert plan("train", ["ppo", *numerics]) == startup.Platform(None, None, None, True, "highest")
    gpu["devices"].update(deterministic=True, matmul_precision="high")
    (tmp_path / "config.json").write_text(json.dumps(gpu))
    assert plan("train", ["--resume", str(tmp_path)]) == startup.Platform(
        None, None, None, True, "high"
    )
    for argv, message in [
        (["ppo", "--cpu-devices", "0"], "--cpu-devices must be an integer >= 1, got '0'"),
        (["ppo", "--num-processes", "x"], "--num-processes must be an integer >= 1, got 'x'"),
        (["ppo", "--mesh", "rows=2"], "rows"),
        (["ppo", "--matmul-precision", "tf32"], "'tf32'; allowed: default, high, highest"),
    ]:
        with pytest.raises(UsageError, match=message):
            plan("train", argv)
