"""`runner.fit` from flat keywords, for tests that vary one field of a run at a time: each keyword
goes to the record that holds it (`Schedule`, `Output`, `Callbacks`, `Final`); `hparams` and
`data` are `fit`'s own."""

import dataclasses

from rlsuite.loop import runner

RECORDS = {
    "schedule": runner.Schedule,
    "output": runner.Output,
    "callbacks": runner.Callbacks,
    "final": runner.Final,
}


def records(**flat) -> dict:
    """`fit`'s keyword arguments from `flat` (a keyword no record holds is passed as it is)."""
    given = {}
    for name, cls in RECORDS.items():
        fields = {f.name for f in dataclasses.fields(cls)}
        mine = {k: flat.pop(k) for k in list(flat) if k in fields}
        if mine:
            given[name] = cls(**mine)
    return {**given, **flat}


def fit(agent, key, **flat) -> runner.FitResult:
    return runner.fit(agent, key, **records(**flat))
