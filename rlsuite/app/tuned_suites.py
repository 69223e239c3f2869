"""Tuned entries of the suites (`rlsuite.app.tuned` joins them to its own table): MinAtar,
the meta-RL task families, UED, the goal tasks, MuJoCo Playground, Craftax, Jumanji and
XLand-MiniGrid. Each entry says where it comes from and what it reached on the CI machine."""

from __future__ import annotations

# RL^2 on the MJX task families at a CPU's budget (their entries below say what each reached).
_MJX_RL2: dict[str, dict] = {
    "config": {
        "num_envs": 32,
        "num_steps": 50,
        "update_epochs": 4,
        "num_minibatches": 4,
        "hidden_sizes": (128,),
        "recurrent_size": 128,
        "normalize_observations": True,
        "scale_rewards": True,
        "total_timesteps": 300 * 32 * 50,
    },
    "hparams": {"learning_rate": 3e-4, "ent_coef": 0.001},
}

# PPO and SAC on MuJoCo Playground's DM Control suite at a CPU's budget (the entries below).
_PLAYGROUND_PPO: dict[str, dict] = {
    "config": {
        "num_envs": 64,
        "num_steps": 32,
        "num_minibatches": 8,
        "update_epochs": 8,
        "normalize_observations": True,
        "scale_rewards": True,
    },
    "hparams": {"learning_rate": 1e-3, "gamma": 0.995, "ent_coef": 0.01},
}
_PLAYGROUND_SAC: dict = {
    "num_envs": 4,
    "gradient_steps": 4,
    "batch_size": 256,
    "hidden_sizes": (256, 256),
    "learning_starts": 5_000,
}

# Jumanji's Knapsack and BinPack (vectors, masks): 128 envs x 32 steps, (256, 256), lr 1e-3.
# purejaxql's pqn_minatar.yaml (below): 128 envs x 32 steps, 2 epochs of 32 minibatches, lr 5e-4
# decayed linearly, epsilon 1 -> 0.05 over 10% of the run, lambda 0.65, rewards unscaled; one
# hidden layer of 128 with LayerNorm.
_PQN_MINATAR = {
    "config": {
        "num_envs": 128,
        "num_steps": 32,
        "num_minibatches": 32,
        "update_epochs": 2,
        "hidden_sizes": (128,),
    },
    "hparams": {
        "learning_rate": 5e-4,
        "end_e": 0.05,
        "exploration_fraction": 0.1,
        "q_lambda": 0.65,
        "reward_scale": 1.0,
    },
}

_JUMANJI_PPO = {
    "config": {"num_envs": 128, "num_steps": 32, "num_minibatches": 4, "hidden_sizes": (256, 256)},
    "hparams": {"learning_rate": 1e-3},
}


def _ued_tasks(num_envs: int, num_steps: int, updates: int) -> dict:
    """UED's RL^2 student on a task family's tasks (rl2's meta/maze entry's PPO: 4 epochs of 4
    minibatches, one hidden layer of 64, LSTM-64, lr 1e-3, entropy 0.01, gamma 0.99, lambda
    0.95), a buffer of 1,000 tasks, `updates` updates of `num_envs` x `num_steps`."""
    config = {"num_envs": num_envs, "num_steps": num_steps, "update_epochs": 4}
    config.update(num_minibatches=4, hidden_sizes=(64,), recurrent_size=64, buffer_capacity=1_000)
    config["total_timesteps"] = updates * num_envs * num_steps
    hparams = {"learning_rate": 1e-3, "ent_coef": 0.01, "gamma": 0.99, "gae_lambda": 0.95}
    return {"config": config, "hparams": hparams}


MINATAR_GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")
_DQN_MINATAR = {
    "config": {
        "num_envs": 8,
        "gradient_steps": 2,
        "batch_size": 32,
        "buffer_size": 100_000,
        "learning_starts": 5_000,
        "target_update_period": 250,
        "hidden_sizes": (128,),
        "loss": "huber",
        "total_timesteps": 500_000,
        "init": "orthogonal",
    },
    "hparams": {
        "learning_rate": 2.5e-4,
        "end_e": 0.1,
        "exploration_fraction": 0.1,
        "max_grad_norm": 10.0,
    },
}
_DQN_MINATAR_HEADLESS = {k: v for k, v in _DQN_MINATAR["config"].items() if k != "loss"}


