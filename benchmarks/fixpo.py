"""FixPO beside PPO-clip: the trust region of every update, what the fixup phase costs, and the
returns, on CartPole and pendulum, in one run on one machine.

For each environment (`--envs`), both sides train at the suite's tuned PPO configuration for it
(`rlsuite.app.tuned`, whose `fixpo` entries are PPO's) from the same `--seeds` keys, vmapped:

- FixPO: `fixpo.make(FixPOConfig(**tuned), env)` with `FixPOHparams(**tuned)` (its own trust
  region: `kl_target` 0.2 on each minibatch's largest KL, `kl_target_coef` 3);
- PPO-clip: `ppo.make(PPOConfig(**tuned), env, learn_with=fixpo.watch(0.2))`, which learns exactly
  as PPO does and measures each update's trust region as FixPO's does.

Each side's `train(keys)` is compiled ahead of time, then run once (`side_by_side`). Reported per
side, over every update of every seed:

- the updates that ended inside the trust region (`losses/trust_region_held`), and the largest
  `losses/trust_region_kl` of any update;
- FixPO's fixup gradient steps over the epochs' (`losses/fixup_steps` summed, over updates x
  update_epochs x num_minibatches), the paper's "fewer than 5% additional gradient steps";
- the evaluation return (`--eval-episodes` deterministic episodes per seed, our evaluator, the
  same keys), its mean with a 95% bootstrap interval over seeds, and FixPO minus PPO-clip with
  the paired bootstrap interval (a seed's two runs share their key: the same initial network and
  the same first rollout);
- compile and train seconds, and FixPO's train time over PPO-clip's.

    python benchmarks/fixpo.py                       # cartpole and pendulum, 5 seeds
    python benchmarks/fixpo.py --envs cartpole --seeds 3 --total-timesteps 100000
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import jax
import numpy as np
import tyro

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side  # noqa: E402
from report import check_args, fmt, progress  # noqa: E402

from rlsuite import envs  # noqa: E402
from rlsuite.agents import fixpo, ppo  # noqa: E402
from rlsuite.app.tuned import tuned  # noqa: E402


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    envs: list[str] = dataclasses.field(default_factory=lambda: ["cartpole", "pendulum"])
    """environments, each at its tuned entry"""
    seeds: int = 5
    """seeds per side, vmapped"""
    total_timesteps: int | None = None
    """env steps per seed (None: the tuned entry's)"""
    out: Path = Path("benchmarks/results/fixpo.json")
    """where to write the JSON results"""


def sides(env_name: str, args: Args):
    """`{label: (agent, hparams)}` of both sides on `env_name`."""
    entry = tuned("fixpo", env_name)
    config = dict(entry["config"])
    if args.total_timesteps is not None:
        config["total_timesteps"] = args.total_timesteps
    env, params = envs.make(env_name)
    fix_config, fix_hp = fixpo.FixPOConfig(**config), fixpo.FixPOHparams(**entry["hparams"])
    ppo_config, ppo_hp = ppo.PPOConfig(**config), ppo.PPOHparams(**entry["hparams"])
    watched = ppo.make(ppo_config, env, params, learn_with=fixpo.watch(fix_hp.kl_target))
    return {
        "fixpo": (fixpo.make(fix_config, env, params), fix_hp),
        "ppo_clip": (watched, ppo_hp),
    }


def run_side(label: str, agent, hp, keys, key_eval, episodes: int) -> dict:
    config = agent.config
    train, returns = side_by_side.ours_vmapped(agent, hp, config.num_updates)
    compiled, compile_s = side_by_side.timed_compile(jax.jit(train), keys)
    train_s, out = side_by_side.timed(compiled, keys)
    progress(f"{agent.env.name} {label}: compiled in {compile_s:.1f}s, trained in {train_s:.1f}s")
    metrics = out[1]
    held = np.asarray(metrics["losses/trust_region_held"])  # [N, U]
    kl = np.asarray(metrics["losses/trust_region_kl"])
    evals = np.asarray(returns(out, key_eval, episodes)["eval_returns"]).mean(axis=1)  # [N]
    evaluation = side_by_side.mean_interval(evals)
    side = {
        "compile_s": compile_s,
        "train_s": train_s,
        "updates": int(held.size),
        "updates_held": int(held.sum()),
        "held_fraction": float(held.mean()),
        "trust_region_kl_max": float(kl.max()),
        "trust_region_kl_median": float(np.median(kl)),
        "eval_return_per_seed": [float(x) for x in evals],
        "eval_return_mean": evaluation["mean"],
        "eval_return_ci": evaluation["ci"],
    }
    if "losses/fixup_steps" in metrics:
        steps = np.asarray(metrics["losses/fixup_steps"])
        primary = held.size * config.update_epochs * config.num_minibatches
        side["fixup_steps"] = int(steps.sum())
        side["fixup_step_fraction"] = float(steps.sum() / primary)
        side["updates_with_fixup"] = int((steps > 0).sum())
        side["beta_final_per_seed"] = [float(b) for b in np.asarray(metrics["losses/beta"])[:, -1]]
    return side


def compare(env_name: str, args: Args) -> dict:
    keys, key_eval = side_by_side.keys_for(args.seed, args.seeds)
    row = {"env": env_name, "seeds": args.seeds}
    for label, (agent, hp) in sides(env_name, args).items():
        row["env_steps_per_seed"] = agent.config.num_updates * agent.env_steps_per_update
        row[label] = run_side(label, agent, hp, keys, key_eval, args.eval_episodes)
    difference = np.subtract(
        row["fixpo"]["eval_return_per_seed"], row["ppo_clip"]["eval_return_per_seed"]
    )
    row["eval_difference"] = side_by_side.mean_interval(difference)
    row["train_time_ratio"] = row["fixpo"]["train_s"] / row["ppo_clip"]["train_s"]
    return row


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each side's trust region, fixup steps, returns and times, from
    the JSON `main` writes (`benchmarks/tables.py` renders it on the FixPO page)."""
    rows = result["rows"]
    header = ["env", "side", "updates inside the trust region", "largest KL stat", "fixup steps"]
    header += ["eval return (95% CI)", "FixPO - PPO-clip (paired CI)", "train s", "compile s"]
    body = []
    for r in rows:
        for label in ("fixpo", "ppo_clip"):
            s = r[label]
            fix = "" if "fixup_steps" not in s else f"{s['fixup_step_fraction']:.2%}"
            diff = r["eval_difference"]
            body.append(
                [
                    f"{r['env']} ({r['env_steps_per_seed']:,} steps x {r['seeds']})",
                    label,
                    f"{s['updates_held']:,} / {s['updates']:,}",
                    fmt(s["trust_region_kl_max"], ".3f"),
                    fix,
                    f"{s['eval_return_mean']:.1f} [{s['eval_return_ci'][0]:.1f}, "
                    f"{s['eval_return_ci'][1]:.1f}]",
                    ""
                    if label == "ppo_clip"
                    else f"{diff['mean']:+.1f} [{diff['ci'][0]:+.1f}, {diff['ci'][1]:+.1f}]",
                    fmt(s["train_s"])
                    + ("" if label == "ppo_clip" else f" ({r['train_time_ratio']:.2f}x)"),
                    fmt(s["compile_s"]),
                ]
            )
    title = (
        "FixPO beside PPO-clip (the same keys, tuned PPO configuration; trust region: each "
        "minibatch's largest KL(pi_old || pi) <= 0.2 after every update)"
    )
    return [(title, header, body)]


def main(args: Args) -> dict:
    check_args(args)
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    rows = []
    result = {}
    for env_name in args.envs:
        rows.append(compare(env_name, args))
        result = side_by_side.write_result(args, machine, {}, start, {"rows": rows})
    side_by_side.show(console, args, result, tables(result))
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
