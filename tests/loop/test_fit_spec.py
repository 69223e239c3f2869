"""fit's records and their checks (`rlsuite.loop.fit_spec`), and the chunk loop's Ctrl-C
(`rlsuite.loop.interrupts`), by hand."""

import os
import pathlib
import signal
import types

import pytest

from rlsuite.loop import fit_spec, interrupts


def _agent(env_steps_per_update=64, total_timesteps=0, num_updates=6):
    config = types.SimpleNamespace(num_updates=num_updates, total_timesteps=total_timesteps)
    return types.SimpleNamespace(
        name="toy", config=config, env_steps_per_update=env_steps_per_update
    )


def test_checked_resolves_the_lengths_and_refuses_bad_values_by_name():
    agent, output, final = _agent(), fit_spec.Output(), fit_spec.Final()
    schedule = fit_spec.checked(agent, fit_spec.Schedule(num_seeds=2), output, final)
    assert (schedule.num_updates, schedule.chunk_updates) == (6, fit_spec.chunk_length(6))
    assert fit_spec.chunk_length(976, 8) == 122 and fit_spec.chunk_length(7) == 1
    for bad, message in [
        (fit_spec.Schedule(num_seeds=0), "num_seeds must be an int >= 1, got 0"),
        (fit_spec.Schedule(hparams_axis=1), "hparams_axis must be None"),
        (fit_spec.Schedule(num_seeds=3, hparams_axis=0, seeds_per_config=2), "must divide"),
    ]:
        with pytest.raises(ValueError, match=message):
            fit_spec.checked(agent, bad, output, final)
    with pytest.raises(ValueError, match="resume=True needs the out_dir"):
        fit_spec.checked(agent, fit_spec.Schedule(), fit_spec.Output(resume=True), final)


def test_steps_per_seed_past_32_bits_are_refused_at_the_bound():
    fit_spec.check_int32_steps(_agent(), fit_spec.INT32_MAX // 64)  # 2^31 - 64 steps
    with pytest.raises(ValueError, match="toy would take 2,147,483,648 steps per seed"):
        fit_spec.check_int32_steps(_agent(), 2**31 // 64)
    with pytest.raises(ValueError, match="3,000,000,000 steps per seed"):
        fit_spec.check_int32_steps(_agent(total_timesteps=3_000_000_000), 1)


def test_the_first_ctrl_c_is_a_request_the_second_stops_at_once(capsys):
    before = signal.getsignal(signal.SIGINT)
    with interrupts.StopRequest() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.requested and "stopping once this chunk is saved" in capsys.readouterr().err
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before
    where = interrupts.Where(3, 10, 2, pathlib.Path("runs/a"))
    stopped = interrupts.Interrupted(where)
    assert isinstance(stopped, KeyboardInterrupt) and stopped.where.checkpoint == 2
