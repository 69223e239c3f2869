"""The suites that draw with their own code (`rlsuite.envs.suite_pictures`): Jumanji's viewers,
Craftax's pixel renderer, XLand-MiniGrid's rgb_array renderer and gymnax's MinAtar
visualisation. Each draws one task's reset through `rendering.render_state` at the size asked
for, not blank, and two states that differ (other actions from one reset) as two pictures;
gymnax's other environments stay without a renderer; `fit` letterboxes."""

import jax
import numpy as np
import pytest
from rlsuite.envs import registry, rendering

from rlsuite import envs

WIDTH, HEIGHT = 96, 64


def pictures(name, first, second, steps=1):
    """The reset of `name` drawn, and the pictures after `steps` steps of action `first` and of
    action `second` from it (one compiled step)."""
    env, params = envs.make(name)
    _, state = jax.jit(env.reset)(jax.random.key(0), params)
    step = jax.jit(env.step)
    after = []
    for action in (first, second):
        moved = state
        for i in range(steps):
            key = jax.random.key(i + 1)
            moved = step(key, moved, jax.numpy.asarray(action, jax.numpy.int32), params)[1]
        after.append(rendering.render_state(env, params, moved, WIDTH, HEIGHT))
    return rendering.render_state(env, params, state, WIDTH, HEIGHT), *after


def check(name, first, second, steps=1):
    assert any(name.startswith(n.split("... (")[0]) for n in registry.renderable_names())
    reset, one, other = pictures(name, first, second, steps)
    for image in (reset, one, other):
        assert image.shape == (HEIGHT, WIDTH, 3) and image.dtype == np.uint8
        assert len(np.unique(image.reshape(-1, 3), axis=0)) >= 3  # not blank
    assert not np.array_equal(one, other)


def test_a_jumanji_snake_draws_through_its_viewer():
    check("jumanji/Snake-v1", 0, 2)  # up, down: the head moves by a cell either way


# Slow: Craftax's pixel renderer compiles for 50 s on a CPU with an empty compilation cache; the
# default run draws Jumanji's and MiniGrid's, and steps Craftax (tests/envs/test_craftax.py).
@pytest.mark.slow
def test_a_craftax_world_draws_through_craftax_s_pixel_renderer():
    check("craftax/Craftax-Classic-Symbolic-v1", 1, 2)  # left, right: facing (and maybe moving)


def test_a_minigrid_room_draws_through_xland_minigrid_s_renderer():
    check("minigrid/MiniGrid-Empty-5x5", 0, 1)  # forward, turn right


def test_a_minatar_breakout_draws_through_gymnax_s_visualisation():
    check("gymnax/Breakout-MinAtar", 1, 2, steps=3)  # the paddle left, right


def test_gymnax_s_other_environments_have_no_renderer():
    env, params = envs.make("gymnax/CartPole-v1")
    assert not rendering.renderable(env)
    with pytest.raises(rendering.NotRenderable, match="has no renderer"):
        rendering.render_state(env, params, env.reset(jax.random.key(0), params)[1])


def test_fit_keeps_the_aspect_ratio_centred_on_the_background():
    image = np.zeros((2, 2, 4), np.uint8)
    image[0, 0, :3] = (255, 0, 0)
    fitted = rendering.fit(image, 8, 4, background=(0, 0, 255))
    assert fitted.shape == (4, 8, 3) and fitted.dtype == np.uint8
    assert np.all(fitted[:, :2] == (0, 0, 255)) and np.all(fitted[:, 6:] == (0, 0, 255))
    assert np.all(fitted[:2, 2:4] == (255, 0, 0)) and np.all(fitted[2:, 4:6] == (0, 0, 0))
    floats = rendering.fit(np.full((3, 3, 3), 254.6, np.float32), 3, 3)
    assert floats.dtype == np.uint8 and np.all(floats == 255)
