"""Modules split by job keep their old import paths: each name the old module re-exports is the
new module's object (not a copy), defined there, so a caller or a monkeypatch of either sees
one function."""

import importlib

import pytest

SPLITS = [
    (
        "rlsuite.app.runs",
        "rlsuite.app.run_record",
        ("RunRecord", "build", "read_record", "config_of"),
    ),
    ("rlsuite.app.stats", "rlsuite.app.scores", ("Run", "load_run", "score_matrices", "normalize")),
    ("rlsuite.app.stats", "rlsuite.app.estimates", ("interval_estimates", "performance_profiles")),
    (
        "rlsuite.app.stats",
        "rlsuite.app.stats_output",
        ("markdown", "plot_intervals", "plot_profiles"),
    ),
    ("rlsuite.loop.checkpoint", "rlsuite.loop.checkpoint_dirs", ("CheckpointError", "latest_step")),
    ("rlsuite.loop.checkpoint", "rlsuite.loop.checkpoint_leaves", ("_read_leaves", "_digest")),
    ("rlsuite.loop.loggers", "rlsuite.loop.metrics_files", ("read_metrics", "JSONL", "CSV")),
]


@pytest.mark.parametrize(("old", "new", "names"), SPLITS, ids=[s[1] for s in SPLITS])
def test_the_old_module_re_exports_the_new_modules_objects(old, new, names):
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        value = getattr(new_module, name)
        assert getattr(old_module, name) is value, (old, name)
        if callable(value):
            assert value.__module__ == new, (name, value.__module__)
