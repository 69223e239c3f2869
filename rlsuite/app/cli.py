"""The `rlsuite` command line.

    rlsuite train ppo --env cartpole --num-seeds 8 --total-timesteps 500000 --out runs/demo
    rlsuite train --resume runs/demo
    rlsuite train --config runs/sweep/best.json --out runs/best
    rlsuite sweep ppo --env cartpole --grid learning_rate=1e-4,1e-3 ent_coef=0,0.01 --num-seeds 4
    rlsuite pbt ppo --env cartpole --population 8 --grid learning_rate=log:1e-4:1e-2
    rlsuite eval runs/demo --episodes 100
    rlsuite render runs/demo --episodes 2 --out demo.mp4
    rlsuite plot runs/a runs/b --out curves.png
    rlsuite stats runs/a runs/b runs/c --by algo,env --out stats/
    rlsuite report runs/demo
    rlsuite dataset collect --env pendulum --quality medium --size 100000 --out data/p-m.hdf5
    rlsuite train iql --dataset data/p-m.hdf5 --num-updates 1000 --out runs/iql
    rlsuite list algos | envs [PATTERN] | tuned
    rlsuite --version

`train` starts from the tuned defaults for the environment (`rlsuite.app.tuned`), or from a
`--config FILE` (a run's `config.json` or a sweep's `best.json`); every config and hyperparameter
field is a flag (`rlsuite train ppo --help`). `sweep` trains configurations x seeds as one batch
(`rlsuite.app.sweep`), `pbt` populations with exploit and explore between chunks
(`rlsuite.app.pbt`), and `render` films a run's policy (`rlsuite.app.render`). `train` writes
`config.json`, `metrics.jsonl`, `metrics.csv`, `checkpoints/` and `final.json` under `--out`.
Offline algorithms learn from `--dataset FILE` (D4RL layout) and take their environment from it;
their `final.json` adds D4RL's normalised scores. `dataset collect` makes a dataset with our own SAC
or TD3 (`rlsuite.app.collect`). `stats` compares runs across tasks and seeds through rliable (the
`stats` extra; `rlsuite.app.stats`): IQM, mean, median, optimality gap, performance profiles and the
probability of improvement, as markdown tables and PNG figures. `report` writes one markdown page
about a run (`rlsuite.app.report`): its curve, evaluation, speed and configuration. The algorithms
are those of `rlsuite.agents.registry` (listed below): a family registered there trains, resumes and
evaluates here with no change to this module.

Exit status: 0; 2 for bad input (one line naming the value); 1 for a file that could not be
written (a full disk: one line naming the file, with the last complete checkpoint and the command
that continues the run); 3 when every run of a `train`, `sweep` or `pbt` diverged
(`rlsuite.loop.divergence`; one run left is a result, 0); 130 for Ctrl-C (one line: the update
it got to, the last complete checkpoint and the command that continues the run).
"""

import importlib
import importlib.metadata
import os
import sys

from rlsuite.agents import registry
from rlsuite.app import argv as argv_words
from rlsuite.app import startup
from rlsuite.app.errors import (
    INPUT_ERRORS,
    INTERRUPTED,
    choose,
    raised_here,
    said_warnings,
    stopped,
)
from rlsuite.loop.files import WriteError

# Each command's module, whose `main(argv)` runs it (a run command's `main(line)`, its
# `rlsuite.app.argv.CommandLine`), imported when its command runs (plotting,
# video and statistics libraries load only for theirs); a run directory's record and lifecycle
# are `rlsuite.app.runs`'.
COMMANDS = {
    "train": "train",
    "sweep": "sweep",
    "pbt": "pbt",
    "eval": "evaluate",
    "render": "render",
    "plot": "plot",
    "dataset": "dataset",
    "stats": "stats",
    "report": "report",
    "list": "listing",
}


def _help() -> str:
    """The module's docstring and the registered algorithms."""
    return (
        f"{__doc__}\nalgorithms: {', '.join(registry.online())} (online); "
        f"{', '.join(registry.offline())} (offline: --dataset FILE)\n"
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_help())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(f"rlsuite {importlib.metadata.version('rlsuite')}")
        return 0
    command, rest = argv[0], argv[1:]
    try:
        choose("command", command, tuple(COMMANDS))
        # A run command's words are read once (`rlsuite.app.argv`), for the start-up and its main.
        line = argv_words.read(rest) if command in startup.RUN_COMMANDS else None
        if command not in startup.PLAIN_COMMANDS:
            startup.start(command, line)  # processes and devices, before JAX starts
        module = importlib.import_module(f"rlsuite.app.{COMMANDS[command]}")
        with said_warnings(f"rlsuite {command}"):
            result = module.main(rest if line is None else line)
    except INPUT_ERRORS as error:
        if not raised_here(error):
            raise
        print(f"rlsuite {command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `rlsuite list envs | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (Python's exit flush)
        return 0
    except (WriteError, KeyboardInterrupt) as error:  # a full disk, Ctrl-C: one line each
        resume = f"rlsuite {command if command in ('sweep', 'pbt') else 'train'} --resume"
        print(f"rlsuite {command}: {stopped(error, resume)}", file=sys.stderr)
        return 1 if isinstance(error, WriteError) else INTERRUPTED
    return exit_status(result)


def exit_status(result) -> int:
    """0, or `EXIT_DIVERGED` where the command trained runs and every one of them diverged
    (`rlsuite.loop.divergence`): a result with one run left is a result."""
    from rlsuite.loop.divergence import EXIT_DIVERGED, every_run_diverged

    summary = result.get("summary", result) if isinstance(result, dict) else None
    diverged = isinstance(summary, dict) and every_run_diverged(summary)
    return EXIT_DIVERGED if diverged else 0


if __name__ == "__main__":
    sys.exit(main())
