"""The command line's words read ahead of the parser (tyro reads the rest): a flag's value, the
environment a command names, the `--env-option` words, and a command line without some flags.
`startup` reads the processes and devices with these before JAX starts, and `train` the
algorithm, its environment and its options before it builds the parser from them."""

from __future__ import annotations

from rlsuite.app.errors import UsageError


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
    """`--env-option`'s FIELD=VALUE words as `{field: value}`, refused where one lacks its `=`
    or names a field twice."""
    options = {}
    for pair in pairs:
        field, sep, value = pair.partition("=")
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
