#!/usr/bin/env bash
# The GPU figures in one command, run from the repository root on a GPU machine with the wheels of
# benchmarks/device_wheels.sh in .whl/ (benchmarks/README.md, "On a GPU"):
#
#   1. ant      benchmarks/ppo.py --ant-seeds 1: PPO at brax's published Ant configuration (MJX),
#               ours and brax.training, wall time to an evaluation return of 6,000 (compilation
#               included) and env steps per second; 95 s per side at most.
#   2. hopper   benchmarks/off_policy.py --hopper-seeds 1: SAC at brax's published hopper
#               configuration (MJX), ours and brax.training, the evaluation return reached in 60 s
#               per side (compilation included) and env steps per second.
#   3. offline  benchmarks/offline.py: gradient updates per second of IQL, CQL, TD3+BC, BC, CSVE
#               and SAQ (5,000 updates per call, batch 256).
#
# and, only when named in RLSUITE_DEVICE_PARTS (each needs about a device call of its own):
#
#   table-hopper, table-walker2d, table-halfcheetah
#               experiments/offline.py on brax/<env> (MJX): a SAC behaviour policy at brax's
#               hopper configuration, medium / medium-replay / medium-expert datasets, and the
#               normalised scores of BC, TD3+BC, CQL and IQL, 5 vmapped seeds each; 560 s at most.
#   rl2-cheetah benchmarks/rl2_device.py: RL^2-PPO on meta/cheetah_velocity (MJX), 4 vmapped seeds,
#               RLSUITE_DEVICE_RL2_SECONDS (default 300) of training; episode 1 and 2 returns and
#               |v - v*| on 64 held-out targets against env steps; passes where episode 2 beats
#               episode 1 (paired bootstrap interval above 0). Its limit: the budget + 210 s.
#   ued-maze    benchmarks/ued_device.py: our DR and Robust PLR on the 13 x 13 maze at
#               jaxued's configuration (32 x 256 steps, LSTM 256, MaxMC, replay 0.8, buffer 4,000),
#               4 vmapped seeds each, RLSUITE_DEVICE_UED_SECONDS (default 90) of training per
#               method; solve rate on the eight held-out mazes (10 sampled attempts) against env
#               steps, and env steps/s. Its limit: 2 x the budget + 240 s.
#   ued-maze-b  the same for ACCEL and PAIRED.
#   crl-ant     benchmarks/crl_device.py: CRL on goal/ant (MJX), 1,024 envs, batch 256, 1:16
#               updates to data, symmetric InfoNCE, norm energy, towards 10 million env steps,
#               stopped at RLSUITE_DEVICE_CRL_SECONDS (default 540) from its start, compilation
#               included; success_any and time near the goal at the end. Limit: the budget + 50 s.
#   ued-maze-jaxued  jaxued 0.0.1's maze_dr.py, maze_plr.py (Robust PLR, ACCEL) and
#               maze_paired.py, one seed each, RLSUITE_DEVICE_UED_JAXUED_UPDATES (default 100)
#               updates at the same sizes: their env steps/s (needs benchmarks/_anchors/jaxued/,
#               benchmarks/README.md, carried to the device, and jaxued 0.0.1 as a wheel). The
#               summary merges the three UED parts' figures into one table. Limit: 420 s.
#   scaling-ant benchmarks/scaling_device.py: PPO on brax/ant (MJX), one run, its env batch at
#               1,024, 4,096, 16,384 and 65,536 envs (16 steps per env per update): training env
#               steps/s (compilation excluded) beside the raw simulator's rate (step_batch with
#               random actions) and the share training keeps (goal >= 0.5). Sizes stop starting
#               at RLSUITE_DEVICE_SCALING_SECONDS (default 480) from its start. Limit: the
#               budget + 60 s.
#   pqn-minatar benchmarks/value_based.py --algos pqn_minatar pqn_minatar_mlp: PQN on MinAtar
#               Breakout at purejaxql's MinAtar configuration, ours beside purejaxql's
#               pqn_minatar.py (convolutional) and beside rejax's PQN (an MLP on both sides),
#               RLSUITE_DEVICE_PQN_SEEDS vmapped seeds (default "1 64") of
#               RLSUITE_DEVICE_PQN_STEPS env steps each (default 2,000,000): env steps/s and the
#               return reached (needs benchmarks/_anchors/purejaxql/, benchmarks/README.md,
#               carried to the device, and rejax 0.1.3 as a wheel). Limit: 540 s.
#   playground-cartpole  benchmarks/ppo.py --brax-env playground/CartpoleBalance: PPO on MuJoCo
#               Playground's CartpoleBalance (MJX, impl jax), ours beside brax.training's PPO
#               on Playground's own environment behind its wrapper, at Playground's published
#               DM Control geometry (2,048 envs, unrolls of 30, 32 minibatches, 16 epochs, lr
#               1e-3; one unroll per env per update, where its batch_size 1,024 takes 16),
#               RLSUITE_DEVICE_PLAYGROUND_UPDATES updates (default 40: 2,457,600 env steps per
#               seed), seeds 1 and 8: env steps/s and the evaluation return. Limit: 540 s.
#   ada-maze    benchmarks/ada.py: a curriculum over meta/maze tasks (walls up to 0.4), PLR beside
#               DR at the tuned ued entry's geometry, 5 vmapped seeds of
#               RLSUITE_DEVICE_ADA_STEPS env steps each (default 10,000,000, 9x the CPU's run):
#               the held-out trial return, PLR - DR paired, the adaptation curve. Limit: 540 s.
#   lpo-cartpole  benchmarks/lpo.py --populations 64 256: LPO's meta-training throughput on
#               CartPole at the tuned entry's inner runs, a generation of 65 and of 257 whole PPO
#               runs vmapped beside the same runs one at a time, RLSUITE_DEVICE_LPO_GENERATIONS
#               timed generations (default 2): inner env steps/s and the ratio (needs evosax
#               0.3.2 as a wheel). Limit: 540 s.
#
# Each part runs under `timeout` (250 + 180 + 60 s), so the whole command, the install of the
# wheels included, ends within about 8.5 minutes. Writes to $OUT (default
# benchmarks/results/device): env.txt, <part>.log and <part>.json for each part (7 files); ends
# with the tables of all parts.
#
#     bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=ant RLSUITE_DEVICE_ANT_SECONDS=200 bash benchmarks/device.sh
#     RLSUITE_DEVICE_TINY=1 OUT=/tmp/devout bash benchmarks/device.sh   # every part tiny, on a CPU
#
#     RLSUITE_DEVICE_PARTS=table-hopper bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=rl2-cheetah bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=ued-maze bash benchmarks/device.sh      # then ued-maze-b, then
#     RLSUITE_DEVICE_PARTS=ued-maze-jaxued bash benchmarks/device.sh  # (each under 10 minutes)
#     RLSUITE_DEVICE_PARTS=crl-ant bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=scaling-ant bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=pqn-minatar bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=playground-cartpole bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=ada-maze bash benchmarks/device.sh
#     RLSUITE_DEVICE_PARTS=lpo-cartpole bash benchmarks/device.sh
#
# Environment: OUT; PYTHON (default python3); RLSUITE_DEVICE_PARTS (default "ant hopper offline",
# the parts to run); RLSUITE_DEVICE_ANT_SECONDS and RLSUITE_DEVICE_HOPPER_SECONDS (whole seconds
# per side, default 95 and 60; the parts' limits follow); RLSUITE_DEVICE_TABLE_STEPS (the
# behaviour policy's env steps, default 262,144) and RLSUITE_DEVICE_TABLE_UPDATES (offline
# gradient steps per run, in hundreds, default 100); RLSUITE_DEVICE_UED_SECONDS (training
# seconds per UED method, default 90); RLSUITE_DEVICE_UED_JAXUED_UPDATES (updates per jaxued
# script, default 100); RLSUITE_DEVICE_CRL_SECONDS (the CRL part's budget from its start, default
# 540); RLSUITE_DEVICE_SCALING_SECONDS (the time after which the scaling part starts no new
# size, default 480) and RLSUITE_DEVICE_SCALING_ENVS (its env batches, default "1024 4096 16384
# 65536": a second call for sizes the first skipped); RLSUITE_DEVICE_PQN_SEEDS and
# RLSUITE_DEVICE_PQN_STEPS (the PQN part's seed counts and env steps per seed);
# RLSUITE_DEVICE_ADA_STEPS (the curriculum part's env steps per seed);
# RLSUITE_DEVICE_LPO_GENERATIONS (the LPO part's timed generations);
# RLSUITE_DEVICE_TINY=1 (tiny sizes and CPU-sized limits, to
# check the orchestration). The wheels are installed only where PYTHON is CPython 3.12 (what they
# are built for).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-benchmarks/results/device}
PARTS=${RLSUITE_DEVICE_PARTS:-ant hopper offline}
TINY=${RLSUITE_DEVICE_TINY:-0}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
start=$SECONDS

