"""`rlsuite report RUN`: one markdown page per run with its curve, evaluation, speed and
configuration, written from the run's files; bad input refused with nothing overwritten."""

import json
import shutil

import jax
import matplotlib.image
import numpy as np
import pytest
from rlsuite.envs import rendering

from rlsuite import envs
from tests.app.test_cli import rlsuite

TINY = ["ppo", "--env", "cartpole", "--total-timesteps", "2048", "--num-envs", "4"]
TINY += ["--num-steps", "16", "--num-minibatches", "2", "--hidden-sizes", "8", "--num-seeds", "2"]
TINY += ["--eval-episodes", "2", "--no-progress", "--log-interval", "64"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "run"
    proc = rlsuite("train", *TINY, "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_the_page_says_what_the_run_files_say(run, tmp_path):
    page = tmp_path / "page.md"
    proc = rlsuite("report", run, "--out", page)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = page.read_text()
    final = json.loads((run / "final.json").read_text())
    assert text.startswith("# ppo on cartpole\n")
    for heading in ("## Learning curve", "## Final evaluation", "## Speed", "## Configuration"):
        assert heading in text
    assert "![charts/episodic_return](page.curves.png)" in text
    # One row per seed and the mean, from final.json; the speed and the config's fields.
    for seed, value in enumerate(final["eval_return_per_seed"]):
        assert f"| {seed} | {value:.4g} |" in text
    assert f"| mean | {final['eval_return_mean']:.4g} |" in text
    assert f"| env_steps_per_second (after compiling) | {final['env_steps_per_second']} |" in text
    assert "| num_envs | 4 |" in text and "| hidden_sizes | [8] |" in text
    # The figure: a real image with a curve on it (not one colour).
    image = matplotlib.image.imread(tmp_path / "page.curves.png")
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert np.std(image[..., :3]) > 0.05
    # The first frame: the environment reset with the run's seed, drawn as rlsuite render draws.
    assert "## First frame\n\n![cartpole, first frame](page.environment.png)" in text
    env, params = envs.make("cartpole")
    _, state = env.reset(jax.random.key(json.loads((run / "config.json").read_text())["seed"]))
    expected = rendering.render_state(env, params, state)
    frame = matplotlib.image.imread(tmp_path / "page.environment.png")[..., :3]
    assert np.array_equal(np.round(frame * 255).astype(np.uint8), expected)


def test_an_unfinished_run_gets_its_page_without_an_evaluation(run, tmp_path):
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished)
    (unfinished / "final.json").unlink()
    proc = rlsuite("report", unfinished)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = (unfinished / "report.md").read_text()
    assert "The run has not finished: it has no final.json yet." in text
    assert "## Speed" not in text and (unfinished / "report.curves.png").is_file()
    assert (unfinished / "report.environment.png").is_file()


def test_an_environment_without_a_renderer_is_said_to_have_none(run, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(run, other)
    record = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**record, "env": "probe/action_reward"}))
    proc = rlsuite("report", other)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = (other / "report.md").read_text()
    assert "## First frame\n\nNo picture: environment 'probe/action_reward' has no renderer" in text
    assert "those that can be rendered: cartpole, acrobot, pendulum, " in text
    assert not (other / "report.environment.png").exists() and ".environment.png" not in text


def test_bad_input_is_refused_and_nothing_is_overwritten(run, tmp_path):
    page = tmp_path / "page.md"
    page.write_text("mine\n")
    for args, message in [
        ([run, "--out", page], f"{page} exists"),
        ([tmp_path, "--out", tmp_path / "a.md"], "holds no run (no config.json)"),
        ([run, "--metric", "charts/nope", "--out", tmp_path / "b.md"], "logs no 'charts/nope'"),
        ([run, "--out", tmp_path / "c.txt"], "give a name ending in .md"),
    ]:
        proc = rlsuite("report", *args)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert message in proc.stderr, proc.stderr[-2000:]
    assert page.read_text() == "mine\n"
    assert not any((tmp_path / f"{n}.curves.png").exists() for n in "abc")
    # A figure in the way: refused before the page is written.
    (tmp_path / "d.curves.png").write_bytes(b"not mine to replace")
    proc = rlsuite("report", run, "--out", tmp_path / "d.md")
    assert proc.returncode == 2 and "(the page's learning curve)" in proc.stderr
    assert not (tmp_path / "d.md").exists()
    assert (tmp_path / "d.curves.png").read_bytes() == b"not mine to replace"
    # So is a first frame in the way: neither the page nor its figure is written.
    (tmp_path / "e.environment.png").write_bytes(b"mine too")
    proc = rlsuite("report", run, "--out", tmp_path / "e.md")
    assert proc.returncode == 2 and "(the environment's first frame)" in proc.stderr
    assert not (tmp_path / "e.md").exists() and not (tmp_path / "e.curves.png").exists()
    assert (tmp_path / "e.environment.png").read_bytes() == b"mine too"


