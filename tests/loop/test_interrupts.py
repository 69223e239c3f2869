"""The chunk loop's progress bar (`rlsuite.loop.interrupts.Progress`)."""

import numpy as np

from rlsuite.loop.interrupts import Progress


def test_the_progress_bar_shows_the_return_of_the_chunks_episodes():
    """An update of a few env steps (DQN's 10) seldom ends an episode: the bar shows the
    episodes the whole chunk ended, not only its last update's (which showed `return -`)."""
    returns = np.full((2, 10), np.nan)  # [runs, updates of the chunk]
    returns[0, 3], returns[1, 7] = 20.0, 30.0
    with Progress(True, total=100, completed=0, num_runs=2) as bar:
        fields = bar.progress.tasks[0].fields
        assert fields["ret"] == "-"
        bar.advance(50, returns)
        assert bar.progress.tasks[0].fields["ret"] == "25.0"
        bar.advance(100, np.full((2, 10), np.nan))  # a chunk that ended none keeps the last
        assert bar.progress.tasks[0].fields["ret"] == "25.0"
        assert bar.progress.tasks[0].completed == 100