# The package as it installs (envs/ inside rlsuite/, as rlsuite.envs), first on the path.
PKG=$(mktemp -d /tmp/rlsuite-pkg.XXXXXX)
cp -r rlsuite "$PKG/rlsuite" && cp -r envs "$PKG/rlsuite/envs" || exit 1

is_312() { "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))'; }
if compgen -G ".whl/*.whl" >/dev/null && is_312; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PKG:$PWD
  echo "installed $(ls .whl/*.whl | wc -l) wheels from .whl/ in $((SECONDS - start)) s"
else
  echo "no wheels installed (none in .whl/, or $PYTHON is not CPython 3.12)"
  export PYTHONPATH=$PKG:$PWD${PYTHONPATH:+:$PYTHONPATH}
fi

{
  date -u
  nvidia-smi || echo "nvidia-smi: not available"
  "$PYTHON" - <<'EOF'
import importlib.metadata
import platform

import jax

print("python", platform.python_version(), platform.platform())
names = ("jax", "jaxlib", "jax-cuda13-plugin", "flax", "optax", "chex", "orbax-checkpoint", "numpy")
names += ("brax", "mujoco", "mujoco-mjx", "distrax", "gymnax", "tyro", "rich", "h5py")
for name in names:
    try:
        print(f"{name} {importlib.metadata.version(name)}")
    except importlib.metadata.PackageNotFoundError:
        print(f"{name} -")
print("jax backend", jax.default_backend(), jax.devices())
EOF
} 2>&1 | tee "$OUT/env.txt"

if [ "$TINY" = 1 ]; then
  ANT_LIMIT=600 HOPPER_LIMIT=600 OFFLINE_LIMIT=300
  ANT=(--ant-num-envs 64 --ant-num-steps 10 --ant-num-minibatches 4 --ant-update-epochs 2
    --ant-updates-per-eval 2 --ant-eval-episodes 8 --ant-episode-length 100
    --ant-total-timesteps 1000000 --ant-max-seconds 150)
  HOPPER=(--hopper-num-envs 16 --hopper-batch-size 64 --hopper-grad-updates-per-step 4
    --hopper-min-replay-size 128 --hopper-max-replay-size 20000 --hopper-total-timesteps 20000
    --hopper-eval-every 256 --hopper-eval-episodes 8 --hopper-episode-length 100
    --hopper-hidden-sizes 64 64 --hopper-budget-seconds 150)
  OFFLINE=(--updates 200 --gradient-steps 100 --repeats 1 --dataset-size 10000)
  TABLE_LIMIT=1200
  TABLE=(--behaviour-timesteps 16384 --episode-length 100 --size 1000 --num-updates 2
    --gradient-steps 10 --hidden-sizes 32 32 --num-seeds 2 --eval-episodes 2)
  RL2_LIMIT=1200
  RL2=(--budget-seconds 30 --num-envs 4 --num-steps 10 --num-minibatches 2 --eval-trials 8
    --max-steps 20 --eval-every-seconds 10)
  UED_LIMIT=900 UED_JAXUED_LIMIT=900
  UED=(--budget-seconds 10 --num-envs 4 --num-steps 16 --recurrent-size 16 --buffer-capacity 64
    --eval-attempts 1 --seeds 2 --eval-every-seconds 5)
  UED_JAXUED=(--no-ours --jaxued-updates 4 --num-envs 4 --num-steps 16 --recurrent-size 16
    --buffer-capacity 64)
  CRL_LIMIT=900
  CRL=(--env-steps 4096 --num-envs 8 --batch-size 16 --gradient-steps 1 --buffer-size 16384
    --learning-starts 256 --updates-per-chunk 64 --eval-episodes 2 --max-eval-steps 50)
  SCALING_LIMIT=900
  SCALING=(--num-envs 8 16 --num-steps 4 --num-minibatches 2 --update-epochs 1
    --chunk-env-steps 64 --seconds-per-size 0 --raw-seconds 0 --budget-seconds 600)
  PQN_LIMIT=900
  PQN=(--seeds 1 2 --minatar-timesteps 8192 --eval-episodes 2)
  PLAYGROUND_LIMIT=900
  PLAYGROUND=(--brax-seeds 1 --brax-num-envs 8 --brax-num-steps 10 --brax-num-minibatches 2
    --brax-update-epochs 1 --brax-updates 4 --brax-epochs 2 --eval-episodes 1)
  ADA_LIMIT=900
  ADA=(--seeds 2 --total-timesteps 7680 --attempts 2)
  LPO_LIMIT=900
  LPO=(--populations 2 --generations 1)
else
  # Each side stops at its first evaluation past its budget; a part's limit adds 60 s for the
  # process, imports, env set-up and those last chunks.
  ANT_SECONDS=${RLSUITE_DEVICE_ANT_SECONDS:-95}
  HOPPER_SECONDS=${RLSUITE_DEVICE_HOPPER_SECONDS:-60}
  ANT_LIMIT=$((2 * ANT_SECONDS + 60)) HOPPER_LIMIT=$((2 * HOPPER_SECONDS + 60)) OFFLINE_LIMIT=60
  ANT=(--ant-max-seconds "$ANT_SECONDS")
  HOPPER=(--hopper-budget-seconds "$HOPPER_SECONDS")
  OFFLINE=(--updates 5000 --gradient-steps 1000 --repeats 1)
  # Sizes not yet measured on a GPU: the behaviour budget is what the hopper part's env steps per
  # second suggest fits; every dataset holds 100,000 transitions (medium-replay: the medium run).
  TABLE_LIMIT=560
  TABLE=(--behaviour-timesteps "${RLSUITE_DEVICE_TABLE_STEPS:-262144}" --size 100000
    --record-envs 100 --num-updates "${RLSUITE_DEVICE_TABLE_UPDATES:-100}" --gradient-steps 100
    --hidden-sizes 256 256 --num-seeds 5 --eval-episodes 10)
  RL2_SECONDS=${RLSUITE_DEVICE_RL2_SECONDS:-300}
  RL2_LIMIT=$((RL2_SECONDS + 210))
  RL2=(--budget-seconds "$RL2_SECONDS")
  UED_SECONDS=${RLSUITE_DEVICE_UED_SECONDS:-90}
  UED_LIMIT=$((2 * UED_SECONDS + 240)) UED_JAXUED_LIMIT=420
  UED=(--budget-seconds "$UED_SECONDS")
  UED_JAXUED=(--no-ours --jaxued-updates "${RLSUITE_DEVICE_UED_JAXUED_UPDATES:-100}")
  CRL_SECONDS=${RLSUITE_DEVICE_CRL_SECONDS:-540}
  CRL_LIMIT=$((CRL_SECONDS + 50))
  CRL=(--budget-seconds "$CRL_SECONDS")
  SCALING_SECONDS=${RLSUITE_DEVICE_SCALING_SECONDS:-480}
  SCALING_LIMIT=$((SCALING_SECONDS + 60))
  SCALING=(--budget-seconds "$SCALING_SECONDS"
    --num-envs ${RLSUITE_DEVICE_SCALING_ENVS:-1024 4096 16384 65536})
  PQN_LIMIT=540
  PQN=(--seeds ${RLSUITE_DEVICE_PQN_SEEDS:-1 64}
    --minatar-timesteps "${RLSUITE_DEVICE_PQN_STEPS:-2000000}")
  PLAYGROUND_LIMIT=540
  PLAYGROUND=(--brax-seeds 1 8 --brax-num-envs 2048 --brax-num-steps 30
    --brax-num-minibatches 32 --brax-update-epochs 16 --brax-learning-rate 1e-3
    --brax-updates "${RLSUITE_DEVICE_PLAYGROUND_UPDATES:-40}" --brax-epochs 4)
  ADA_LIMIT=540
  ADA=(--seeds 5 --total-timesteps "${RLSUITE_DEVICE_ADA_STEPS:-10000000}")
  LPO_LIMIT=540
  LPO=(--populations 64 256 --generations "${RLSUITE_DEVICE_LPO_GENERATIONS:-2}")
fi

# part NAME LIMIT COMMAND...: run COMMAND under `timeout LIMIT`, its output in $OUT/NAME.log.
status=()
part() {
  local name=$1 limit=$2
  shift 2
  case " $PARTS " in *" $name "*) ;; *) return ;; esac
  echo
  echo "=== $name (at most ${limit} s; $((SECONDS - start)) s so far)"
  local t=$SECONDS
  timeout -k 10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  status+=("$name: exit $rc in $((SECONDS - t)) s$([ "$rc" = 124 ] && echo ' (time limit)')")
}

