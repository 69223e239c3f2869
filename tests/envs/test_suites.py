"""The suites behind adapters (`envs/suites.py`): every adapter module declares a `Suite`, and
`envs.make` reaches every suite through its record alone, so that a new suite (here a toy adapter
written to a temporary folder) is one declaration and one `register_suite`, with no edit to a
shared module; refusals say why, for a task that cannot run here and for a suite not installed."""

import dataclasses
import importlib
import subprocess
import sys
import textwrap

import jax
import pytest
from rlsuite.envs import registry
from rlsuite.envs.options import parse_options
from rlsuite.envs.suites import Suite

from rlsuite import envs
from rlsuite.environment.wrappers import TimeLimit

ADAPTERS = {
    "brax/": "brax_adapter",
    "gymnax/": "gymnax_adapter",
    "playground/": "playground_adapter",
    "jumanji/": "jumanji_adapter",
    "craftax/": "craftax_adapter",
    "minigrid/": "minigrid_adapter",
}

# A suite's adapter as a contributor writes one: its package is imported lazily (here there is
# none), its tasks are listed, one is refused saying why, and its environment counts its own time
# limit (`horizon`), as Jumanji's, Craftax's and MiniGrid's do.
TOY_ADAPTER = textwrap.dedent(
    '''
    import jax.numpy as jnp
    from flax import struct

    from rlsuite.environment import Environment
    from rlsuite.environment.spaces import Box, Discrete
    from rlsuite.envs.suites import Suite

    _WHY = "it needs a download, and nothing is downloaded at run time"

    def installed():
        return True

    def toy_names():
        return ["walk", "run"]

    def refused():
        return {"fly": _WHY}

    @struct.dataclass
    class ToyParams:
        goal: float = 1.0

    class ToyEnv(Environment):
        def __init__(self, task, horizon=30):
            if task in refused():
                raise ValueError(f"toy task {task!r} cannot run here: {refused()[task]}")
            self.task, self.horizon, self.max_episode_steps = task, horizon, horizon

        @property
        def default_params(self):
            return ToyParams()

        def reset_env(self, key, params):
            return jnp.zeros(1), jnp.zeros((), jnp.int32)

        def step_env(self, key, t, action, params):
            t = t + 1
            done = jnp.bool_(False)
            return jnp.zeros(1), t, jnp.float32(params.goal), done, t >= self.horizon, {}

        def observation_space(self, params):
            return Box(0.0, 1.0, (1,))

        def action_space(self, params):
            return Discrete(2)

    def split(options):
        """`horizon` is the constructor's; the other options are fields of the params."""
        constructor = {k: v for k, v in options.items() if k == "horizon"}
        return constructor, {k: v for k, v in options.items() if k != "horizon"}

    SUITE = Suite(
        prefix="toy/",
        title="Toy",
        names=toy_names,
        environment=ToyEnv,
        refused=refused,
        installed=installed,
        extra="toy",
        limit="horizon",
        split=split,
    )
    '''
)


@pytest.fixture
def suites(monkeypatch):
    """`registry.SUITES` to change for one test (the process's catalogue is left as it was)."""
    monkeypatch.setattr(registry, "SUITES", dict(registry.SUITES))
    return registry.SUITES


@pytest.fixture
def toy(tmp_path, monkeypatch, suites):
    """The toy adapter module, imported from a temporary folder, its suite registered."""
    (tmp_path / "toy_adapter.py").write_text(TOY_ADAPTER)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("toy_adapter")
    yield module
    sys.modules.pop("toy_adapter", None)


def test_every_adapter_declares_its_suite_and_the_registry_lists_exactly_those():
    for prefix, module_name in ADAPTERS.items():
        module = importlib.import_module(f"rlsuite.envs.{module_name}")
        assert isinstance(module.SUITE, Suite), module_name
        assert module.SUITE.prefix == prefix
        assert registry.SUITES[prefix] is module.SUITE
    assert list(registry.SUITES) == list(ADAPTERS) == list(registry.BUILT_IN_SUITES)
    # What each suite counts itself, and which are ours (`None`: a `TimeLimit` around it).
    limits = {prefix: suite.limit for prefix, suite in registry.SUITES.items()}
    assert limits == {
        "brax/": None,
        "gymnax/": "max_steps_in_episode",
        "playground/": None,
        "jumanji/": "time_limit",
        "craftax/": "max_timesteps",
        "minigrid/": "max_steps",
    }


