"""What kind of batch a run directory trains: one configuration's seeds (`None`), a sweep of
configurations x seeds (`Sweep`, `rlsuite sweep`) or populations trained with exploit and explore
(`Population`, `rlsuite pbt`). The run record (`rlsuite.app.run_record.RunRecord.batch`) holds
one of them, saved in `config.json` under its `kind` ("sweep" or "pbt").

Each kind says what the lifecycle needs from it: the hparams its runs train with (one set per run,
the driver's `hparams_axis=0`), the agent it wraps, the step between chunks, and how many seeds
each configuration has (for the driver's keys).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np

from rlsuite.loop.files import json_text, write_text
from rlsuite.loop.population import PBT, population_agent

LINEAGE = "lineage.jsonl"  # a population's exploit steps, a row each


def sweep_hparams(base, sweep: dict):
    """`base` hparams with each swept field a `[configs x seeds]` array, configuration-major
    (run `c * seeds + s`), the others shared: the driver's `hparams_axis=0` batch."""
    configs, seeds = sweep["configs"], sweep["seeds"]
    columns = {
        field: jnp.asarray(np.repeat([c[field] for c in configs], seeds), jnp.float32)
        for field in sweep["fields"]
    }
    return base.replace(**columns)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """`configs` (a dict of the swept `fields` each) x `seeds` runs, run `c * seeds + s` being
    seed `s` of configuration `c`; ranked by `metric`; from a `grid` or `random` `search`."""

    fields: list[str]
    configs: list[dict]
    seeds: int
    metric: str
    search: str

    kind: ClassVar[str] = "sweep"

    def hparams(self, base):
        return sweep_hparams(base, self.to_dict())

    def agent(self, agent):
        return agent

    def between_chunks(self, seed: int, out: pathlib.Path | None):
        return None

    @property
    def seeds_per_config(self) -> int:
        return self.seeds

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Population:
    """`populations` x `members` runs, member `m` of population `p` being run `p * members + m`,
    each starting from its draw in `configs` of the `fields` within `low`..`high` (`log`: on a log
    scale); between chunks the bottom `fraction` of each population copies a top member and
    perturbs its hparams, redrawing with probability `resample` (never, without `exploit`)."""

    fields: list[str]
    low: list[float]
    high: list[float]
    log: list[bool]
    members: int
    populations: int
    configs: list[dict]
    fraction: float
    resample: float
    exploit: bool

    kind: ClassVar[str] = "pbt"

    def hparams(self, base):
        """The members' initial hparams `[populations x members]` (`hparams_axis=0`)."""
        return sweep_hparams(base, {"fields": self.fields, "configs": self.configs, "seeds": 1})

    def agent(self, agent):
        return population_agent(agent, tuple(self.fields))  # each member's hparams in its state

    def between_chunks(self, seed: int, out: pathlib.Path | None):
        """The exploit-and-explore step (None where it never exploits), writing each step's
        lineage to `out/lineage.jsonl` (process 0). The first step of a call drops rows that a
        killed process wrote at or after its update (the resume trains those chunks again)."""
        if not self.exploit:
            return None
        step = PBT(
            fields=tuple(self.fields),
            low=tuple(self.low),
            high=tuple(self.high),
            log=tuple(self.log),
            members=self.members,
            seed=seed,
            fraction=self.fraction,
            resample=self.resample,
        )
        if out is None:
            return step
        return _with_lineage(step, pathlib.Path(out) / LINEAGE)

    @property
    def seeds_per_config(self) -> None:
        return None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


KINDS = {kind.kind: kind for kind in (Sweep, Population)}
Batch = Sweep | Population | None


def batch_of(record: dict) -> Any:
    """The batch kind a `config.json` record holds (None: one configuration's seeds)."""
    found = [KINDS[k](**record[k]) for k in KINDS if k in record]
    return found[0] if found else None


def _with_lineage(step: PBT, path: pathlib.Path):
    """`step` writing each exploit's row to `lineage.jsonl` (strict JSON, the file replaced whole
    each time); a resume keeps the rows before the update it continues from."""
    from rlsuite.loop.distributed import is_main

    rows: list[str] | None = None

    def between_chunks(states, metrics, update):
        nonlocal rows
        states = step(states, metrics, update)
        if is_main():
            if rows is None:
                old = path.read_text().splitlines() if path.exists() else []
                rows = [r + "\n" for r in old if r.strip() and json.loads(r)["update"] < update]
            rows.append(json_text(step.lineage[-1], indent=None))
            write_text(path, "".join(rows))
        return states

    return between_chunks
