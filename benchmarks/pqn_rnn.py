"""PQN with memory side by side: our recurrent PQN (`PQNConfig.recurrent="gru"`) beside
purejaxql's PQN-RNN (`purejaxql/pqn_rnn_gymnax.py`), in one run, at equal env steps.

Parts (`--algos`), each on gymnax's environment on purejaxql's side and on ours through our
gymnax adapter:
- `pqn_rnn` (the default): `CartPole-v1` at purejaxql's `config/alg/pqn_rnn_cartpole.yaml`, for
  `--cartpole-timesteps` env steps per seed (purejaxql's own runs are 500,000; 100,000 by
  default, so that 1 and 8 seeds on both sides fit about 20 minutes of a 2-core CPU).
- `pqn_rnn_memory`: `MemoryChain-bsuite` (a memory task: the context is seen at the first step
  only and must be recalled at the last) at `pqn_rnn_memory_chain.yaml`, with its
  `memory_length` (100: ours `envs.make("gymnax/MemoryChain-bsuite", memory_length=100)`,
  purejaxql's `EnvParams(memory_length=100)`), for `--memory-timesteps` (purejaxql's 100,000).

Mapping, purejaxql's yaml -> ours (`value_based.pqn_purejaxql_made`, as the MinAtar parts):
NUM_ENVS -> num_envs; NUM_STEPS -> num_steps; NUM_MINIBATCHES -> num_minibatches (purejaxql
splits the environments, each minibatch whole sequences of NUM_ENVS / NUM_MINIBATCHES envs, as
ours does with memory); NUM_EPOCHS -> update_epochs; HIDDEN_SIZE x NUM_LAYERS -> hidden_sizes
(LayerNorm and relu after each, NORM_TYPE layer_norm -> layer_norm) and HIDDEN_SIZE ->
recurrent_size (purejaxql's GRU has HIDDEN_SIZE units), recurrent "gru"; LR -> learning_rate;
LR_LINEAR_DECAY -> anneal_lr; MAX_GRAD_NORM -> max_grad_norm (global norm on both sides);
REW_SCALE -> reward_scale; GAMMA -> gamma; LAMBDA -> q_lambda; EPS_START / EPS_FINISH /
EPS_DECAY -> start_e / end_e / exploration_fraction. TOTAL_TIMESTEPS and TOTAL_TIMESTEPS_DECAY
are both the part's budget, so epsilon and the step size decay over the run on both sides.

Differences that remain (purejaxql's code fixes them): its optimiser is RAdam (ours Adam), its
step size decays per gradient step (ours per update); its targets are recomputed inside each
minibatch step by the network being trained (ours once per update, by the network that
collected the rollout); its sequences are NUM_STEPS + MEMORY_WINDOW (4) steps long, the first
four from the previous rollout, re-run from the memory stored when they were collected, and the
last step of each is not regressed (it only bootstraps); it feeds the last action (one-hot) to
the GRU beside the hidden layers' output; its network holds a BatchNorm layer whose output is
not used (NORM_INPUT False); its kernels start lecun-normal (ours orthogonal, gain sqrt(2));
its `done` (terminated | truncated) ends the bootstrap, so CartPole's 500-step limit is
treated as terminal (ours bootstraps a truncation from its true last observation under the
memory of that step); before training it steps every env NUM_STEPS + MEMORY_WINDOW times at
random to fill its first window (2,176 env steps per seed on both tasks, done by its timed
call and not counted in its env steps/s). purejaxql's GRU initialises its recurrent kernel
orthogonally inside the vmapped `train`, a batched QR that can deadlock XLA's CPU thread pool
(docs/design.md section 7); here that initialiser runs once per seed
(`rl2.mapped_orthogonal`: the same values), through the module's `nn` name; its file is
otherwise run unmodified (`value_based.load_purejaxql`, with `PureJaxQLLog` for its
`LogWrapper`, the name it imports).

Measured as value_based's parts (`value_based.bench`): for each N of `--seeds`, both sides
train N seeds in one vmapped call (`jit(vmap(make_train(config)))` of raw keys on purejaxql's
side, TEST_DURING_TRAINING off, wandb disabled), first with compilation, then `--repeats`
compile-free calls (the best kept); env steps/s of the compile-free call, all seeds together.
Returns at equal env steps: the train return (the mean return of the episodes that ended in
each of the last 10% of updates, purejaxql's from its info averaged over each rollout), and a
greedy evaluation of `--eval-episodes` per seed through our evaluator on our environment, both
sides' policies with their memory (purejaxql's carry is its GRU state and the last action,
zeros at an episode's start). Readings: docs/benchmarks/pqn_rnn.md.

    python benchmarks/pqn_rnn.py                                  # CartPole, 1 and 8 seeds
    python benchmarks/pqn_rnn.py --algos pqn_rnn pqn_rnn_memory   # and MemoryChain
    python benchmarks/pqn_rnn.py --seeds 1 8 64 --cartpole-timesteps 500000   # on a GPU
"""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import flax.linen as linen
import jax
import jax.numpy as jnp
import side_by_side
import tyro
import value_based
from report import check_args
from rl2 import mapped_orthogonal
from value_based import Anchor, Part