def test_a_suite_declared_in_its_own_module_is_reached_by_name_once_registered(toy):
    with pytest.raises(ValueError, match="unknown environment 'toy/walk'"):
        envs.make("toy/walk")
    assert envs.register_suite(toy.SUITE) is toy.SUITE
    names = envs.names()
    assert [n for n in names if n.startswith("toy/")] == ["toy/walk", "toy/run"]
    assert names.index("toy/walk") > max(i for i, n in enumerate(names) if n.startswith("brax/"))
    env, params = envs.make("toy/walk")
    assert type(env) is toy.ToyEnv and env.task == "walk" and env.horizon == 30
    assert params == toy.ToyParams()
    # Options: the constructor's and the params' (the suite's `split`).
    env, params = envs.make("toy/run", horizon=4, goal=2.0)
    assert env.task == "run" and env.horizon == 4 and params.goal == 2.0
    unknown = r"unknown argument\(s\) \['gaol'\]; allowed: goal, max_episode_steps"
    with pytest.raises(ValueError, match=r"make\('toy/run'\): " + unknown):
        envs.make("toy/run", gaol=2.0)
    # It steps as any environment does: truncated at its own horizon.
    _, state = env.reset(jax.random.key(0), params)
    for _ in range(4):
        _, state, reward, terminated, truncated, _ = env.step(jax.random.key(1), state, 0, params)
    assert bool(truncated) and not bool(terminated) and float(reward) == 2.0
    # A task close to a known one is named; the prefix cannot be taken by `register`.
    with pytest.raises(
        ValueError, match=r"unknown environment 'toy/wlak'; did you mean 'toy/walk'"
    ):
        envs.make("toy/wlak")
    with pytest.raises(ValueError, match="built-in environment's name"):
        envs.register("toy/mine", toy.ToyEnv)


def test_the_time_limit_is_the_suites_own_option_or_ours(toy, suites):
    envs.register_suite(toy.SUITE)
    # The suite counts its own limit: `max_episode_steps` is its `horizon`, no `TimeLimit`.
    env, _ = envs.make("toy/walk", max_episode_steps=7)
    assert type(env) is toy.ToyEnv and env.horizon == 7
    with pytest.raises(
        ValueError,
        match=r"make\('toy/walk'\): max_episode_steps=None; Toy counts its own time limit "
        r"\(horizon\): give an integer >= 1",
    ):
        envs.make("toy/walk", max_episode_steps=None)
    # The same environment declared with our limit: wrapped in `TimeLimit`, by default its
    # `max_episode_steps`, and none where `max_episode_steps=None`.
    ours = envs.register_suite(dataclasses.replace(toy.SUITE, prefix="toyours/", limit=None))
    assert suites["toyours/"] is ours
    env, _ = envs.make("toyours/walk")
    assert type(env) is TimeLimit and env.max_episode_steps == 30 and env.env.horizon == 30
    env, _ = envs.make("toyours/walk", max_episode_steps=9)
    assert type(env) is TimeLimit and env.max_episode_steps == 9 and env.env.horizon == 30
    env, _ = envs.make("toyours/walk", max_episode_steps=None)
    assert type(env) is toy.ToyEnv


def test_a_refused_task_says_why_and_a_prefix_in_use_is_refused(toy):
    envs.register_suite(toy.SUITE)
    assert "toy/fly" not in envs.names()
    with pytest.raises(ValueError, match="toy task 'fly' cannot run here: it needs a download"):
        envs.make("toy/fly")
    with pytest.raises(ValueError, match="'jumanji/' is a built-in suite's prefix"):
        envs.register_suite(dataclasses.replace(toy.SUITE, prefix="jumanji/"))
    with pytest.raises(ValueError, match=r"'meta/' begins the names \['meta/bandit'"):
        envs.register_suite(dataclasses.replace(toy.SUITE, prefix="meta/"))
    with pytest.raises(ValueError, match="'brax/toy/' overlaps the prefix 'brax/'"):
        envs.register_suite(dataclasses.replace(toy.SUITE, prefix="brax/toy/"))
    with pytest.raises(ValueError, match="prefix 'toy'; allowed: a name and a slash"):
        envs.register_suite(dataclasses.replace(toy.SUITE, prefix="toy"))
    with pytest.raises(TypeError, match="register_suite: a Suite, got dict"):
        envs.register_suite({"prefix": "toy/"})
    # Registering a prefix again replaces its suite.
    envs.register_suite(dataclasses.replace(toy.SUITE, names=lambda: ["swim"]))
    assert envs.make("toy/swim")[0].task == "swim"


@pytest.mark.parametrize("prefix", list(ADAPTERS))
def test_make_builds_every_built_in_suite_through_its_record(toy, suites, prefix):
    """Each built-in suite's record with its environment replaced by the toy's: `make` builds
    what the record says, with the record's time limit, and nothing else."""
    calls = []

    def environment(task, **options):
        calls.append((task, options))
        return toy.ToyEnv(task)

    suite = suites[prefix]
    suites[prefix] = dataclasses.replace(
        suite, environment=environment, names=lambda: ["T"], installed=lambda: True
    )
    env, _ = envs.make(f"{prefix}T")
    assert calls == [("T", {})]
    assert isinstance(env, TimeLimit) == (suite.limit is None)
    if suite.limit is None:
        assert env.max_episode_steps == 30  # the environment's own, as BraxEnv's 1000
        return
    with pytest.raises(ValueError, match=f"{suite.title} counts its own time limit"):
        envs.make(f"{prefix}T", max_episode_steps=None)
    if suite.split({suite.limit: 1})[0]:  # the limit is a constructor option
        envs.make(f"{prefix}T", max_episode_steps=9)
        assert calls[-1] == ("T", {suite.limit: 9})


