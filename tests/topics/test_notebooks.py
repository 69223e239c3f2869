"""Notebooks: each runs end to end in a Jupyter kernel of this interpreter on a tiny budget, and is
stored without outputs. The default run runs the PPO ablation (`notebooks/ppo_ablation.ipynb`);
the slow run the others, their families' own tests being in the default run."""

import pathlib
import re
import sys

import nbclient
import nbformat
import pytest

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
ABLATION = NOTEBOOKS / "ppo_ablation.ipynb"

# Prepended to the notebook in memory: which interpreter the kernel runs, and which rlsuite it sees.
KERNEL_CHECK = "import sys, rlsuite\nprint('KERNEL', sys.prefix, rlsuite.__file__, sep='|')"


def _stream_text(nb) -> str:
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.output_type == "stream" and out.name == "stdout"
    )


def _images(nb) -> list:
    return [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "display_data" and "image/png" in out.get("data", {})
    ]


def test_notebooks_are_stored_without_outputs():
    notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert ABLATION in notebooks
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.timeout(240)
def test_ppo_ablation_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("RLSUITE_NOTEBOOK_TIMESTEPS", "1024")  # 2 updates of 4 envs x 128 steps
    monkeypatch.setenv("RLSUITE_NOTEBOOK_SEEDS", "2")
    nb = nbformat.read(ABLATION, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(KERNEL_CHECK))

    # The kernel spec's "python" is replaced by sys.executable; it runs in an empty temp dir.
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, with the traceback, if any cell fails

    text = _stream_text(nb)
    kernel = re.search(r"^KERNEL\|(.*)\|(.*)$", text, re.MULTILINE)
    assert kernel is not None, text
    assert kernel.group(1) == sys.prefix
    assert pathlib.Path(kernel.group(2)).is_relative_to(pathlib.Path(__file__).parents[2])
    assert "1,024 env steps per run, 2 seeds" in text

    row = r"^\s*(on|off)\s+(0\.0|0\.95)\s+(\S+) \[[^\]]*\]\s+(\S+) \[[^\]]*\]$"
    rows = re.findall(row, text, re.MULTILINE)
    assert sorted((norm, lam) for norm, lam, *_ in rows) == [
        ("off", "0.0"),
        ("off", "0.95"),
        ("on", "0.0"),
        ("on", "0.95"),
    ], text
    for *_, train_return, eval_return in rows:  # CartPole returns lie in [1, 500]
        assert 1.0 <= float(train_return) <= 500.0 and 1.0 <= float(eval_return) <= 500.0, rows

    assert len(_images(nb)) == 1
    assert list(tmp_path.iterdir()) == []  # the notebook writes no files


