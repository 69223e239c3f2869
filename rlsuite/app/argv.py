"""The command line's words read ahead of the parser (tyro reads the rest), and the parser.

A run command's words (`rlsuite train|sweep|pbt ...`) are read once, by `read`, into one
`CommandLine`: the values of the flags in `AHEAD` and the `--env-option` words. `startup` takes
the processes and devices from it before JAX starts, and `train` the algorithm, its environment,
its options and its files before it builds the parser; neither reads the words again.

    line = read(["ppo", "--env", "pendulum", "--mesh", "runs=2,envs=1"])
    line.value("--env")          # "pendulum"; None where the flag is not given
    line.given("--help", "-h")   # a switch, in either form (--flag or --flag=...)
    line.parser_words()          # what tyro parses: the words, the options gathered at the end

Every command parses its flags with `parse`: tyro, with integers read by `integer` (`1e5` is
100000) and an unknown flag refused in one line with the flag most likely meant (`closest`).
"""

from __future__ import annotations

import dataclasses
import decimal
import functools
import typing
from collections.abc import Mapping

from rlsuite.app.errors import UsageError, closest

# The flags whose values are read ahead of the parser: the run's (`rlsuite.app.train`) and the
# processes' and devices' (`rlsuite.app.startup`).
AHEAD = (
    "--env",
    "--dataset",
    "--config",
    "--total-timesteps",
    "--resume",
    "--cpu-devices",
    "--mesh",
    "--coordinator",
    "--num-processes",
    "--process-id",
    "--process-timeout",
    "--compilation-cache",
    "--matmul-precision",
)


@dataclasses.dataclass(frozen=True)
class CommandLine:
    """A run command's words without its `--env-option` flags (`words`), the FIELD=VALUE words
    of those (`env_options`), and the values of the flags in `AHEAD` that are given (`values`).
    Made by `read`; a command that takes its own flags out of the words keeps the rest with
    `with_words`."""

    words: tuple[str, ...]
    env_options: tuple[str, ...]
    values: Mapping[str, str]

    def value(self, flag: str) -> str | None:
        """The value of `flag` (one of `AHEAD`), or None where it is not given."""
        if flag not in AHEAD:
            raise KeyError(f"{flag} is not read ahead of the parser; those that are: {AHEAD}")
        return self.values.get(flag)

    def given(self, *flags: str) -> bool:
        """Whether any of `flags` is among the words, as `--flag` or `--flag=VALUE`."""
        return any(word.split("=", 1)[0] in flags for word in self.words)

    def with_words(self, words: list[str]) -> CommandLine:
        """The same line with `words` (the command's own flags taken out; no flag of `AHEAD`)."""
        return dataclasses.replace(self, words=tuple(words))

    def parser_words(self) -> list[str]:
        """The words for the parser: `words`, then `--env-option` with every FIELD=VALUE."""
        options = ["--env-option", *self.env_options] if self.env_options else []
        return [*self.words, *options]


def read(words: list[str]) -> CommandLine:
    """`words` read once: the `--env-option` words gathered, and the value of every flag of
    `AHEAD` that is given (refused where one is given twice: `flag_value`)."""
    kept, pairs = env_option_flags(list(words))
    values = {flag: flag_value(kept, flag) for flag in AHEAD}
    given = {flag: value for flag, value in values.items() if value is not None}
    return CommandLine(tuple(kept), tuple(pairs), given)


def env_from_argv(argv: list[str], default: str = "cartpole") -> str:
    """The `--env` value of a command line, read first so defaults can be the tuned ones."""
    value = flag_value(argv, "--env")
    return default if value is None else value


def flag_value(argv: list[str], flag: str) -> str | None:
    """The value of `flag` in a command line (`--flag VALUE` or `--flag=VALUE`), or None. A flag
    given twice is refused: read ahead of the parser, its value would be ambiguous."""
    values = []
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            values.append(argv[i + 1])
        elif arg.startswith(flag + "="):
            values.append(arg.split("=", 1)[1])
    if len(values) > 1:
        raise ValueError(f"{flag} is given {len(values)} times ({', '.join(values)}); give it once")
    return values[0] if values else None