def _diverged_run(path, rows, final):
    """A run directory written by hand: a PPO record on cartpole, `rows` and `final`."""
    path.mkdir()
    record = {"algo": "ppo", "env": "cartpole", "num_seeds": 1, "seed": 0, "config": {}}
    (path / "config.json").write_text(json.dumps({**record, "hparams": {}}))
    (path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (path / "final.json").write_text(json.dumps(final))
    return path


def test_a_diverged_run_says_so_on_its_curve_with_the_update(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from rlsuite.app.report import write_report

    # Every row after the run's first update is a diverged one: nothing finite to draw.
    rows = [
        {"env_steps": 64 * u, "seed": 0, "charts/episodic_return": None, "charts/diverged": 1.0}
        for u in range(1, 11)
    ]
    final = {"eval_return_per_seed": [None], "diverged_at_update": [1], "diverged_seeds": [0]}
    run = _diverged_run(tmp_path / "gone", rows, final)
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read it
    write_report(run)
    (ax,) = [a for a in figures[0].axes if a.get_lines()]
    notes, legend = [t.get_text() for t in ax.texts], [t.get_text() for t in ax.get_legend().texts]
    said = "diverged: seed 0 at update 1, env step 64"
    assert notes == [f"gone: no finite value of charts/episodic_return to draw\n{said}"], notes
    assert legend == [f"gone ({said}) (1 seed)"], legend
    # The axes span the steps the run took, with the divergence marked where it happened.
    assert ax.get_xlim()[0] == 0 and ax.get_xlim()[1] >= 640
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert [line.get_xdata()[0] for line in dashed] == [64]


def _fenced(page: str) -> list[str]:
    """The lines of `page` inside its ``` fences."""
    inside, lines = False, []
    for line in page.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line)
    return lines


def test_the_evaluations_tables_are_markdown_tables_and_a_curve_stays_fenced():
    from rlsuite.app.report import render
    from rlsuite.environment.evaluations import Achievements, HeldOutTasks, Trials

    curve = {"episode_return_mean": [0.5, 1.0], "episode_return_low": [0.4, 0.9]}
    curve["episode_return_high"] = [0.6, 1.1]
    held_out = {"names": ["a", "b"], "actions": "greedy", "returns": [[[1.0], [0.0]]]}
    held_out["returns_sampled"] = [[[0.0], [1.0]]]
    entries = {"adaptation": curve, "held_out": held_out, "held_out_adaptation": curve}
    rates = {"wood": [1.0], "stone": [0.5]}
    craft = {f"eval_achievements_{m}_mean": 1.5 for m in ("greedy", "sampled")}
    craft.update({f"eval_achievement_rates_{m}": rates for m in ("greedy", "sampled")})
    record = {"algo": "ued", "env": "meta/maze", "config": {}, "hparams": {}}
    final = {"eval_return_per_seed": [1.0], "eval_return_mean": 1.0}
    for added, tables in (
        (HeldOutTasks(Trials(), None).describe(entries), 2),
        (Achievements(("wood", "stone")).describe(craft), 2),
    ):
        page = render(record, final, "c.png", "charts/episodic_return", added=added)
        section = page[page.index("## Final evaluation") : page.index("## Speed")]
        fenced = _fenced(section)
        assert not [line for line in fenced if line.startswith("|")], section  # tables outside
        # Each table: a caption paragraph, a blank line, the table, a blank line.
        heads = [i for i, line in enumerate(section.splitlines()) if line.startswith("|---")]
        assert len(heads) == 1 + tables, section  # the per-seed results' and the evaluation's
        for at in heads[1:]:
            before = section.splitlines()[at - 3 : at - 1]
            assert before[0].endswith(":") or "actions" in before[0], before
            assert before[1] == "", section
    # The held-out tasks' page: the adaptation curves' aligned lines stay in a text fence.
    page = render(record, final, "c.png", "m", added=HeldOutTasks(Trials(), None).describe(entries))
    assert "  episode   1:     0.500  [0.400, 0.600]" in _fenced(page)
    assert "```text\nadaptation: mean return per episode of a trial" in page
    assert "held-out tasks (trial returns), sampled actions:\n\n| level | solve rate |" in page
