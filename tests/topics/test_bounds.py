"""Budgets that keep the code readable (docs/design.md, section 6): a module of `rlsuite/` or
`envs/` at most 450 lines, a function (nested ones included) at most 80 lines and at most 8
parameters, keyword-only and positional-only included (`self` counts; `*args` and `**kwargs`
do not). What exceeds them today is listed in `EXCEPTIONS`, each with the size it may not grow
past and the reason; an exception that is no longer needed fails too, so the list only shrinks."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULE_LINES, FUNCTION_LINES, PARAMETERS = 450, 80, 8

# (path, name or None for the module itself, what is measured) -> (the most it may be, why).
EXCEPTIONS: dict = {}


def measure(root: pathlib.Path = ROOT) -> dict:
    """`(path, name, what) -> size` of every module and function of `rlsuite/` and `envs/` over
    its budget."""
    over = {}
    paths = sorted([*(root / "rlsuite").rglob("*.py"), *(root / "envs").rglob("*.py")])
    for path in paths:
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            over[(rel, None, "lines")] = lines
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
            length = node.end_lineno - node.lineno + 1
            if length > FUNCTION_LINES:
                over[(rel, node.name, "lines")] = max(
                    length, over.get((rel, node.name, "lines"), 0)
                )
            if count > PARAMETERS:
                key = (rel, node.name, "parameters")
                over[key] = max(count, over.get(key, 0))
    return over


def check(over: dict, exceptions: dict) -> list[str]:
    """What `over` breaks of the budgets given `exceptions`, one line each."""
    budgets = {"lines": FUNCTION_LINES, "parameters": PARAMETERS}
    problems = []
    for key, size in sorted(over.items(), key=str):
        path, name, what = key
        where = path if name is None else f"{path}: {name}"
        budget = MODULE_LINES if name is None else budgets[what]
        if key not in exceptions:
            problems.append(f"{where} has {size} {what}, over the budget of {budget}")
        elif size > exceptions[key][0]:
            problems.append(f"{where} has {size} {what}, over its listed {exceptions[key][0]}")
    for key in sorted(set(exceptions) - set(over), key=str):
        problems.append(f"{key} is within its budget now: remove its exception")
    return problems


def test_every_module_and_function_is_within_its_budget_or_a_listed_exception():
    problems = check(measure(), EXCEPTIONS)
    assert not problems, "\n".join(problems)


def test_the_check_fails_on_a_module_and_a_function_over_budget(tmp_path):
    (tmp_path / "rlsuite").mkdir()
    (tmp_path / "envs").mkdir()
    params = ", ".join(f"a{i}" for i in range(8))
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    (tmp_path / "rlsuite" / "m.py").write_text(
        f"def ok({params}):\n    return 0\n\n\ndef wide({params}, *, b):\n    return 0\n\n\n"
        f"def long():\n{body}\n"
    )
    (tmp_path / "envs" / "big.py").write_text("x = 0\n" * 451)
    over = measure(tmp_path)
    assert over == {
        ("rlsuite/m.py", "wide", "parameters"): 9,
        ("rlsuite/m.py", "long", "lines"): 81,
        ("envs/big.py", None, "lines"): 451,
    }
    problems = check(over, {("envs/big.py", None, "lines"): (451, "a table")})
    assert problems == [
        "rlsuite/m.py: long has 81 lines, over the budget of 80",
        "rlsuite/m.py: wide has 9 parameters, over the budget of 8",
    ]
    assert check(over, {**{k: (v, "") for k, v in over.items()}}) == []
    # A listed exception may not grow, and one no longer needed must go.
    assert check(
        {("envs/big.py", None, "lines"): 452}, {("envs/big.py", None, "lines"): (451, "")}
    ) == ["envs/big.py has 452 lines, over its listed 451"]
    assert check({}, {("envs/big.py", None, "lines"): (451, "")}) == [
        "('envs/big.py', None, 'lines') is within its budget now: remove its exception"
    ]