part ant "$ANT_LIMIT" "$PYTHON" benchmarks/ppo.py --no-cartpole --no-brax --no-markdown \
  --ant-seeds 1 "${ANT[@]}" --out "$OUT/ant.json"
part hopper "$HOPPER_LIMIT" "$PYTHON" benchmarks/off_policy.py --algos --no-brax --no-markdown \
  --hopper-seeds 1 "${HOPPER[@]}" --out "$OUT/hopper.json"
part offline "$OFFLINE_LIMIT" "$PYTHON" benchmarks/offline.py "${OFFLINE[@]}" \
  --out "$OUT/offline.json"
for env in hopper walker2d halfcheetah; do
  part "table-$env" "$TABLE_LIMIT" "$PYTHON" experiments/offline.py --env "brax/$env" \
    --qualities medium medium-replay medium-expert "${TABLE[@]}" --out "$OUT/table-$env.json"
done
part rl2-cheetah "$RL2_LIMIT" "$PYTHON" benchmarks/rl2_device.py "${RL2[@]}" \
  --out "$OUT/rl2-cheetah.json"
part ued-maze "$UED_LIMIT" "$PYTHON" benchmarks/ued_device.py "${UED[@]}" \
  --methods dr robust_plr --out "$OUT/ued-maze.json"
