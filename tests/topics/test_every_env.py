"""Every registered environment trains from the command line: PPO (which takes discrete and
continuous actions, vector, image and categorical observations) for a tiny budget on each name
`envs.names()` lists, evaluated at the end. Brax's are slow on a CPU (MJX compiles for minutes):
marked slow, and so are the task families and the goal environments on MJX. The default run
trains one name of each kind of observation and action PPO takes: a vector with discrete actions
(cartpole) and with continuous ones (pendulum), an image and a Discrete observation (gymnax's
Breakout-MinAtar and FrozenLake-misc), an image with action masks (jumanji/Snake-v1), and of ours
a goal in a maze, a task family and a UED maze (`OURS_DEFAULT`); the slow run every other name,
Playground's (`PLAYGROUND_DEFAULT` the lightest), MiniGrid's, Craftax's, gymnax's others and the
rest of ours, names that are another name's code at other settings (`VARIANTS`: a larger maze,
another layout, another task sampler) among them. Each suite's adapter and each of our
environments has tests of its own in tests/envs/ in the default run; action masks are trained on
in tests/environment/test_masks.py."""

import gc
import json

import jax
import pytest
from rlsuite.envs.registry import OURS_MJX

from rlsuite import envs
from rlsuite.app import cli

TINY = ["--total-timesteps", "256", "--num-envs", "4", "--num-steps", "32"]
TINY += ["--num-minibatches", "2", "--update-epochs", "1", "--hidden-sizes", "8"]
TINY += ["--eval-episodes", "1", "--chunks", "1", "--no-progress", "--cpu-devices", "1"]


MJX_TASK_FAMILIES = ("meta/cheetah_velocity", "meta/ant_direction")  # Brax's physics too
PLAYGROUND_DEFAULT = "playground/PendulumSwingup"  # MJX too: the lightest of the suite (28 s)
GYMNAX_DEFAULT = ("Breakout-MinAtar", "FrozenLake-misc")
# Of the JAX suites behind adapters, the default run trains an image with masks (Snake); the slow
# run the rest: BinPack's flattened multi-discrete action (28 s with an empty compilation cache;
# tests/envs/test_jumanji.py steps Knapsack's in the default run), MiniGrid's partial views (22 s;
# tests/envs/test_minigrid.py) and Craftax's worlds (47 s to compile; tests/envs/test_craftax.py).
SUITES_DEFAULT = ("jumanji/Snake-v1",)
OURS_DEFAULT = (
    "cartpole",
    "pendulum",
    "goal/point_u_maze",
    "meta/bandit",
    "maze/small",
)
# name -> the name whose code it runs at other settings, which trains in the default run
VARIANTS = {
    "maze": "maze/small",
    "meta/two_arm_bandit": "meta/bandit",
    "goal/point_big_maze": "goal/point_u_maze",
    "goal/point_hardest_maze": "goal/point_u_maze",
}


@pytest.fixture(autouse=True)
def _release_each_names_programs():
    """Each name's programs released after its test, not only after the module (as
    tests/conftest.py does): the slow run trains some 40 MJX environments in this one module,
    and their programs' memory maps together reached the kernel's limit, where XLA's compiler
    segfaulted (4 of the 23 Playground names in one run). No name reuses another's programs."""
    yield
    jax.clear_caches()
    gc.collect()


def _params():
    for name in envs.names():
        mjx = name.startswith("brax/") or name in MJX_TASK_FAMILIES or name in OURS_MJX
        mjx = mjx or (name.startswith("playground/") and name != PLAYGROUND_DEFAULT)
        marks = [pytest.mark.slow, pytest.mark.timeout(1800)] if mjx else []
        if name.startswith("gymnax/") and name.removeprefix("gymnax/") not in GYMNAX_DEFAULT:
            marks = [pytest.mark.slow]
        ours = not name.startswith(("gymnax/", "playground/", "jumanji/", "minigrid/", "craftax/"))
        if ours and not mjx and name not in OURS_DEFAULT:
            marks = [pytest.mark.slow]
        if name.startswith(("jumanji/", "minigrid/", "craftax/")) and name not in SUITES_DEFAULT:
            marks = [pytest.mark.slow]
        if name == PLAYGROUND_DEFAULT:  # 28 s; tests/envs/test_playground.py in the default run
            marks = [pytest.mark.slow]
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", _params())
def test_every_registered_environment_trains_with_ppo_from_the_cli(name, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", "ppo", "--env", name, *TINY, "--out", str(out)]) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["env"] == name and final["env_steps"] == 256
    assert len(final["eval_return_per_seed"]) == 1
    assert f"ppo on {name}: 1 seed x 256 env steps" in capsys.readouterr().out


def _code(env):
    """The classes whose methods `env` runs, wrappers first: a class that only sets data (a
    maze's layout) stands for the class it derives from."""
    chain = []
    while env is not None:
        cls = type(env)
        while not any(callable(v) for k, v in vars(cls).items() if not k.startswith("__")):
            cls = cls.__base__
        chain.append(cls)
        env = getattr(env, "env", None)
    return chain


def test_each_variant_runs_the_code_of_a_name_the_default_run_trains():
    names = envs.names()
    for variant, base in VARIANTS.items():
        assert variant in names and base in OURS_DEFAULT and base not in VARIANTS
        code = _code(envs.make(variant)[0])
        assert code == _code(envs.make(base)[0]) and len(code) >= 1, (variant, code)
    assert _code(envs.make("goal/point_reach")[0]) != _code(envs.make("goal/point_u_maze")[0])


@pytest.mark.slow
def test_the_enumeration_covers_every_kind_of_observation():
    names = envs.names()
    assert len(names) >= 46  # 47 names, less brax/swimmer where this JAX cannot step it
    kinds = set()
    for name in (n for n in names if not n.startswith("brax/")):
        env, params = envs.make(name)
        kinds.add(len(env.observation_space(params).shape))
    assert kinds == {0, 1, 2, 3}  # Discrete (FrozenLake), vectors, [H, W] and [H, W, C] images
