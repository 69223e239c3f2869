"""Distributional DQN side by side: our C51, QR-DQN and IQN beside CleanRL's, Stoix's and rejax's,
on CartPole, in one run: env steps per second (compilation apart) and returns at equal env steps.

1. `c51`: our `c51` (CleanRL's `c51_jax.py` CartPole settings) on our `cartpole`, beside
   CleanRL's `cleanrl/c51_jax.py`, run unmodified as a subprocess of its own virtual environment
   on gymnasium 0.29.1's CartPole-v1 with one env, through its command line (`--seed`,
   `--total-timesteps`; its defaults are ours: 101 atoms on [-100, 100], buffer 10,000, batch
   128, lr 2.5e-4, gamma 0.99, 10,000 steps before learning, epsilon 1 -> 0.05 over half the
   run, networks 120-84 relu with lecun-normal kernels). Geometry, CleanRL -> ours: one env
   and a gradient step every `train_frequency` 10 env steps -> 10 envs and one gradient step per
   step of all of them; `target_network_frequency` 500 env steps -> `target_update_period` 50
   gradient steps (a copy). CleanRL bootstraps from the target network's own best action, so
   ours runs with `double=False` here (its default is double-Q). Differences that remain:
   Adam's epsilon (CleanRL 0.01 / 128; ours optax's 1e-8); CleanRL's loss clips the predicted
   probabilities to [1e-5, 1 - 1e-5] before the log (ours: log-softmax); during the first
   10,000 steps CleanRL acts epsilon-greedily with its untrained network (epsilon from 1 to
   0.87), ours uniformly; CleanRL's projection spreads mass with a loop over the batch, ours
   with one vectorised scatter. Both bootstrap a truncation from its true last observation.
   CleanRL cannot vmap seeds (a Python loop over one gymnasium env): its N runs go one after
   another, ours are N seeds vmapped.
2. `qrdqn`: our `qrdqn` beside Stoix's `stoix/systems/q_learning/ff_qr_dqn.py` (its Anakin
   system: the whole loop jitted, gymnax's CartPole-v1 behind Stoa's wrappers), run as a
   subprocess of its own virtual environment (JAX 0.5.3: Stoix needs < 0.6) through its hydra
   command line. Mapping, ours -> Stoix: num_envs -> arch.total_num_envs (10); one gradient step
   per collection -> system.rollout_length 1, system.epochs 1; learning_starts (all envs) ->
   system.warmup_steps (per env; Stoix's total_timesteps does not count them, so it runs
   total - learning_starts after them); buffer_size -> system.total_buffer_size; batch_size ->
   system.total_batch_size; learning_rate -> system.q_lr; gamma; num_quantiles (51) and kappa
   (1) -> system.num_quantiles, system.huber_loss_parameter; hidden_sizes and relu ->
   network.actor_network.pre_torso (layer_sizes, activation). Where Stoix has no switch, ours
   takes Stoix's choice: its target network moves by a Polyak step of tau 0.005 after every
   gradient step (ours: `target_update_period` 1, `tau` 0.005; its default is a copy every 50
   steps); it explores with a constant epsilon (ours `start_e` = `end_e` = 0.05, Stoix's
   system.training_epsilon 0.05); it bootstraps from the target network's best action
   (`double=False`). Stoix clips gradients at a global norm of 0.5 by default: set to 1e9
   (ours: no clipping). Differences that remain: Stoix's Adam epsilon 1e-5 (ours 1e-8); its
   warm-up plays its untrained epsilon-greedy policy (ours uniform); its `done` ends the
   bootstrap at CartPole's 500-step limit (ours bootstraps a truncation); its output layer
   starts lecun-normal (ours orthogonal, as the hidden layers on both sides). Stoix cannot vmap
   independent seeds (its `update_batch_size` averages the gradients of its learners): N runs go
   one after another.
3. `iqn`: our `iqn` beside rejax 0.1.3's `rejax.IQN` on gymnax's CartPole-v1 (behind
   `benchmarks/off_policy.py`'s `RejaxEnv`, as `value_based.py` runs rejax's DQN), in-process,
   N seeds vmapped on both sides, at its own budget (`--iqn-timesteps`): N = 64 and N' = 64
   fractions per item make a gradient step cost about 30 ms on two CPU cores, so the CPU run is
   one seed (`--seeds 1 8` on a GPU). rejax's network is fixed in part: its state features are
   its MLP (`hidden_layer_sizes`), its fraction embedding has as many cosine features as their
   width, and a dense 64 with swish comes before the output. Both sides have rejax's default
   sizes: rejax `hidden_layer_sizes` (64, 64) with relu (the swish stays), ours `hidden_sizes`
   (64, 64, 64) and `embedding_size` 64 (its defaults: (120, 84) and 64). The rest is
   `value_based.py`'s DQN mapping (num_envs, buffer, fill_buffer, batch, num_epochs, lr, gamma,
   target_update_freq, epsilon's schedule), kappa 1. Differences that remain (rejax's code fixes
   them): rejax 0.1.3 takes the target's quantiles from the online network (its target
   parameters are kept but never read) and the bootstrap action from the online network's mean
   over 32 sampled fractions (ours: the target network's quantiles at the online network's
   action, double-Q, from 32 fixed midpoint fractions), and acts on 32 sampled fractions; its
   `done` ends the bootstrap at the time limit; its kernels start lecun-normal (ours
   orthogonal, IQN's default).

Not run: Rainbow's parts beside Dopamine's JAX agents. dopamine-rl 4.1.2 requires TensorFlow
(with tf-slim, tf-keras, tensorflow-probability, ale-py, opencv and gym <= 0.25.2), whose
runner is a per-step Python loop over one gym env with its own CartPole geometry (200-step
episodes, 201 atoms on [-10, 10], lr 0.09); not installed here.

Timing. Ours: `side_by_side.ours_vmapped` through `take_turns` (the first call compiles, the
best later call does not). The subprocess anchors: their own process from just before their
script runs (Python's imports of jax, flax and torch done first) to its end, less their
evaluations (Stoix), is the wall time with compilation; less the JAX compilation events in that
time (tracing, lowering and XLA compilation: `jax.monitoring`) it is the compile-free one.
Returns: the training curve is the mean return of the episodes that ended in each update of
ours (CleanRL: its printed `episodic_return`s, binned by step; Stoix: its actor metrics, one
point per evaluation interval; rejax: `off_policy.episode_stats_callback`); every side's
evaluation return is greedy episodes of its trained parameters through our evaluator on our
`cartpole` (CleanRL's and Stoix's networks applied from their saved kernels: `dense_values`).
Timing, evaluation, tables and JSON are `benchmarks/side_by_side.py`'s; the IQN part is
`value_based.bench`. Readings: docs/benchmarks/distributional.md.

    python benchmarks/distributional.py                              # every part, on a CPU
    python benchmarks/distributional.py --algos iqn --seeds 1 8      # on a GPU
    python benchmarks/distributional.py --algos c51 --process-seeds 1 --timesteps 20000

CleanRL's and Stoix's files and virtual environments are in the git-ignored
`benchmarks/_anchors/` (benchmarks/README.md says how to fetch and install them); the JSON
records the SHA-256 of the files run.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import side_by_side
import tyro
from off_policy import rejax_curve
from report import check_args, progress
from value_based import Anchor, Part, bench, dqn_rejax_kwargs, rejax_made

from rlsuite import envs
from rlsuite.loop.agent import config_dict

ALGOS = ("c51", "qrdqn", "iqn")
ANCHORS = side_by_side.ROOT / "benchmarks/_anchors"
CLEANRL_COMMIT = "fe8d8a03c41a7ef5b523e2e354bd01c363e786bb"
CLEANRL_FILES = ("cleanrl/c51_jax.py", "cleanrl_utils/__init__.py", "cleanrl_utils/buffers.py")
STOIX_COMMIT = "8fff19c94a478c1e1ff75fbf10396d488aa25d70"
STOA_COMMIT = "b3a084ed05893c301e079a8f527de90513896d7e"
STOIX_FILE = "stoix/systems/q_learning/ff_qr_dqn.py"
IQN_SIZES = {"hidden_sizes": (64, 64, 64), "embedding_size": 64}  # rejax's default network
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    """Flags of the distributional benchmark."""

    algos: list[str] = dataclasses.field(default_factory=lambda: list(ALGOS))
    """Parts to run: c51 (beside CleanRL), qrdqn (beside Stoix), iqn (beside rejax)."""
    timesteps: int = 150_000
    """Env steps per seed of every part (all envs together)."""
    iqn_timesteps: int = 50_000
    """Env steps per seed of the IQN part (its gradient steps cost several times DQN's)."""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1])
    """Numbers of vmapped seeds of the in-process part (iqn; both sides vmap them)."""
    process_seeds: int = 2
    """Runs of each subprocess anchor (CleanRL, Stoix), one after another; ours is timed at 1
    seed and at this many vmapped."""
    cleanrl_dir: Path = ANCHORS / "cleanrl"
    """A copy of CleanRL's c51_jax.py and cleanrl_utils (benchmarks/README.md)."""
    cleanrl_python: Path = ANCHORS / "cleanrl/venv/bin/python"
    """The Python of CleanRL's virtual environment (torch, gymnasium 0.29.1, tyro, tensorboard)."""
    stoix_dir: Path = ANCHORS / "stoix"
    """A copy of Stoix's `stoix` package (its repository root)."""
    stoa_dir: Path = ANCHORS / "stoa"
    """A copy of Stoa's `stoa` package (Stoix's environment API)."""
    stoix_python: Path = ANCHORS / "stoix/venv/bin/python"
    """The Python of Stoix's virtual environment (JAX 0.5.3)."""
    call_timeout: int = 1800
    """Hard limit in seconds on each anchor process."""
    repeats: int = 1
    """Compile-free timed calls of ours after the first; the best is kept."""
    out: Path = Path("benchmarks/results/distributional.json")
    """Where the whole run's JSON goes."""


# --------------------------------------------------------------------------- anchor processes
_LISTENER = r"""
import json, sys, time
import numpy as np
import jax

COMPILES = []  # (end time, seconds) of each JAX compilation event
EVENTS = EVENTS_NAMED_BY_THE_BENCHMARK


def _on_event(event, seconds, **kwargs):
    if event in EVENTS:
        COMPILES.append((time.perf_counter(), seconds))


jax.monitoring.register_event_duration_secs_listener(_on_event)


def compile_s(since):
    return sum(s for t, s in COMPILES if t >= since)


def emit(kind, **fields):
    print("RLSUITE " + json.dumps({"kind": kind, **fields}), flush=True)


def save_layers(path, layers):
    arrays = {}
    for i, (kernel, bias) in enumerate(layers):
        arrays[f"kernel_{i}"] = np.asarray(kernel)
        arrays[f"bias_{i}"] = np.asarray(bias)
    np.savez(path, **arrays)
""".replace("EVENTS_NAMED_BY_THE_BENCHMARK", repr(COMPILE_EVENTS))

CLEANRL_RUNNER = (
    _LISTENER
    + r"""
import runpy
import jax.numpy as jnp

# c51_jax.py calls jnp.clip(x, a_min=, a_max=), keywords current JAX no longer takes
_clip = jnp.clip


def clip(arr, min=None, max=None, *, a_min=None, a_max=None):
    return _clip(arr, a_min if a_min is not None else min, a_max if a_max is not None else max)


jnp.clip = clip
import flax, optax, gymnasium, tyro, torch, torch.utils.tensorboard  # noqa: imported first

script, layers_path = sys.argv[1], sys.argv[2]
sys.argv = [script, *sys.argv[3:]]
start = time.perf_counter()
names = runpy.run_path(script, run_name="__main__")
end = time.perf_counter()
params = names["q_state"].params["params"]
layers = [(params[f"Dense_{i}"]["kernel"], params[f"Dense_{i}"]["bias"]) for i in range(3)]
save_layers(layers_path, layers)
emit("end", wall_s=end - start, compile_s=compile_s(start))
"""
)

STOIX_RUNNER = (
    _LISTENER
    + r"""
from stoix.systems.q_learning import ff_qr_dqn as system
from stoix.utils import logger as stoix_logger

layers_path = sys.argv[1]
# imported as a module, its hydra config is found by path, not as a package
configs = system.__file__.rsplit("/systems/", 1)[0] + "/configs/default/anakin"
sys.argv = [system.__file__, f"--config-path={configs}", *sys.argv[2:]]
EVAL_S, LAST = [], {}
_log = stoix_logger.StoixLogger.log


def log(self, metrics, t, t_eval, event):
    means = {}
    for name, value in metrics.items():
        array = np.asarray(value)
        if array.size and array.dtype.kind in "biuf":
            means[name] = float(array.mean())
    emit("log", event=event.value, t=int(t), metrics=means)
    return _log(self, metrics, t, t_eval, event)


stoix_logger.StoixLogger.log = log
_evaluator_setup = system.evaluator_setup


def evaluator_setup(*args, **kwargs):
    evaluator, absolute, rest = _evaluator_setup(*args, **kwargs)

    def timed(params, keys):
        begin = time.perf_counter()
        out = jax.block_until_ready(evaluator(params, keys))
        EVAL_S.append((begin, time.perf_counter()))
        LAST["params"] = params
        return out

    return timed, absolute, rest


system.evaluator_setup = evaluator_setup
_run = system.run_experiment


def run_experiment(config):
    start = time.perf_counter()
    value = _run(config)
    end = time.perf_counter()
    evals = sum(b - a for a, b in EVAL_S)
    in_evals = sum(s for t, s in COMPILES if any(a <= t <= b for a, b in EVAL_S))
    params = jax.tree.map(lambda x: np.asarray(x)[0], LAST["params"])["params"]
    torso, head = params["torso"], params["action_head"]
    layers = [(torso[f"Dense_{i}"]["kernel"], torso[f"Dense_{i}"]["bias"])
              for i in range(len(torso))]
    layers.append((head["Dense_0"]["kernel"], head["Dense_0"]["bias"]))
    save_layers(layers_path, layers)
    emit("end", wall_s=end - start - evals, compile_s=compile_s(start) - in_evals, eval_s=evals)
    return value


system.run_experiment = run_experiment
system.hydra_entry_point()
"""
)


def sha256(directory: Path, files) -> dict:
    return {f: hashlib.sha256((directory / f).read_bytes()).hexdigest() for f in files}


def anchor_env() -> dict:
    """The environment of an anchor's process: one JAX CPU device (its own default), no
    logging services."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env.update(JAX_PLATFORMS="cpu", WANDB_MODE="disabled", WANDB_SILENT="true")
    return env


def run_process(command: list[str], cwd: Path, env: dict, timeout: int, label: str):
    """`command` run to its end: `(stdout, the RLSUITE lines as dicts)`; a `RuntimeError` with
    its output's tail where it fails or passes `timeout`."""
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"{label} ran past --call-timeout {timeout}s") from error
    lines = [json.loads(x[8:]) for x in done.stdout.splitlines() if x.startswith("RLSUITE ")]
    if done.returncode or not any(line["kind"] == "end" for line in lines):
        tail = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(f"{label} exited {done.returncode}:\n{tail}")
    return done.stdout, lines