part ued-maze-b "$UED_LIMIT" "$PYTHON" benchmarks/ued_device.py "${UED[@]}" \
  --methods accel paired --out "$OUT/ued-maze-b.json"
part ued-maze-jaxued "$UED_JAXUED_LIMIT" "$PYTHON" benchmarks/ued_device.py "${UED_JAXUED[@]}" \
  --out "$OUT/ued-maze-jaxued.json"
part crl-ant "$CRL_LIMIT" "$PYTHON" benchmarks/crl_device.py "${CRL[@]}" --out "$OUT/crl-ant.json"
part scaling-ant "$SCALING_LIMIT" "$PYTHON" benchmarks/scaling_device.py "${SCALING[@]}" \
  --out "$OUT/scaling-ant.json"
part pqn-minatar "$PQN_LIMIT" "$PYTHON" benchmarks/value_based.py --no-markdown \
  --algos pqn_minatar pqn_minatar_mlp "${PQN[@]}" --out "$OUT/pqn-minatar.json"
part playground-cartpole "$PLAYGROUND_LIMIT" "$PYTHON" benchmarks/ppo.py --no-cartpole \
  --no-markdown --brax-env playground/CartpoleBalance "${PLAYGROUND[@]}" \
  --out "$OUT/playground-cartpole.json"