from rlsuite import envs
from rlsuite.loop.agent import config_dict

SCRIPT = "purejaxql/pqn_rnn_gymnax.py"
YAMLS = {
    "pqn_rnn": "purejaxql/config/alg/pqn_rnn_cartpole.yaml",
    "pqn_rnn_memory": "purejaxql/config/alg/pqn_rnn_memory_chain.yaml",
}
ALGOS = tuple(YAMLS)


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    """Flags of the recurrent PQN benchmark."""

    algos: list[str] = dataclasses.field(default_factory=lambda: ["pqn_rnn"])
    """Parts to run: pqn_rnn (CartPole-v1), pqn_rnn_memory (MemoryChain-bsuite)."""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of vmapped seeds (both sides vmap them)."""
    cartpole_timesteps: int = 100_000
    """Env steps per seed on CartPole (purejaxql's runs: 500,000)."""
    memory_timesteps: int = 100_000
    """Env steps per seed on MemoryChain (purejaxql's runs: 100,000)."""
    purejaxql_dir: Path = side_by_side.ROOT / "benchmarks/_anchors/purejaxql"
    """A copy of purejaxql's repository (benchmarks/README.md says how to fetch it)."""
    repeats: int = 1
    """Compile-free timed calls of each side after the first; the best is kept."""
    out: Path = Path("benchmarks/results/pqn_rnn.json")
    """Where the whole run's JSON goes."""


def purejaxql_rnn_anchor(args: Args, files: tuple[str, str], config: dict, num_actions) -> Anchor:
    """purejaxql's `make_train(config)` of `pqn_rnn_gymnax.py` vmapped over raw keys, its GRU's
    recurrent initialiser run once per seed (module docstring); its greedy policy with its
    carry `(GRU state, last action)` for our evaluator."""
    module = value_based.load_purejaxql(args.purejaxql_dir, files)
    cell = lambda size, **kw: linen.GRUCell(size, recurrent_kernel_init=mapped_orthogonal(), **kw)  # noqa: E731
    module.nn = types.SimpleNamespace(**{**vars(linen), "GRUCell": cell})
    network = module.RNNQNetwork(
        action_dim=num_actions,
        hidden_size=config["HIDDEN_SIZE"],
        num_layers=config["NUM_LAYERS"],
        norm_type=config["NORM_TYPE"],
        norm_input=config.get("NORM_INPUT", False),
    )

    def initial(num_envs: int):
        return network.initialize_carry(num_envs), jnp.zeros((num_envs,), jnp.int32)

    def act(variables, key, obs, carry):
        hidden, last_action = carry
        obs = obs.reshape(1, obs.shape[0], -1)  # its FlattenObservationWrapper, one time step
        done = jnp.zeros(obs.shape[:2], bool)
        hidden, q = network.apply(variables, hidden, obs, done, last_action[None], train=False)
        action = jnp.argmax(q[0], axis=-1).astype(jnp.int32)
        return action, (hidden, action)

    return Anchor(
        label="purejaxql",
        train=jax.jit(jax.vmap(module.make_train(dict(config)))),
        curve=value_based.purejaxql_curve,
        params=value_based.purejaxql_variables,
        act=act,
        version=value_based.purejaxql_version(args.purejaxql_dir, files),
        initial=initial,
    )


def rnn_part(args: Args, algo: str) -> Part:
    """Ours with a GRU beside purejaxql's PQN-RNN at the yaml of `algo` (module docstring)."""
    timesteps = args.cartpole_timesteps if algo == "pqn_rnn" else args.memory_timesteps
    files = (SCRIPT, YAMLS[algo])
    pjq = value_based.purejaxql_yaml(args.purejaxql_dir, files[1], timesteps)
    env, env_params = envs.make(f"gymnax/{pjq['ENV_NAME']}", **(pjq.get("ENV_KWARGS") or {}))
    network = dict(
        hidden_sizes=(pjq["HIDDEN_SIZE"],) * pjq["NUM_LAYERS"],
        layer_norm=pjq["NORM_TYPE"] == "layer_norm",
        recurrent="gru",
        recurrent_size=pjq["HIDDEN_SIZE"],
    )
    agent, hp = value_based.pqn_purejaxql_made(pjq, env, env_params, **network)
    mapping = {
        "ours_config": config_dict(agent.config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        "purejaxql_config": pjq,
    }
    num_actions = int(env.action_space(env_params).n)
    anchors = {"purejaxql": purejaxql_rnn_anchor(args, files, pjq, num_actions)}
    name = f"gymnax/{pjq['ENV_NAME']}, PQN with a GRU"
    return Part(name, env, env_params, agent, hp, anchors, mapping, None)


def main(args: Args) -> dict:
    check_args(args, choices={"algos": ALGOS})
    parts = {algo: rnn_part(args, algo) for algo in args.algos}  # checked before the first runs
    return value_based.run(args, parts)


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each part beside purejaxql (`value_based.tables`'), from the
    JSON `main` writes (on the recurrent PQN benchmark page and PQN's)."""
    return value_based.tables(result)


if __name__ == "__main__":
    main(tyro.cli(Args))
