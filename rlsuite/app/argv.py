"""The command line's words read ahead of the parser (tyro reads the rest).

A run command's words (`rlsuite train|sweep|pbt ...`) are read once, by `read`, into one
`CommandLine`: the values of the flags in `AHEAD` and the `--env-option` words. `startup` takes
the processes and devices from it before JAX starts, and `train` the algorithm, its environment,
its options and its files before it builds the parser; neither reads the words again.

    line = read(["ppo", "--env", "pendulum", "--mesh", "runs=2,envs=1"])
    line.value("--env")          # "pendulum"; None where the flag is not given
    line.given("--help", "-h")   # a switch, in either form (--flag or --flag=...)
    line.parser_words()          # what tyro parses: the words, the options gathered at the end
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from rlsuite.app.errors import UsageError

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