part ada-maze "$ADA_LIMIT" "$PYTHON" benchmarks/ada.py --no-markdown --curricula plr "${ADA[@]}" \
  --out "$OUT/ada-maze.json"
part lpo-cartpole "$LPO_LIMIT" "$PYTHON" benchmarks/lpo.py --no-markdown "${LPO[@]}" \
  --out "$OUT/lpo-cartpole.json"

echo
echo "=== summary ($((SECONDS - start)) s in all)"
printf '%s\n' "${status[@]}"
"$PYTHON" - "$OUT" $PARTS <<'EOF'
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, "benchmarks")
from report import markdown  # noqa: E402
from side_by_side import curve_table  # noqa: E402

out, parts = Path(sys.argv[1]), sys.argv[2:]
for name in parts:
    path = out / f"{name}.json"
    if not path.exists():
        print(f"\n{name}: no {path}")
        continue
    data = json.loads(path.read_text())
    partial = " (partial: the part was stopped)" if data.get("partial") else ""
    print(f"\n{name}{partial}\n")
    if name in ("crl-ant", "scaling-ant"):
        from importlib import import_module

        table = import_module("crl_device" if name == "crl-ant" else "scaling_device").table

        title, header, body = table(data)
        print(f"**{title}**\n\n{markdown(header, body)}\n")
        continue
    if name in ("rl2-cheetah", "ued-maze", "ued-maze-b", "ued-maze-jaxued"):
        from importlib import import_module

        module = import_module("rl2_device" if name == "rl2-cheetah" else "ued_device")
        if name.startswith("ued-maze"):  # the UED parts' figures in one table, where present
            found = [out / f"{p}.json" for p in ("ued-maze", "ued-maze-b", "ued-maze-jaxued")]
            data = module.merge(*(json.loads(f.read_text()) for f in found if f.exists()))
        for title, header, body in module.tables(data):
            print(f"**{title}**\n\n{markdown(header, body)}\n")
        continue
    if name == "pqn-minatar":
        from side_by_side import comparison_table

        for algo in ("pqn_minatar", "pqn_minatar_mlp"):
            rows = data.get(algo) or []
            for key in (k for k in (rows[0] if rows else {}) if k.startswith("ours_over_")):
                anchor = key.removeprefix("ours_over_")
                header, body = comparison_table(rows, anchor, anchor, None)
                print(f"**{rows[0]['env']}: ours vs {anchor}**\n\n{markdown(header, body)}\n")
        continue
    if name.startswith("table-"):
        algos = data["args"]["algos"]
        cells = [
            [quality] + [f"{np.mean(s[a]):.1f} ± {np.std(s[a]):.1f}" if a in s else "-" for a in algos]
            for quality, s in data["scores"].items()
        ]
        print(markdown(["dataset", *algos], cells) if cells else "no scores")
        print(f"\nreference: {data.get('reference')}")
        print(f"datasets: {data['datasets']}\nseconds: {data['seconds']}")
        continue
    if name == "lpo-cartpole":
        from lpo import tables

        for title, header, body in tables(data):
            print(f"**{title}**\n\n{markdown(header, body)}\n")
        continue
    if name == "ada-maze":
        from ada import tables

        for title, header, body in tables(data):
            print(f"**{title}**\n\n{markdown(header, body)}\n")
        continue
    if name == "playground-cartpole":
        from side_by_side import brax_table

        rows = data.get("brax") or []
        if not rows:
            print("no rows")
            continue
        title, header, body = brax_table(rows)
        print(f"**{title}**\n\n{markdown(header, body)}\n")
        continue
    key = "rows" if name == "offline" else name
    rows = [row for row in data.get(key) or [] if key == "rows" or "ours" in row]
    if not rows:
        print("no rows")
    elif key == "rows":
        header = list(dict.fromkeys(k for row in rows for k in row))
        print(markdown(header, [[str(row.get(k, "-")) for k in header] for row in rows]))
    else:
        print(markdown(*curve_table(rows, "brax.training", rows[0]["threshold"])))
EOF