def _run_tiny(name: str, tmp_path, monkeypatch, timeout: int):
    """Execute the notebook `name` at 2 updates and 2 seeds (its budget variables), in
    `tmp_path`, with the tests' compilation cache (conftest.py); returns the executed notebook."""
    monkeypatch.setenv("RLSUITE_NOTEBOOK_UPDATES", "2")
    monkeypatch.setenv("RLSUITE_NOTEBOOK_SEEDS", "2")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=timeout, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    return nb


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_rl2_adaptation_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    nb = _run_tiny("rl2_adaptation.ipynb", tmp_path, monkeypatch, timeout=240)
    text = _stream_text(nb)
    assert "2 updates per run, 2 seeds" in text and "2 seeds x 5,120 env steps" in text
    rows = re.findall(r"^\s*(with memory|memory reset every pull)\s+(\S+) \[.*$", text, re.M)
    assert [label for label, _ in rows] == ["with memory", "memory reset every pull"], text
    for _, total in rows:  # a trial of 10 pulls earns 0 to 10
        assert 0.0 <= float(total) <= 10.0, rows
    assert "Bayes-optimal 6.660" in text
    assert len(_images(nb)) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_ued_curricula_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    nb = _run_tiny("ued_curricula.ipynb", tmp_path, monkeypatch, timeout=360)
    text = _stream_text(nb)
    assert "2 updates per run, 2 seeds, 3 curricula" in text
    trained = re.findall(r"^\s*(\w+): 2 seeds x 4,096 env steps in", text, re.M)
    assert trained == ["dr", "robust_plr", "accel"], text
    rate = r"(\S+) \[(\S+), (\S+)\]"
    rows = re.findall(rf"^\s*(dr|robust_plr|accel)\s+{rate}\s+{rate}$", text, re.M)
    assert [row[0] for row in rows] == ["dr", "robust_plr", "accel"], text
    for _, *cells in rows:
        mean, low, high, final, final_low, final_high = map(float, cells)
        assert 0.0 <= low <= mean <= high <= 1.0 and 0.0 <= final_low <= final <= final_high <= 1.0
    # Every curriculum starts from the same students, and the robust ones learn nothing before
    # their buffer is half full (500 levels): after 2 updates they solve what they did at step 0.
    assert len({row[1:4] for row in rows}) == 1, rows
    assert rows[1][1:4] == rows[1][4:] and rows[2][1:4] == rows[2][4:], rows
    buffers = re.findall(r"^(robust_plr|accel): (\d+) levels in seed 0's buffer$", text, re.M)
    assert [c for c, _ in buffers] == ["robust_plr", "accel"]
    assert all(0 <= int(size) <= 64 for _, size in buffers)  # 2 updates of 32 new levels
    assert len(_images(nb)) == 2  # the solve-rate curves and the buffers' top levels
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_crl_ablation_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("RLSUITE_NOTEBOOK_ENERGIES", "norm,cosine")
    monkeypatch.setenv("RLSUITE_NOTEBOOK_LOSSES", "forward,binary")
    nb = _run_tiny("crl_ablation.ipynb", tmp_path, monkeypatch, timeout=240)
    text = _stream_text(nb)
    assert "2 updates per run, 2 seeds, 2 energies x 2 losses" in text
    trained = re.findall(r"^\s*(\S+): 2 seeds x 128 env steps in", text, re.M)  # 2 x 64 envs
    assert trained == ["norm/forward", "norm/binary", "cosine/forward", "cosine/binary"], text
    assert re.search(r"^\s*energy\s+forward\s+binary$", text, re.M), text
    cell = r"(\S+) \[(\S+), (\S+)\]"
    rows = re.findall(rf"^\s*(norm|cosine)\s+{cell}\s+{cell}$", text, re.M)
    # Two tables (success_any, then time near goal), a row per energy.
    assert [row[0] for row in rows] == ["norm", "cosine", "norm", "cosine"], text
    for i, (_, *values) in enumerate(rows):
        top = 1.0 if i < 2 else 50.0  # a share of episodes; steps of a 50-step episode
        for mean, low, high in zip(*[iter(map(float, values))] * 3, strict=True):
            assert 0.0 <= low <= mean <= high <= top, rows
    assert len(_images(nb)) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_value_based_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("RLSUITE_NOTEBOOK_TIMESTEPS", "4096")  # PQN: 2 rollouts of 32 x 64
    monkeypatch.setenv("RLSUITE_NOTEBOOK_SEEDS", "2")
    nb = nbformat.read(NOTEBOOKS / "value_based.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=240, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    text = _stream_text(nb)
    assert "4,096 env steps per run, 2 seeds" in text
    trained = re.findall(r"^(DQN, double on|DQN, double off|PQN): (\d) runs in", text, re.M)
    assert trained == [("DQN, double on", "2"), ("DQN, double off", "2"), ("PQN", "4")], text
    row = r"^\s*(DQN, double on|DQN, double off|PQN, lambda 0\.0|PQN, lambda 0\.95)"
    rows = re.findall(rf"{row}\s+(\S+) \[[^\]]*\]\s+(\S+) \[[^\]]*\]$", text, re.M)
    assert [label for label, *_ in rows] == [
        "DQN, double on",
        "DQN, double off",
        "PQN, lambda 0.0",
        "PQN, lambda 0.95",
    ], text
    for _, train_return, eval_return in rows:  # CartPole returns lie in [1, 500]
        assert 1.0 <= float(train_return) <= 500.0 and 1.0 <= float(eval_return) <= 500.0, rows
    assert len(_images(nb)) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_trust_region_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    nb = _run_tiny("trust_region.ipynb", tmp_path, monkeypatch, timeout=240)
    text = _stream_text(nb)
    assert "2 updates of 2,048 env steps per run, 2 seeds" in text
    assert re.findall(r"^(FixPO|PPO-clip): 2 runs in", text, re.M) == ["FixPO", "PPO-clip"]
    rows = re.findall(
        r"^\s*(FixPO|PPO-clip)\s+(\d+) / 4\s+(\S+)\s+(\S+) \[(\S+), (\S+)\]$", text, re.M
    )
    assert [row[0] for row in rows] == ["FixPO", "PPO-clip"], text
    fix, clip = rows
    assert fix[1] == "4" and fix[2].endswith("%") and clip[2] == "-"  # FixPO holds every update
    for *_, mean, low, high in rows:  # pendulum returns lie in [-16.27 x 200, 0]
        assert -3300.0 <= float(low) <= float(mean) <= float(high) <= 0.0, rows
    assert len(_images(nb)) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_robust_adversarial_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    nb = _run_tiny("robust_adversarial.ipynb", tmp_path, monkeypatch, timeout=240)
    text = _stream_text(nb)
    assert "2 updates of 2,048 protagonist env steps, 2 seeds, disturbance bound 0.25" in text
    assert re.findall(r"^(RARL|PPO): 2 runs trained and tested in", text, re.M) == ["RARL", "PPO"]
    largest = re.search(r"the largest disturbance applied: (\S+) \(bound 0.25\)", text)
    assert largest and 0.0 < float(largest.group(1)) <= 0.25, text
    rows = re.findall(r"^\s*(RARL|PPO|RARL - PPO)\s+(\S+) \[(\S+), (\S+)\]\s+(\S+) \[", text, re.M)
    assert [row[0] for row in rows] == ["RARL", "PPO", "RARL - PPO"], text
    for _side, mean, low, high, _mean_over_cells in rows[
        :2
    ]:  # the worst cell  # pendulum returns lie in [-16.27 x 200, 0]
        assert -3300.0 <= float(low) <= float(mean) <= float(high) <= 0.0, rows
    assert len(_images(nb)) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_task_curricula_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    nb = _run_tiny("task_curricula.ipynb", tmp_path, monkeypatch, timeout=240)
    text = _stream_text(nb)
    assert "2 updates of 3,840 env steps, 2 seeds, score maxmc" in text
    assert re.findall(r"^(dr|plr): 2 runs trained and tested in", text, re.M) == ["dr", "plr"]
    rows = re.findall(r"^\s*(dr|plr)\s+trial (\S+) \[(\S+), (\S+)\]\s+episodes (.*)$", text, re.M)
    assert [row[0] for row in rows] == ["dr", "plr"], text
    for _side, mean, low, high, episodes in rows:  # 3 episodes, each in [-1, 1]
        assert -3.0 <= float(low) <= float(mean) <= float(high) <= 3.0, rows
        means = [float(m) for m in re.findall(r"(\S+) \[", episodes)]
        assert len(means) == 3 and abs(sum(means) - float(mean)) < 2e-3, rows
    assert re.search(r"^\s*plr - dr\s+trial \S+ \[\S+, \S+\]$", text, re.M), text
    assert len(_images(nb)) == 2  # the held-out layouts, the adaptation curves
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_lpo_drift_notebook_runs_on_a_tiny_budget(tmp_path, monkeypatch):
    pytest.importorskip("evosax", reason="evosax is missing (the lpo extra)")
    nb = _run_tiny("lpo_drift.ipynb", tmp_path, monkeypatch, timeout=360)
    text = _stream_text(nb)
    assert "2 generations of 16 drifts, 261,120 env steps each, 2 seeds" in text
    assert re.search(r"^LPO: 2 seeds x 2 generations in", text, re.M), text
    generations = re.findall(r"^\s+(\d)\s+(\S+)\s+(\S+)$", text, re.M)
    assert [g for g, *_ in generations] == ["1", "2"], text
    for _, population, mean in generations:  # CartPole returns lie in [1, 500]
        assert 1.0 <= float(population) <= 500.0 and 1.0 <= float(mean) <= 500.0
    rows = re.findall(r"^\s*(PPO's clip|DPO|LPO, learned)\s+(\S+) \[(\S+), (\S+)\]$", text, re.M)
    assert [row[0] for row in rows] == ["PPO's clip", "DPO", "LPO, learned"], text
    for _, mean, low, high in rows:
        assert 1.0 <= float(low) <= float(mean) <= float(high) <= 500.0, rows
    assert len(_images(nb)) == 1
    assert list(tmp_path.iterdir()) == []