def load_layers(path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    with np.load(path) as arrays:
        count = len(arrays.files) // 2
        return [(arrays[f"kernel_{i}"], arrays[f"bias_{i}"]) for i in range(count)]


def dense_values(layers, obs, num_actions: int, reduce):
    """Each action's value from a stack of dense layers (relu between them; the last one's
    outputs `[B, A * K]` read as `[B, A, K]`, then `reduce`d over K): CleanRL's and Stoix's
    Q networks applied from their saved kernels."""
    x = obs.reshape(obs.shape[0], -1)
    for i, (kernel, bias) in enumerate(layers):
        x = x @ kernel + bias
        if i < len(layers) - 1:
            x = jax.nn.relu(x)
    return reduce(x.reshape(x.shape[0], num_actions, -1))


def process_side(runs: list[dict]) -> dict:
    """A subprocess anchor's side of a row: its runs one after another, summed."""
    return {
        "first_call_s": sum(r["wall_s"] for r in runs),
        "steady_s": [sum(r["wall_s"] - r["compile_s"] for r in runs)],
        "train_returns": np.stack([r["curve"] for r in runs]),
        "runs": [{k: v for k, v in r.items() if k not in ("curve", "layers")} for r in runs],
    }


# ----------------------------------------------------------------------------------------- C51
def c51_ours(args: Args):
    from rlsuite.agents import c51

    config = c51.C51Config(total_timesteps=args.timesteps, double=False)
    env = envs.make("cartpole")
    agent = c51.make(config, *env)
    return env, agent, agent.default_hparams


def cleanrl_run(args: Args, seed: int, steps_per_update: int, num_updates: int) -> dict:
    """One CleanRL c51_jax.py run: its times, per-update curve and trained layers."""
    script = args.cleanrl_dir / CLEANRL_FILES[0]
    with tempfile.TemporaryDirectory(prefix="rlsuite_cleanrl_") as work:
        layers_path = Path(work) / "layers.npz"
        command = [str(args.cleanrl_python), "-c", CLEANRL_RUNNER, str(script), str(layers_path)]
        command += ["--seed", str(seed), "--total-timesteps", str(args.timesteps)]
        env = anchor_env()
        env["PYTHONPATH"] = str(args.cleanrl_dir)
        stdout, lines = run_process(
            command, Path(work), env, args.call_timeout, f"CleanRL seed {seed}"
        )
        layers = load_layers(layers_path)
    end = next(line for line in lines if line["kind"] == "end")
    pattern = re.compile(r"^global_step=(\d+), episodic_return=\[([-\d.e+]+)\]", re.MULTILINE)
    total = np.zeros(num_updates)
    count = np.zeros(num_updates)
    for step, value in pattern.findall(stdout):
        update = min(int(step) // steps_per_update, num_updates - 1)
        total[update] += float(value)
        count[update] += 1
    curve = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    progress(
        f"CleanRL seed {seed}: {end['wall_s']:.1f}s ({end['compile_s']:.1f}s compiling), "
        f"{int(count.sum())} episodes"
    )
    return {"seed": seed, **end, "episodes": int(count.sum()), "curve": curve, "layers": layers}


def c51_part(args: Args, save) -> list[dict]:
    """Ours (1 and `process_seeds` seeds vmapped) beside CleanRL's runs one after another."""
    from rlsuite.ops import distributional

    (env, env_params), agent, hp = c51_ours(args)
    config = agent.config
    atoms = distributional.support(config.num_atoms, config.v_min, config.v_max)
    num_actions = int(env.action_space(env_params).n)

    def act(layers, key, obs):
        def expected(logits):
            return jnp.sum(jax.nn.softmax(logits, axis=-1) * atoms, axis=-1)

        return jnp.argmax(dense_values(layers, obs, num_actions, expected), axis=-1)

    mapping = {
        "ours_config": config_dict(config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "cleanrl_command": ["--seed", "S", "--total-timesteps", str(args.timesteps)],
        "cleanrl_files_sha256": sha256(args.cleanrl_dir, CLEANRL_FILES),
    }
    seeds = [args.seed + 1 + i for i in range(args.process_seeds)]  # CleanRL's default seed 1
    runs = [cleanrl_run(args, s, agent.env_steps_per_update, config.num_updates) for s in seeds]
    name = "cartpole / gymnasium 0.29.1 CartPole-v1, C51"
    return process_rows(args, name, env, env_params, agent, hp, "cleanrl", runs, act, mapping, save)


def process_rows(args, name, env, env_params, agent, hp, label, runs, act, mapping, save):
    """The rows of ours at 1 and `len(runs)` seeds vmapped beside the anchor's first run and all
    of its runs, each evaluated through our evaluator."""
    steps_per_update, num_updates = agent.env_steps_per_update, agent.config.num_updates
    train, returns = side_by_side.ours_vmapped(agent, hp, num_updates)
    rows = []
    for n in sorted({1, len(runs)}):
        keys, key_eval = side_by_side.keys_for(args.seed, n)
        sides, outs = side_by_side.take_turns(
            {"ours": functools.partial(train, keys)}, args.repeats, f"{name} n={n}"
        )
        sides["ours"].update(returns(outs["ours"], key_eval, args.eval_episodes))
        theirs = process_side(runs[:n])
        stacked = [
            tuple(jnp.stack([r["layers"][i][j] for r in runs[:n]]) for j in range(2))
            for i in range(len(runs[0]["layers"]))
        ]
        theirs["eval_returns"] = side_by_side.evaluate_params(
            env, env_params, act, stacked, key_eval, args.eval_episodes
        )
        sides[label] = theirs
        for side in sides.values():
            side_by_side.summarise(side, n, steps_per_update, num_updates)
        rows.append(
            {
                "env": name,
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                "mapping": mapping,
                "anchors": [label],
                "threshold": None,
                "ours_vmapped": True,
                f"{label}_runs_in_sequence": True,
                **sides,
                f"ours_over_{label}": side_by_side.ratios(sides["ours"], theirs),
            }
        )
        save(rows)
    return rows


# -------------------------------------------------------------------------------------- QR-DQN
def qrdqn_ours(args: Args):
    from rlsuite.agents import qrdqn

    config = qrdqn.QRDQNConfig(total_timesteps=args.timesteps, double=False, target_update_period=1)
    env = envs.make("cartpole")
    agent = qrdqn.make(config, *env)
    hp = agent.default_hparams.replace(tau=0.005, start_e=0.05, end_e=0.05)
    return env, agent, hp


def stoix_overrides(args: Args, agent, hp, seed: int, work: Path) -> list[str]:
    """Stoix's hydra overrides for our QR-DQN's geometry (module docstring, part 2)."""
    config = agent.config
    if config.learning_starts % config.num_envs:
        raise ValueError("learning_starts must be whole steps of every env (Stoix's warm-up)")
    learner_steps = args.timesteps - config.learning_starts
    # an evaluation (and a point of its curve) every 1,000 updates, a whole number of them
    evaluations = max(2, learner_steps // (1000 * config.num_envs))
    while (learner_steps // config.num_envs) % evaluations:
        evaluations -= 1
    sizes = ",".join(str(s) for s in config.hidden_sizes)
    return [
        f"arch.seed={seed}",
        f"arch.total_num_envs={config.num_envs}",
        f"arch.total_timesteps={learner_steps}",
        f"arch.num_evaluation={evaluations}",
        f"arch.num_eval_episodes={args.eval_episodes}",
        "arch.absolute_metric=False",
        "system.rollout_length=1",
        f"system.epochs={config.gradient_steps}",
        f"system.warmup_steps={config.learning_starts // config.num_envs}",
        f"system.total_buffer_size={config.buffer_size}",
        f"system.total_batch_size={config.batch_size}",
        f"system.q_lr={float(hp.learning_rate)}",
        f"system.gamma={float(hp.gamma)}",
        f"system.tau={float(hp.tau)}",
        "system.max_grad_norm=1e9",
        f"system.training_epsilon={float(hp.end_e)}",
        "system.evaluation_epsilon=0.0",
        f"system.num_quantiles={config.num_quantiles}",
        f"system.huber_loss_parameter={config.kappa}",
        f"network.actor_network.pre_torso.layer_sizes=[{sizes}]",
        f"network.actor_network.pre_torso.activation={config.activation}",
        f"hydra.run.dir={work}",
        f"logger.base_exp_path={work}/results",
    ]


def stoix_run(args: Args, agent, hp, seed: int) -> dict:
    """One Stoix ff_qr_dqn.py run: its times, per-update curve and trained layers."""
    config = agent.config
    with tempfile.TemporaryDirectory(prefix="rlsuite_stoix_") as work:
        layers_path = Path(work) / "layers.npz"
        overrides = stoix_overrides(args, agent, hp, seed, Path(work))
        command = [str(args.stoix_python), "-c", STOIX_RUNNER, str(layers_path), *overrides]
        env = anchor_env()
        env["PYTHONPATH"] = f"{args.stoix_dir}:{args.stoa_dir}"
        # Stoix's tensorboard_logger ships protobuf descriptors older than its protobuf
        env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
        _, lines = run_process(command, args.stoix_dir, env, args.call_timeout, f"Stoix {seed}")
        layers = load_layers(layers_path)
    end = next(line for line in lines if line["kind"] == "end")
    curve = np.full(config.num_updates, np.nan)
    warm_up = config.learning_starts // (config.num_envs * config.collections_per_update)
    acts = [x for x in lines if x["kind"] == "log" and x["event"] == "actor"]
    for line in acts:  # t: Stoix's learner env steps at the interval's end
        update = warm_up + line["t"] // agent.env_steps_per_update - 1
        curve[min(update, config.num_updates - 1)] = line["metrics"]["episode_return"]
    evals = [x for x in lines if x["kind"] == "log" and x["event"] == "evaluator"]
    stoix_eval = evals[-1]["metrics"]["episode_return"] if evals else None
    intervals = [x["metrics"]["steps_per_second"] for x in acts]
    progress(
        f"Stoix seed {seed}: {end['wall_s']:.1f}s ({end['compile_s']:.1f}s compiling), "
        f"its own last evaluation {stoix_eval}"
    )
    return {
        "seed": seed,
        **end,
        "overrides": overrides[:-2],
        "own_last_eval_return": stoix_eval,
        "own_interval_steps_per_s": intervals,
        "curve": curve,
        "layers": layers,
    }


def qrdqn_part(args: Args, save) -> list[dict]:
    """Ours (1 and `process_seeds` seeds vmapped) beside Stoix's runs one after another."""
    (env, env_params), agent, hp = qrdqn_ours(args)
    num_actions = int(env.action_space(env_params).n)

    def act(layers, key, obs):
        values = dense_values(layers, obs, num_actions, lambda q: q.mean(axis=-1))
        return jnp.argmax(values, axis=-1)

    mapping = {
        "ours_config": config_dict(agent.config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "stoix_file_sha256": sha256(args.stoix_dir, [STOIX_FILE]),
    }
    seeds = [args.seed + i for i in range(args.process_seeds)]
    runs = [stoix_run(args, agent, hp, s) for s in seeds]
    mapping["stoix_overrides"] = runs[0]["overrides"]
    name = "cartpole / gymnax CartPole-v1 (Stoa), QR-DQN"
    return process_rows(args, name, env, env_params, agent, hp, "stoix", runs, act, mapping, save)


# ----------------------------------------------------------------------------------------- IQN
def iqn_part(args: Args, save) -> list[dict]:
    """Ours and rejax's IQN, N seeds vmapped on both sides (`value_based.bench`)."""
    import gymnax
    import rejax

    from rlsuite.agents import iqn

    config = iqn.IQNConfig(total_timesteps=args.iqn_timesteps, **IQN_SIZES)
    env = envs.make("cartpole")
    agent = iqn.make(config, *env)
    hp = agent.default_hparams
    kwargs = dqn_rejax_kwargs(config, hp)
    del kwargs["ddqn"]  # rejax's IQN has no switch: the online network bootstraps
    kwargs.update(num_tau_samples=config.num_taus, num_tau_prime_samples=config.num_target_taus)
    kwargs["kappa"] = config.kappa
    sizes = config.hidden_sizes[:-1]  # rejax's last hidden layer (64) is fixed
    anchor = rejax_made(rejax.IQN, *gymnax.make("CartPole-v1"), kwargs, sizes)

    def act(params, key, obs):
        q = anchor.agent.apply(params, obs.reshape(obs.shape[0], -1), key, method="q")
        return jnp.argmax(q, axis=-1)

    rejax_side = Anchor(
        label="rejax",
        train=jax.jit(jax.vmap(anchor.train)),
        curve=lambda out: rejax_curve(out[1], 1),
        params=lambda out: out[0].q_ts.params,
        act=act,
        version=importlib.metadata.version("rejax"),
    )
    mapping = {
        "ours_config": config_dict(config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "rejax_create_kwargs": kwargs,
        "rejax_eval_callback": "episode statistics only (benchmark)",
    }
    name = "cartpole / gymnax CartPole-v1, IQN"
    part = Part(name, *env, agent, hp, {"rejax": rejax_side}, mapping, None)
    return bench(args, part, save)


PARTS = {"c51": c51_part, "qrdqn": qrdqn_part, "iqn": iqn_part}


# ------------------------------------------------------------------------------------------ main
def check(args: Args) -> None:
    check_args(args, choices={"algos": ALGOS})
    needs = {
        "c51": [args.cleanrl_python, *(args.cleanrl_dir / f for f in CLEANRL_FILES)],
        "qrdqn": [args.stoix_python, args.stoix_dir / STOIX_FILE, args.stoa_dir / "stoa"],
    }
    for algo in args.algos:
        missing = [str(p) for p in needs.get(algo, []) if not p.exists()]
        if missing:
            raise FileNotFoundError(
                f"--algos {algo}: no {', '.join(missing)}; benchmarks/README.md says how to "
                "fetch and install it"
            )


def anchor_versions(args: Args) -> dict:
    def versions(python: Path, names) -> dict:
        if not python.exists():
            return {}
        code = (
            "import importlib.metadata as m, json\nout = {}\n"
            f"for n in {tuple(names)!r}:\n"
            "    try:\n        out[n] = m.version(n)\n"
            "    except m.PackageNotFoundError:\n        out[n] = None\n"
            "print(json.dumps(out))\n"
        )
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
        return json.loads(done.stdout) if done.returncode == 0 else {}

    found = {}
    if "c51" in args.algos:
        names = ("jax", "flax", "optax", "gymnasium", "torch", "tyro")
        found["cleanrl"] = {
            "commit": CLEANRL_COMMIT,
            "sha256": sha256(args.cleanrl_dir, CLEANRL_FILES),
            "venv": versions(args.cleanrl_python, names),
        }
    if "qrdqn" in args.algos:
        names = ("jax", "flax", "optax", "flashbax", "gymnax", "hydra-core")
        found["stoix"] = {
            "commit": STOIX_COMMIT,
            "stoa_commit": STOA_COMMIT,
            "sha256": sha256(args.stoix_dir, [STOIX_FILE]),
            "venv": versions(args.stoix_python, names),
        }
    if "iqn" in args.algos:
        found["rejax"] = importlib.metadata.version("rejax")
    return found


def main(args: Args) -> dict:
    check(args)
    console, machine = side_by_side.set_up(args)
    anchors = anchor_versions(args)
    start = time.perf_counter()
    rows: dict = {}

    def save(algo: str, part_rows: list[dict]) -> None:  # a run killed at its limit keeps these
        done = {"partial": True, "args": side_by_side.args_dict(args), **rows, algo: part_rows}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tracked, _ = side_by_side.split_curves(done)
        args.out.write_text(json.dumps(tracked, indent=2, default=float))

    for algo in args.algos:
        rows[algo] = PARTS[algo](args, functools.partial(save, algo))
    result = side_by_side.write_result(args, machine, anchors, start, rows)
    side_by_side.show(console, args, result, tables(result))
    return result


LABELS = {"cleanrl": "CleanRL", "stoix": "Stoix", "rejax": "rejax"}


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each part beside its anchor, from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the distributional benchmark's and families' pages)."""
    tables = []
    for algo in result["args"]["algos"]:
        rows = result[algo]
        name = rows[0]["anchors"][0]
        label = LABELS.get(name, name)
        how = (
            "N seeds vmapped on both sides"
            if name == "rejax"
            else f"ours: N seeds vmapped; {label}: N runs one after another"
        )
        title = f"{rows[0]['env']}, {rows[0]['env_steps_per_seed']:,} env steps per seed; {how}"
        header, body = side_by_side.comparison_table(rows, name, label, None)
        tables.append((title, header, [[c.replace("nan", "-") for c in r] for r in body]))
    return tables


if __name__ == "__main__":
    main(tyro.cli(Args))