@pytest.mark.parametrize(
    "name, message",
    [
        ("jumanji/Sokoban-v0", "Jumanji task 'Sokoban-v0' cannot run here: Jumanji downloads"),
        ("jumanji/Connector-v3", "cannot run here: a multi-agent task"),
        (
            "craftax/Craftax-Classic-Symbolic-AutoReset-v1",
            "Craftax environment 'Craftax-Classic-Symbolic-AutoReset-v1' is not adapted: it is "
            "Craftax-Classic-Symbolic-v1 behind Craftax's own auto-reset",
        ),
        (
            "minigrid/XLand-MiniGrid-R1-9x9",
            "XLand-MiniGrid task 'XLand-MiniGrid-R1-9x9' cannot run here: its tasks are rulesets",
        ),
    ],
)
def test_a_task_a_suite_refuses_is_refused_saying_why(name, message):
    prefix = name[: name.index("/") + 1]
    if not registry.SUITES[prefix].installed():
        pytest.skip(f"{prefix} is not installed")
    task = name.removeprefix(prefix)
    assert task in registry.SUITES[prefix].refused() and name not in envs.names()
    with pytest.raises(ValueError, match=message):
        envs.make(name)


@pytest.mark.parametrize("prefix", [p for p in ADAPTERS if registry.SUITES[p].extra])
def test_a_suite_not_installed_is_refused_naming_its_extra(suites, prefix):
    def unlisted():
        raise AssertionError("the tasks of a suite not installed were asked for")

    suite = suites[prefix]
    suites[prefix] = dataclasses.replace(suite, installed=lambda: False, names=unlisted)
    assert not [n for n in envs.names() if n.startswith(prefix)]
    message = (
        f"environment '{prefix}Task' needs {suite.title}: pip install 'rlsuite\\[{suite.extra}\\]'"
    )
    with pytest.raises(ValueError, match=message):
        envs.make(f"{prefix}Task")
    with pytest.raises(ValueError, match=message):
        parse_options(f"{prefix}Task", {"x": "1"})


def test_a_suite_with_no_extra_not_installed_says_so(toy):
    envs.register_suite(dataclasses.replace(toy.SUITE, installed=lambda: False, extra=None))
    with pytest.raises(ValueError, match="environment 'toy/walk' needs Toy: it is not installed"):
        envs.make("toy/walk")


def test_names_and_the_listing_work_where_the_optional_suites_are_not_installed():
    """In a process where gymnax, Playground, Jumanji, Craftax and XLand-MiniGrid cannot be
    imported: their names are left out, and each of their names says what to install."""
    code = textwrap.dedent(
        """
        import sys
        for m in ("gymnax", "mujoco_playground", "jumanji", "craftax", "xminigrid"):
            sys.modules[m] = None  # `import m` fails, installed or not
        from rlsuite import envs
        names = envs.names()
        assert "cartpole" in names and "brax/ant" in names, names
        assert not [n for n in names if n.split("/")[0] in
                    ("gymnax", "playground", "jumanji", "craftax", "minigrid")], names
        for name in ("gymnax/CartPole-v1", "playground/CartpoleBalance", "jumanji/Snake-v1",
                     "craftax/Craftax-Symbolic-v1", "minigrid/MiniGrid-Empty-5x5"):
            try:
                envs.make(name)
            except ValueError as error:
                print(error)
        import contextlib, io
        from rlsuite.app import listing
        with contextlib.redirect_stdout(io.StringIO()) as out:
            listed = listing.main(["envs"])["envs"]
        assert listed == names and "(ours): cartpole" in out.getvalue(), out.getvalue()
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "environment 'gymnax/CartPole-v1' needs gymnax: pip install 'rlsuite[gymnax]'",
        "environment 'playground/CartpoleBalance' needs MuJoCo Playground: pip install "
        "'rlsuite[playground]'",
        "environment 'jumanji/Snake-v1' needs Jumanji: pip install 'rlsuite[jumanji]'",
        "environment 'craftax/Craftax-Symbolic-v1' needs Craftax: pip install 'rlsuite[craftax]'",
        "environment 'minigrid/MiniGrid-Empty-5x5' needs XLand-MiniGrid: pip install "
        "'rlsuite[minigrid]'",
    ]


def test_declaring_the_suites_imports_none_of_their_packages():
    code = (
        "import sys; import rlsuite.envs; "
        "print([m for m in ('brax', 'gymnax', 'mujoco_playground', 'jumanji', 'craftax', "
        "'xminigrid') if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[]"