def env_option_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """`argv` without its `--env-option` flags, and their FIELD=VALUE words (the flag may be
    given once with several, or several times)."""
    kept, pairs, taking = [], [], False
    for arg in argv:
        if arg == "--env-option":
            taking = True
        elif arg.startswith("--env-option="):
            pairs.append(arg.split("=", 1)[1])
            taking = True
        elif taking and not arg.startswith("-"):
            pairs.append(arg)
        else:
            taking = False
            kept.append(arg)
    return kept, pairs


def env_options(pairs: list[str]) -> dict[str, str]:
    """`--env-option`'s FIELD=VALUE words as `{field: value}` (spaces around either stripped:
    `"gravity = 12"`), refused where one lacks its `=` or names a field twice."""
    options = {}
    for pair in pairs:
        field, sep, value = (part.strip() for part in pair.partition("="))
        if not sep or not field:
            raise UsageError(f"--env-option {pair}: give FIELD=VALUE (e.g. gravity=20.0)")
        if field in options:
            raise UsageError(f"--env-option: {field} is given twice")
        options[field] = value
    return options


def without_flags(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """`argv` without `flags` and their values (`--flag value` or `--flag=value`)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        elif arg.split("=")[0] not in flags:
            kept.append(arg)
    return kept


def integer(text: str) -> int:
    """An integer flag's value: an integer, or a number in scientific notation that is one
    exactly (`1e5`, `1.5e6`); a `ValueError` for anything else (`1.5e-3`, `2.5`)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        number = None
    if number is None or not number.is_finite() or number != number.to_integral_value():
        raise ValueError(
            f"{text} is not an integer; allowed: an integer, written out or in scientific "
            "notation (100000, 1e5)"
        )
    if number.adjusted() >= 100:  # (its digits would take long to write out)
        raise ValueError(f"{text} is too large; allowed: an integer below 1e100")
    return int(number)


@functools.cache
def _registry():
    """tyro's rules with `integer` for every `int` (in tuples and optional values too)."""
    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec

    registry = ConstructorRegistry()

    @registry.primitive_rule
    def integers(info):
        if info.type is not int:
            return None
        return PrimitiveConstructorSpec(
            nargs=1,
            metavar="INT",
            instance_from_str=lambda words: integer(words[0]),
            is_instance=lambda x: isinstance(x, int) and not isinstance(x, bool),
            str_from_instance=lambda value: [str(value)],
        )

    return registry


def parse(cls, words: list[str], prog: str, default=None):
    """`cls` (a dataclass of flags) from `words` by tyro (`default`: the values the flags
    change), integers read by `integer`. A word that is no flag of `cls` is refused in one line
    with the flag most likely meant (`closest`)."""
    import tyro

    given = {} if default is None else {"default": default}
    args, unknown = tyro.cli(
        cls, args=words, prog=prog, registry=_registry(), return_unknown_args=True, **given
    )
    if unknown:
        flags = [word.split("=", 1)[0] for word in unknown if word.startswith("--")]
        word = flags[0] if flags else unknown[0]
        close = closest(word, flag_names(cls)) if flags else None
        hint = f"; did you mean {close}?" if close else ""
        kind = "option" if flags else "argument"
        raise UsageError(f"unrecognized {kind} {word}{hint} ({prog} --help lists them)")
    return args


def flag_names(cls) -> list[str]:
    """The flags of a dataclass of flags as tyro names them: `--field-name` for each field (and
    `--no-field-name` for a switch), a nested dataclass's prefixed by its name
    (`--config.num-envs`) unless it omits it (`tyro.conf.OmitArgPrefixes`); the positional ones
    are not flags."""
    import tyro

    hints = typing.get_type_hints(cls, include_extras=True)
    names = ["--help"]
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        annotated = typing.get_origin(hint) is typing.Annotated
        inner, *marks = typing.get_args(hint) if annotated else (hint,)
        if dataclasses.is_dataclass(inner):
            prefix = "" if tyro.conf.OmitArgPrefixes in marks else f"{field.name}."
            names += [f"--{prefix}{name[2:]}" for name in flag_names(inner)[1:]]
        elif tyro.conf.Positional not in marks:
            flag = field.name.replace("_", "-")
            names += [f"--{flag}", f"--no-{flag}"] if inner is bool else [f"--{flag}"]
    return names
