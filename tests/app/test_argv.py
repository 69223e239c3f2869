"""The command line's words read ahead of the parser (`rlsuite.app.argv`), by hand."""

import pytest

from rlsuite.app import argv
from rlsuite.app.errors import UsageError


def test_a_flags_value_in_either_form_and_a_flag_given_twice_refused():
    words = ["ppo", "--env", "pendulum", "--num-seeds=4"]
    assert argv.flag_value(words, "--env") == "pendulum"
    assert argv.flag_value(words, "--num-seeds") == "4"
    assert argv.flag_value(words, "--mesh") is None
    assert argv.flag_value(["--env"], "--env") is None  # no value follows
    with pytest.raises(ValueError, match=r"--env is given 2 times \(a, b\); give it once"):
        argv.flag_value(["--env", "a", "--env=b"], "--env")
    assert argv.env_from_argv(words) == "pendulum"
    assert argv.env_from_argv(["ppo"], "meta/maze") == "meta/maze"


def test_env_option_words_in_every_form_and_their_refusals():
    words = ["ppo", "--env-option", "a=1", "b=2", "--num-seeds", "2", "--env-option=c=x"]
    kept, pairs = argv.env_option_flags(words)
    assert kept == ["ppo", "--num-seeds", "2"] and pairs == ["a=1", "b=2", "c=x"]
    assert argv.env_options(pairs) == {"a": "1", "b": "2", "c": "x"}
    spaced = argv.env_options(["gravity = 12", " masspole=0.2 "])
    assert spaced == {"gravity": "12", "masspole": "0.2"}
    with pytest.raises(UsageError, match="--env-option gravity: give FIELD=VALUE"):
        argv.env_options(["gravity"])
    with pytest.raises(UsageError, match="--env-option: a is given twice"):
        argv.env_options(["a=1", "a=2"])


def test_a_command_line_without_some_flags_and_their_values():
    words = ["--resume", "runs/a", "--mesh", "runs=2", "--cpu-devices=2", "--no-progress"]
    assert argv.without_flags(words, ("--mesh", "--cpu-devices")) == [
        "--resume",
        "runs/a",
        "--no-progress",
    ]


def test_a_run_command_line_read_once_into_one_value():
    words = ["ppo", "--env-option", "gravity=20", "--env=pendulum", "--mesh", "runs=2,envs=1"]
    line = argv.read([*words, "--no-progress", "-h"])
    assert line.words == ("ppo", "--env=pendulum", "--mesh", "runs=2,envs=1", "--no-progress", "-h")
    assert line.env_options == ("gravity=20",)
    assert dict(line.values) == {"--env": "pendulum", "--mesh": "runs=2,envs=1"}
    assert line.value("--env") == "pendulum" and line.value("--dataset") is None
    assert line.given("--help", "-h") and line.given("--env") and not line.given("--resume")
    assert line.parser_words() == [*line.words, "--env-option", "gravity=20"]
    # a command's own flags taken out: the values stay, the words change
    kept = line.with_words(["ppo"])
    assert kept.value("--mesh") == "runs=2,envs=1" and kept.parser_words()[0] == "ppo"
    with pytest.raises(KeyError, match="--num-seeds is not read ahead of the parser"):
        line.value("--num-seeds")
    with pytest.raises(ValueError, match="--mesh is given 2 times"):
        argv.read(["ppo", "--mesh", "runs=1", "--mesh=runs=2"])


@pytest.mark.parametrize(
    "text, value",
    [("100000", 100000), ("1e5", 100000), ("1E5", 100000), ("1.5e6", 1_500_000),
     ("-2e3", -2000), ("3e9", 3_000_000_000), ("+7", 7), ("1_000", 1000)],
)  # fmt: skip
def test_an_integer_flag_takes_an_exact_integer_in_scientific_notation(text, value):
    assert argv.integer(text) == value and type(argv.integer(text)) is int


@pytest.mark.parametrize(
    "text", ["1.5e-3", "2.5", "2.5e0", "1e-1", "inf", "nan", "ten", "", "1e1000000000"]
)
def test_an_integer_flag_refuses_what_is_not_an_exact_integer(text):
    with pytest.raises(ValueError, match="allowed: an integer"):
        argv.integer(text)


def test_the_parsers_read_integers_in_scientific_notation_and_refuse_the_rest(capsys):
    from rlsuite.app.evaluate import EvalArgs
    from rlsuite.app.startup import _cpu_devices
    from rlsuite.app.train import _parse

    assert argv.parse(EvalArgs, ["runs/a", "--episodes", "1e2"], "rlsuite eval").episodes == 100
    words = ["pqn", "--total-timesteps", "1e5", "--hidden-sizes", "1e2", "64", "--num-seeds=2e0"]
    args = _parse(argv.read(words), "train")[1]
    assert (args.config.total_timesteps, args.config.hidden_sizes) == (100_000, (100, 64))
    assert args.num_seeds == 2 and _cpu_devices("2e0") == 2
    with pytest.raises(SystemExit) as stop:
        _parse(argv.read(["pqn", "--total-timesteps", "1.5e-3"]), "train")
    said = capsys.readouterr()
    assert stop.value.code == 2 and "Error parsing --total-timesteps" in said.out + said.err
    assert "1.5e-3 is not an integer" in said.out + said.err