SUITES: dict[tuple[str, str], dict[str, dict]] = {
    # PQN on the five MinAtar games (gymnax): purejaxql's pqn_minatar.yaml, one configuration
    # for all (128 envs x 32 steps, 2 epochs of 32 minibatches, lr 5e-4 decayed linearly,
    # epsilon 1 -> 0.05 over 10% of the run, lambda 0.65, rewards unscaled; here the MinAtar
    # torso and one hidden layer of 128 with LayerNorm) at a CPU's budget of 1,000,000 env
    # steps (purejaxql's runs are 10,000,000: --total-timesteps 10000000 on a GPU). On the CI
    # machine, 2 seeds at 500,000 steps: Breakout, Space Invaders (tests/agents/test_pqn.py, slow).
    **{
        ("pqn", f"gymnax/{game}-MinAtar"): {
            "config": {**_PQN_MINATAR["config"], "total_timesteps": 1_000_000},
            "hparams": _PQN_MINATAR["hparams"],
        }
        for game in ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")
    },
    # DQN on the five MinAtar games (gymnax): Young and Tian's MinAtar DQN (arXiv:1903.03176:
    # the MinAtar network, batch 32, replay 100,000 after 5,000 random steps, a target copy
    # every 1,000 env steps, epsilon 1 -> 0.1, Huber loss, lr 2.5e-4; Adam here, RMSProp
    # there) with 8 envs and 2 gradient steps per collection (one per 4 env steps, Atari
    # DQN's ratio; theirs is one per step), double-Q, epsilon over the first 10% of a CPU's
    # budget of 500,000 env steps (theirs: 100,000 of 5,000,000), kernels orthogonal and
    # gradients clipped at a global norm of 10 (as calibrated). 2 seeds per game on the CI
    # machine (evaluation of 10 greedy episodes per seed; a uniformly random policy's return
    # per episode over 256 envs): Breakout 50.0 and 27.2 (random 0.41; 1,110 s beside another
    # run), Asterix 2.5 and 6.9 (0.48; 496 s), Freeway 41.5 and 54.7 (0.36; 1,028 s), Seaquest
    # 2.5 and 1.3 (0.09; 1,190 s), Space Invaders 133.0 and 22.0 (4.14; 623 s), the last four
    # with other work beside them. tests/agents/test_dqn.py (slow): Breakout at 200,000 steps.
    **{("dqn", f"gymnax/{game}-MinAtar"): _DQN_MINATAR for game in MINATAR_GAMES},
    # C51, QR-DQN and IQN on the five MinAtar games: DQN's entry above with each family's own
    # loss (DQN's Huber loss is the scalar head's) and its head's sizes: C51 51 atoms on
    # [-10, 10] (Dopamine's Atari support; MinAtar's rewards are at most 1 a step), QR-DQN 51
    # quantiles, IQN Dopamine's 64, 64 and 32 fractions. tests/agents/test_value_heads.py
    # (slow): Breakout at 200,000 steps.
    **{
        (algo, f"gymnax/{game}-MinAtar"): {
            "config": {**_DQN_MINATAR_HEADLESS, **sizes},
            "hparams": _DQN_MINATAR["hparams"],
        }
        for game in MINATAR_GAMES
        for algo, sizes in (
            ("c51", {"num_atoms": 51, "v_min": -10.0, "v_max": 10.0}),
            ("qrdqn", {"num_quantiles": 51}),
            ("iqn", {}),
        )
    },
    # RL^2 on Duan et al.'s bandits (k = 5, n = 10) with A2C (RL2Config's defaults: one epoch of
    # one minibatch, LSTM-64), 256 trials of 10 pulls per update, Adam 1e-3, 3,000 updates.
    # tests/agents/test_rl2.py asserts an evaluation total reward >= 5.84 (Thompson sampling's).
    ("rl2", "meta/bandit"): {
        "config": {"num_envs": 256, "num_steps": 10, "total_timesteps": 3_000 * 2_560},
        "hparams": {"learning_rate": 1e-3},
    },
    # The maze, 3 episodes of 20 steps per trial: 64 envs x 60 steps (one trial per env and
    # update), 4 epochs of 4 minibatches, one hidden layer of 64, 120 updates, lr 1e-3, entropy
    # 0.01. tests/agents/test_rl2.py (slow) asserts that the third episode of a trial returns more
    # than the first (the paired bootstrap interval of the difference above 0, 2,000 trials).
    # Before this entry, `rlsuite train rl2 --env meta/maze` ran RL2Config's own defaults.
    ("rl2", "meta/maze"): {
        "config": {
            "num_envs": 64,
            "num_steps": 60,
            "update_epochs": 4,
            "num_minibatches": 4,
            "hidden_sizes": (64,),
            "total_timesteps": 120 * 64 * 60,
        },
        "hparams": {"learning_rate": 1e-3, "ent_coef": 0.01},
    },
    # The point robot, 2 episodes of 20 steps per trial: 64 envs x 40 steps (one trial per env
    # and update), 4 epochs of 4 minibatches, one hidden layer of 64, LSTM-64, lr 1e-3, 1,500
    # updates (2 seeds in 2.3 minutes on 2 cores). Its trial return rises from -41 to -10.6 and
    # the second episode of a trial returns more than the first (-4.93 against -5.68, 2 seeds);
    # tests/agents/test_rl2.py (slow) asserts it with the paired bootstrap interval. RL2Config's own
    # defaults (A2C, 10-step rollouts) had left it at -35 after 300 updates.
    ("rl2", "meta/point_robot"): {
        "config": {
            "num_envs": 64,
            "num_steps": 40,
            "update_epochs": 4,
            "num_minibatches": 4,
            "hidden_sizes": (64,),
            "total_timesteps": 1_500 * 64 * 40,
        },
        "hparams": {"learning_rate": 1e-3},
    },
    # Duan et al.'s random tabular MDPs (10 states, 5 actions, 10 episodes of 10 steps per
    # trial): 64 envs x 100 steps (one trial per env and update), 4 epochs of 4 minibatches,
    # one hidden layer of 64, LSTM-128, lr 1e-3, rewards scaled by 0.1, the value loss
    # unclipped, 1,500 updates (one seed in 11 minutes on 2 cores). The trial's training return
    # rises from 100.1 (random's 99.78) to 117.1 over the last 100 updates; `rlsuite eval`
    # (500 greedy trials) gave 118.1, with later episodes of a trial returning more than the
    # first (10.5 -> 12.0), against the optimal policy's 218.3 (Duan et al. report 156.2 for
    # RL^2). RL2Config's own defaults left it at random's 100.
    # tests/agents/test_rl2.py (slow) asserts the gain over random at 400 updates.
    ("rl2", "meta/tabular_mdp"): {
        "config": {
            "num_envs": 64,
            "num_steps": 100,
            "update_epochs": 4,
            "num_minibatches": 4,
            "hidden_sizes": (64,),
            "recurrent_size": 128,
            "clip_value_loss": False,
            "total_timesteps": 1_500 * 64 * 100,
        },
        "hparams": {"learning_rate": 1e-3, "reward_scale": 0.1},
    },
    # Cheetah-velocity (MJX) at a CPU's budget: 32 trials x 50 steps per update (truncated
    # backpropagation through 50 of a trial's 400 steps), 4 epochs of 4 minibatches, one hidden
    # layer of 128, LSTM-128, observations normalised and rewards scaled, lr 3e-4, entropy
    # 0.001 (benchmarks/rl2_device.py's GPU recipe with 32 trials instead of 512), 300
    # updates, 480,000 env steps. One seed, 8.5 minutes on 2 cores beside another run: the
    # training return per trial rises from -670 to about -420; `rlsuite eval` (64 greedy
    # trials) gave -383 (episode 1 -201.6, episode 2 -181.7), where standing still earns about
    # -600 (|v*| averages 1.5 m/s over 400 steps). Learning to adapt to v* takes a GPU's
    # budget: benchmarks/device.sh part rl2-cheetah.
    ("rl2", "meta/cheetah_velocity"): _MJX_RL2,
    # Ant-direction (MJX) at a CPU's budget: the cheetah-velocity recipe with a tanh-squashed
    # Gaussian whose std is an output of the actor. With the unsquashed Gaussian (std 1 at the
    # start) the control cost of the first actions, about 2.4 per step, exceeds the healthy
    # reward of 1, and the ant learnt to fall sooner (episodes from about 55 steps to 22). With
    # the squashed one, 300 updates, 480,000 env steps (one seed, 133 s on 2 cores): a trial's
    # training return rises from -3 (trials of 33 of their 400 steps) to about 260-310 (trials
    # of 300-400 steps); `rlsuite eval` (64 greedy trials) gave 336.6 (episode 1 169.0, episode
    # 2 167.7). The ant learns to stay upright, not yet to walk: standing still (zero actions)
    # earns about 400 per trial, and 1,200 updates (1,920,000 env steps) plateaued at the same
    # training return. tests/agents/test_rl2.py (slow).
    ("rl2", "meta/ant_direction"): {
        "config": {**_MJX_RL2["config"], "distribution": "tanh_gaussian"},
        "hparams": _MJX_RL2["hparams"],
    },
    # gymnax's meta-A2C notebook's recipe: LSTM-48, 64 trials of 100 pulls, lr 0.005, gamma 0.8,
    # entropy weight 1.0 decayed by 0.999 per update to 0.01, gradient clip 5, 4,000 updates.
    ("rl2", "meta/two_arm_bandit"): {
        "config": {
            "recurrent_size": 48,
            "num_envs": 64,
            "num_steps": 100,
            "total_timesteps": 4_000 * 6_400,
        },
        "hparams": {
            "learning_rate": 0.005,
            "gamma": 0.8,
            "vf_coef": 0.5,
            "ent_coef": 1.0,
            "ent_decay": 0.999,
            "ent_coef_min": 0.01,
            "max_grad_norm": 5.0,
        },
    },
    # UED on the 13 x 13 maze: UEDConfig's and UEDHparams' defaults are jaxued's maze_plr.py
    # (LSTM 256, 32 levels x 256 steps, 5 epochs of 1 minibatch, lr 1e-4, gamma 0.995, lambda
    # 0.98, entropy 1e-3, buffer of 4,000, replay 0.8, temperature 0.3, staleness 0.3); its
    # 30,000 updates are a GPU's run.
    ("ued", "maze"): {"config": {"total_timesteps": 30_000 * 8_192}},
    # The CPU's task (7 x 7, 10 walls, horizon 196): 32 levels x 64 steps, LSTM 64, 500 updates;
    # tests/agents/test_ued.py asserts DR's and Robust PLR's solve rates on 256 held-out DR levels.
    # CRL on the 2-D point reach (64 envs, batch 256, 2 x 256 swish networks, representation
    # 64, norm energy, forward InfoNCE + 0.1 logsumexp penalty): one gradient step per 64 env
    # steps; tests/agents/test_crl.py: success_any >= 0.9 and >= 25 of 50 steps near the goal.
    ("crl", "goal/point_reach"): {"config": {"gradient_steps": 1, "total_timesteps": 64_000}},
    # SAC + HER on the same task and batch: 200,000 env steps; tests/agents/test_sac_her.py asserts
    # its calibrated floor.
    ("sac_her", "goal/point_reach"): {
        "config": {"num_envs": 64, "batch_size": 256, "total_timesteps": 200_000}
    },
    # A curriculum over meta-RL tasks (benchmarks/ada.py, docs/benchmarks/ada.md): the maze, 64
    # envs x 60 steps (a trial's longest), 300 updates, 5 seeds in 2 to 3 minutes on 2 cores
    # per curriculum; its held-out trial return 1.52 under DR, PLR's 0.15 below it.
    ("ued", "meta/maze"): _ued_tasks(num_envs=64, num_steps=60, updates=300),
    # The bandits (5 arms, 10 pulls a trial): 128 envs x 20 steps (two trials per env and
    # update), 500 updates; held-out trial return 5.50 under DR, PLR's 0.61 below it.
    ("ued", "meta/bandit"): _ued_tasks(num_envs=128, num_steps=20, updates=500),
    ("ued", "maze/small"): {
        "config": {
            "recurrent_size": 64,
            "hidden_sizes": (64,),
            "num_steps": 64,
            "buffer_capacity": 1_000,
            "total_timesteps": 500 * 2_048,
        },
        "hparams": {"learning_rate": 5e-4},
    },
    # MuJoCo Playground's DM Control suite at a CPU's budget. PPO: Playground's published
    # dm_control_suite_params.py (lr 1e-3, gamma 0.995, entropy 0.01, normalised observations,
    # scaled rewards) at 64 envs x 32 steps, 8 epochs of 8 minibatches; CartpoleBalance at 32 x
    # 64, 4 epochs, gamma 0.99, no entropy bonus. The random policy earns 379 (CartpoleBalance),
    # 3.1 (PendulumSwingup) and 3.1 (CheetahRun) per 1,000-step episode (16 episodes).
    # CartpoleBalance: 4 seeds evaluate 989.0, 999.0, 997.7, 997.2 in 51 s on the CI machine
    # (the training return passes 900 at about 320k steps); tests/topics/test_playground_learning.py
    # asserts >= 685 on every seed (379 + half the gain).
    ("ppo", "playground/CartpoleBalance"): {
        "config": {
            "num_envs": 32,
            "num_steps": 64,
            "num_minibatches": 8,
            "normalize_observations": True,
            "scale_rewards": True,
            "total_timesteps": 300 * 2_048,
        },
        "hparams": {"learning_rate": 1e-3, "ent_coef": 0.0},
    },
    # PendulumSwingup: 4 seeds evaluate 538.0, 656.0, 567.8 and 0.0 (that seed never found the
    # swing-up) at 4,096,000 env steps, 165 s.
    ("ppo", "playground/PendulumSwingup"): {
        "config": {**_PLAYGROUND_PPO["config"], "total_timesteps": 2_000 * 2_048},
        "hparams": _PLAYGROUND_PPO["hparams"],
    },
    # CheetahRun: 2 seeds evaluate 742.4 and 726.9 at 2,048,000 env steps (207 s beside another
    # run; the training return passes 440 at 700k steps and 600 at 1.5M).
    ("ppo", "playground/CheetahRun"): {
        "config": {**_PLAYGROUND_PPO["config"], "total_timesteps": 1_000 * 2_048},
        "hparams": _PLAYGROUND_PPO["hparams"],
    },
    # SAC: 4 envs, one gradient step of 256 per env step, (256, 256) networks, 5,000 random
    # steps first. CartpoleBalance: 2 seeds evaluate 895.4 and 998.7 at 30,000 env steps (224 s
    # beside another run).
    ("sac", "playground/CartpoleBalance"): {
        "config": {**_PLAYGROUND_SAC, "total_timesteps": 30_000},
        "hparams": {},
    },
    # CheetahRun: one seed evaluates 87.3 at 50,000 env steps (training return 78; 335 s beside
    # another run, 181 env steps/s): well above random, far from a runner (a GPU's budget).
    ("sac", "playground/CheetahRun"): {
        "config": {**_PLAYGROUND_SAC, "total_timesteps": 50_000},
        "hparams": {},
    },
    # PendulumSwingup: one seed's training return passes 700 at 56,000 env steps and stays
    # between 210 and 740 after (some starts it swings up late); evaluated over 8 episodes at
    # 100,000: 871.2 (406 s). tests/topics/test_playground_learning.py trains 3 seeds for 60,000.
    ("sac", "playground/PendulumSwingup"): {
        "config": {**_PLAYGROUND_SAC, "total_timesteps": 100_000},
        "hparams": {},
    },
    # The JAX suites behind adapters at a CPU's budget (tests/topics/test_suites_learning.py asserts
    # each above the random policy, uniform among the legal actions, by half the gain below).
    # Craftax-Classic (symbolic): PureJaxRL-sized PPO, 64 envs x 64 steps, 8 minibatches,
    # (256, 256), resets 8 at a time (a Craftax reset generates a world: 6x the env steps/s).
    # 2 seeds reach 5.4 achievements per episode in training at 500k env steps and 5.9 to 6.3
    # at 1M (276 s for both on the CI machine beside another run); the random policy unlocks
    # 2.67 (64 episodes). Craftax's PPO baseline trains 1B steps on a GPU.
    ("ppo", "craftax/Craftax-Classic-Symbolic-v1"): {
        "config": {
            "num_envs": 64,
            "num_steps": 64,
            "num_minibatches": 8,
            "hidden_sizes": (256, 256),
            "reset_slots": 8,
            "total_timesteps": 500_000,
        },
        "hparams": {"learning_rate": 3e-4},
    },
    # PQN on Craftax-Classic (symbolic): the MinAtar configuration (`_PQN_MINATAR`) with
    # (256, 256) and PPO's 8 reset slots. 2 seeds at 500k env steps unlock 5.1 and 4.9
    # achievements per episode (4.0 and 4.4 in training, epsilon 0.05; greedy 5.2 and 4.1),
    # against the random policy's 2.67, in 132 s on the CI machine (10,700 env steps/s after
    # 39 s of compiling). PQN's Craftax-1B entry (PQN-RNN) is a GPU's run with memory.
    ("pqn", "craftax/Craftax-Classic-Symbolic-v1"): {
        "config": {
            **_PQN_MINATAR["config"],
            "hidden_sizes": (256, 256),
            "reset_slots": 8,
            "total_timesteps": 500_000,
        },
        "hparams": _PQN_MINATAR["hparams"],
    },
    # Jumanji Knapsack (50 items, masks), `_JUMANJI_PPO`. 2 seeds
    # evaluate 19.4 and 19.4 at 3M env steps (208 s); the training return is 18.7 at 1.1M;
    # the random legal policy packs 13.47 (512 episodes). At ppo's own defaults (300k steps)
    # it stays at 13.8.
    ("ppo", "jumanji/Knapsack-v1"): {
        "config": {**_JUMANJI_PPO["config"], "total_timesteps": 1_000_000},
        "hparams": _JUMANJI_PPO["hparams"],
    },
    # PQN on Jumanji Knapsack (masks: explores, acts and bootstraps among the items that fit):
    # the MinAtar configuration above (`_PQN_MINATAR`), with the MLP. 2 seeds evaluate 17.8
    # and 17.6 at 1M env steps, in 18 s on the CI machine (203,000 env steps/s after 8 s of
    # compiling); the random legal policy packs 13.47.
    ("pqn", "jumanji/Knapsack-v1"): {
        "config": {**_PQN_MINATAR["config"], "total_timesteps": 1_000_000},
        "hparams": _PQN_MINATAR["hparams"],
    },
    # Jumanji BinPack (masks over 40 x 20 placements): PPO as on Knapsack. 2 seeds evaluate a
    # volume utilisation of 0.737 and 0.747 at 1M env steps (321 s beside another run);
    # training passes 0.70 at 500k; the random legal policy fills 0.581 (256 episodes).
    ("ppo", "jumanji/BinPack-v2"): {
        "config": {**_JUMANJI_PPO["config"], "total_timesteps": 600_000},
        "hparams": _JUMANJI_PPO["hparams"],
    },
    # MiniGrid DoorKey-5x5 (XLand-MiniGrid's view leaves out what the agent carries): a GRU of
    # 64 after a (64,) layer, 32 envs x 64 steps. 2 seeds pass a training return of 0.96 (the
    # goal in 10 steps) by 84k env steps and evaluate 1.0 at 500k; random: 0.03.
    ("ppo", "minigrid/MiniGrid-DoorKey-5x5"): {
        "config": {
            "num_envs": 32,
            "num_steps": 64,
            "num_minibatches": 4,
            "hidden_sizes": (64,),
            "recurrent": "gru",
            "recurrent_size": 64,
            "total_timesteps": 150_000,
        },
        "hparams": {"learning_rate": 1e-3},
    },
}
