"""Playback of the live controls without a browser: the kernel's clock (msprings.widgets.
Playback) pumped by hand or by a real asyncio loop, with the page's acknowledgements sent as
the page sends them.  What is checked: at most a window of frames in flight, acknowledgements
of the right run only, real time and slow motion on the simulated clock, frames as binary
buffers that hold the system's state, a blow-up during playback, the keys, and compare()."""
from __future__ import annotations

import asyncio
import gc
import math
import types
import warnings
import weakref

from collections.abc import Callable

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("anywidget")
# These tests set play.value = True in plain Python and step by hand: no event loop, as warned.
pytestmark = pytest.mark.filterwarnings("ignore:Play does nothing here:RuntimeWarning")

import msprings  # noqa: E402
from msprings import scenes  # noqa: E402
from msprings.widgets import (  # noqa: E402
    CATCH_UP, FRAME_BUDGET, LOST_AFTER, SPEEDS, Comparison, LiveControls, Playback)


def recording(live: LiveControls) -> list[tuple[dict, list]]:
    """The frames the controls send to the page, kept in a list instead."""
    sent: list[tuple[dict, list]] = []
    live.view.send = lambda content, buffers=None: sent.append((content, list(buffers or [])))
    return sent


def at_clock(t: float, clock: float, dt: float) -> bool:
    """A lane is at the clock or less than one of its steps past it (to rounding)."""
    return clock - 1e-6 * dt - 1e-12 <= t < clock + dt


def ack(live: LiveControls, content: dict) -> None:
    live._on_view_message(live.view, {"type": "ack", "run": content["run"], "seq": content["seq"]}, [])


def test_a_frame_carries_the_state_as_float32_buffers_and_the_ledger_as_json() -> None:
    system = scenes.cloth(6)
    live = msprings.interact(system)
    sent = recording(live)
    live.play.value = True
    assert live.player.playing and isinstance(live.player, Playback)
    assert live.player.pump()
    (content, buffers), = sent
    assert content["type"] == "frame" and content["seq"] == 1 and content["t"] == system.t > 0
    assert np.array_equal(np.frombuffer(buffers[0], "<f4").reshape(-1, 3), system.x.astype(np.float32))
    assert np.allclose(np.frombuffer(buffers[1], "<f4"), system.strain(), rtol=1e-6, atol=1e-9)
    energy = system.energy()
    assert math.isclose(content["energy"]["kinetic"], energy.kinetic)
    assert content["sample"][0] == system.t and math.isclose(content["sample"][1], energy.kinetic)
    assert live.history[-1, 0] == system.t  # the ledger history records every frame
    assert content["status"]["time"] == system.t


def test_at_most_a_window_of_frames_is_in_flight_and_the_clock_waits_for_acks() -> None:
    system = scenes.chain(6)
    live = msprings.interact(system)
    sent = recording(live)
    live.play.value = True
    player = live.player
    assert player.window == 30  # one second of frames at 30 frames/s
    for _ in range(player.window):
        assert player.pump()
    assert len(sent) == player.window and player.in_flight(live) == player.window
    t = system.t
    for _ in range(5):  # no acknowledgement: neither a step nor a message
        assert not player.pump()
    assert system.t == t and len(sent) == player.window and player.stalls == 5
    ack(live, sent[9][0])  # frames 1..10 arrived
    assert player.in_flight(live) == player.window - 10
    for _ in range(10):
        assert player.pump()
    assert not player.pump() and len(sent) == player.window + 10
    assert [content["seq"] for content, _ in sent] == list(range(1, player.window + 11))


def test_acknowledgements_of_another_run_or_of_unsent_frames_are_ignored() -> None:
    live = msprings.interact(scenes.chain(4))
    sent = recording(live)
    live.play.value = True
    for _ in range(4):
        live.player.pump()
    old = sent[-1][0]
    live.play.value = False
    live.play.value = True  # a new run: frames of the old one no longer count
    assert live.player.run == old["run"] + 1
    live.player.pump()
    ack(live, old)
    assert live.player.in_flight(live) == 1
    live._on_view_message(live.view, {"type": "ack", "run": live.player.run, "seq": 99}, [])
    assert live.player.in_flight(live) == 1
    ack(live, sent[-1][0])
    assert live.player.in_flight(live) == 0


def test_default_playback_is_real_time_on_the_simulated_clock() -> None:
    for system in (scenes.chain(11), scenes.cloth(20), scenes.cloth(40)):
        live = msprings.interact(system)
        sent = recording(live)
        live.play.value = True
        for _ in range(60):  # two seconds of frames at 30 frames/s
            live.player.pump()
            ack(live, sent[-1][0])
        # The clock moved 1/fps a frame; the system is at most one step past it.
        assert math.isclose(live.player.clock, 2.0, rel_tol=1e-9)
        assert at_clock(system.t, 2.0, live.dt.value)
        assert sent[-1][0]["rate"] == pytest.approx(1.0)


def test_a_late_timer_makes_a_longer_frame_up_to_the_catch_up_limit() -> None:
    system = scenes.chain(6)
    live = msprings.interact(system)
    sent = recording(live)
    live.play.value = True
    live.player.pump(elapsed=0.1)  # three frames' worth of wall time
    assert math.isclose(live.player.clock, 0.1) and len(sent) == 1
    live.player.pump(elapsed=60.0)  # a long stall is not made up in one burst
    assert math.isclose(live.player.clock, 0.1 + CATCH_UP)
    live.player.pump(elapsed=-1.0)
    assert math.isclose(live.player.clock, 0.1 + CATCH_UP) and len(sent) == 3
    assert at_clock(system.t, live.player.clock, live.dt.value)


def test_set_steps_per_frame_sets_how_far_a_frame_goes_while_playing() -> None:
    system = scenes.chain(6)
    live = msprings.interact(system, dt=0.01, steps_per_frame=5)
    recording(live)
    live.play.value = True
    for _ in range(6):
        live.player.pump()
    assert system.steps == 30 and math.isclose(system.t, 0.3)
    assert math.isclose(live.player.rate, 5 * 0.01 * 30)


@pytest.mark.parametrize("speed", [0.5, 0.25, 0.1])
def test_slow_motion_slows_the_clock_not_the_frames(speed: float) -> None:
    system = scenes.chain(11, k=20.0, c=0.3)  # a step longer than a slowed frame
    live = msprings.interact(system)
    sent = recording(live)
    assert speed in SPEEDS.values()
    live.speed.value = speed
    live.play.value = True
    for _ in range(90):  # three seconds of wall time
        live.player.pump()
        ack(live, sent[-1][0])
    assert len(sent) == 90  # a frame every 1/fps as at full speed
    assert math.isclose(live.player.clock, 3.0 * speed, rel_tol=1e-9)
    assert at_clock(system.t, 3.0 * speed, live.dt.value)
    assert sent[-1][0]["rate"] == pytest.approx(speed)
    # Frames whose clock did not reach the next step carry no buffers: nothing new to draw.
    stepped = [content for content, buffers in sent if buffers]
    assert len(stepped) == pytest.approx(3.0 * speed / live.dt.value, abs=1)
    assert all("energy" in content for content in stepped)


def test_a_blow_up_while_playing_pauses_with_its_message_and_rolls_back() -> None:
    system = scenes.single_spring()
    live = msprings.interact(system)
    sent = recording(live)
    live.dt.value = 1.5 * system.critical_dt("symplectic_euler")
    first = live.view.positions  # the picture before playing
    live.play.value = True
    frames = 0
    while live.player.playing:
        before = (system.t, system.x.copy())
        live.player.pump()
        if sent:
            ack(live, sent[-1][0])
        frames += 1
        assert frames < 5000, "symplectic Euler above its critical step should blow up"
    assert not live.play.value and not live.view.playing
    assert "blew up" in live.message.value and "blew up" in live.view.message
    # The lab bench catches the blow-up before any number overflows (a spring stretched a
    # hundredfold): the system stays finite and the page shows the last sane frame it was sent.
    assert live.lab.blown_up and np.all(np.isfinite(system.x)) and system.t > before[0] - 1e-12
    streamed = [first] + [buffers[0] for _content, buffers in sent if buffers]
    assert live.view.positions == streamed[-1]
    shown = np.frombuffer(live.view.positions, "<f4").reshape(-1, 3)
    assert np.all(np.abs(shown) < 1e3)  # a picture a student recognises, not 1e30s


def test_the_kernel_loop_streams_frames_and_stops_sending_when_unacknowledged() -> None:
    async def play(acknowledge: bool, seconds: float) -> tuple[LiveControls, list]:
        live = msprings.interact(scenes.chain(6))
        sent = recording(live)
        if acknowledge:
            original = live.view.send

            def answer(content: dict, buffers: list | None = None) -> None:
                original(content, buffers)
                asyncio.get_running_loop().call_soon(ack, live, content)

            live.view.send = answer
        live.play.value = True
        await asyncio.sleep(seconds)
        live.play.value = False
        count = len(sent)
        await asyncio.sleep(0.2)
        assert len(sent) == count, "no frame after Pause"
        return live, sent

    live, sent = asyncio.run(play(True, 0.6))
    assert 5 <= len(sent) <= 19 and sent[-1][0]["seq"] == len(sent)
    assert live.system.t == pytest.approx(live.player.clock, abs=live.dt.value)
    live, sent = asyncio.run(play(False, 1.5))
    assert len(sent) == live.player.window and live.player.stalls > 0  # nothing piles up


def test_keys_on_the_canvas_play_step_and_reset() -> None:
    system = scenes.chain(6)
    live = msprings.interact(system)
    recording(live)
    key = lambda action: live._on_view_message(live.view, {"type": "key", "action": action}, [])  # noqa: E731
    key("play")
    assert live.play.value and live.view.playing
    key("play")
    assert not live.play.value
    key("step")
    assert system.steps == live.steps_per_frame.value and not live.play.value
    key("reset")
    assert system.t == 0 and system.steps == 0
    key("step")
    state = (system.t, system.steps, system.x.copy(), live.play.value, live.view.frame)
    key("unknown")  # ignored: nothing steps, plays or redraws
    assert (system.t, system.steps, live.play.value, live.view.frame) == (state[0], state[1], state[3], state[4])
    assert np.array_equal(system.x, state[2])


def test_compare_plays_systems_on_one_clock_and_a_blow_up_stops_only_its_own() -> None:
    cloth = scenes.cloth(20)
    limit = cloth.critical_dt()
    view = msprings.compare(cloth, cloth.copy(), dt=[0.5 * limit, 1.5 * limit], labels=["stable", "unstable"])
    assert isinstance(view, Comparison) and len(view.lanes) == 2
    assert view.lanes[0].view.clock == view.lanes[1].view.clock != ""
    assert all(lane.player is view.player for lane in view.lanes)
    sent = [recording(lane) for lane in view.lanes]
    view.play.value = True
    assert all(lane.play.value and lane.view.playing for lane in view.lanes)
    for frame in range(150):  # 5 s on the clock
        view.player.pump()
        for lane, frames in zip(view.lanes, sent):
            if frames:
                ack(lane, frames[-1][0])
        if frame == 3:  # one clock: both within a step of it (before the unstable one blows up)
            for lane in view.lanes:
                assert at_clock(lane.system.t, view.player.clock, lane.dt.value)
    stable, unstable = view.lanes
    assert "blew up" in unstable.message.value and not unstable.play.value and not unstable.view.playing
    assert stable.play.value and view.play.value and stable.message.value == ""
    assert math.isclose(view.player.clock, 5.0) and stable.system.t >= 5.0
    assert unstable.system.t < 3.5 and np.all(np.isfinite(unstable.system.x))
    # A key on either canvas acts on both.
    unstable._on_view_message(unstable.view, {"type": "key", "action": "reset"}, [])
    assert not view.play.value and stable.system.t == unstable.system.t == 0.0


def test_compare_speed_step_and_run() -> None:
    a = scenes.chain(6, k=20.0, c=0.3)  # soft: stable at both steps
    view = msprings.compare(a, a.copy(), dt=[0.01, 0.03], integrator="velocity_verlet")
    assert [lane.system.integrator for lane in view.lanes] == ["velocity_verlet"] * 2
    assert view.run(30)  # one second on the shared clock
    for lane in view.lanes:
        assert at_clock(lane.system.t, 1.0, lane.dt.value)
    assert view.lanes[0].system.steps == 100 and view.lanes[1].system.steps == 34
    view.speed.value = 0.25
    assert view.player.speed == 0.25


@pytest.mark.parametrize(("arguments", "options", "error", "words"), [
    (1, {}, ValueError, "at least two"),
    (0, {}, ValueError, "distinct"),
    (2, {"dt": [0.01]}, ValueError, "dt"),
    (2, {"integrator": ["rk4", "nope"]}, ValueError, "integrator"),
    (2, {"labels": ["a", 2]}, TypeError, "labels"),
    (2, {"labels": 5}, TypeError, "labels must be a sequence of strings"),
    (2, {"dt": np.array([0.01, 0.02, 0.03])}, ValueError, "dt must be one value or 2"),
    (-1, {}, TypeError, "separate arguments"),
    (2, {"width": 100}, ValueError, "width"),
])
def test_compare_refuses_bad_input_naming_it(arguments: int, options: dict, error: type, words: str) -> None:
    a = scenes.chain(4)
    systems = [a] if arguments == 1 else [a, a] if arguments == 0 else [[a, a.copy()]] if arguments == -1 else [
        a, a.copy()]
    with pytest.raises(error, match=words):
        msprings.compare(*systems, **options)
    with pytest.raises(TypeError, match=r"systems\[1\]"):
        msprings.compare(a, "chain")
    assert a.t == 0 and a.steps == 0


def test_compare_takes_an_array_of_steps_one_per_system() -> None:
    a = scenes.chain(4)
    view = msprings.compare(a, a.copy(), dt=np.array([0.01, 0.02]))
    assert [lane.dt.value for lane in view.lanes] == [0.01, 0.02]


def test_a_page_that_says_hello_is_sent_frames_again() -> None:
    live = msprings.interact(scenes.chain(6))
    sent = recording(live)
    live.play.value = True
    player = live.player
    for _ in range(player.window):  # sent to a page that is not there yet: never acknowledged
        player.pump()
    assert not player.pump() and player.in_flight(live) == player.window
    live._on_view_message(live.view, {"type": "hello"}, [])  # the view starts drawing
    assert player.in_flight(live) == 0
    t = live.system.t
    assert player.pump() and live.system.t > t and sent[-1][0]["seq"] == player.window + 1
    ack(live, sent[-1][0])  # its acknowledgements count as before
    assert player.in_flight(live) == 0


def test_frames_unacknowledged_for_long_are_counted_lost() -> None:
    live = msprings.interact(scenes.chain(6))
    sent = recording(live)
    live.play.value = True
    player = live.player
    for _ in range(player.window):
        player.pump()
    waits = 0
    while not player.pump():  # a frame's wall time each
        waits += 1
        assert waits < 1000, "the clock waits for good"
    assert waits == pytest.approx(LOST_AFTER * player.fps, abs=1)
    assert len(sent) == player.window + 1 and player.in_flight(live) == 1


def test_close_stops_the_timer_and_a_closed_widget_lets_go_of_its_system() -> None:
    async def play(make: Callable[[msprings.System], LiveControls | Comparison]) -> tuple[weakref.ref, bool]:
        system = scenes.chain(6)
        widget = make(system)
        widget.play.value = True
        await asyncio.sleep(0.15)
        assert widget.player.playing and system.t > 0
        widget.close()
        t = system.t
        await asyncio.sleep(0.15)
        still = system.t == t and not widget.player.playing and widget.player._timer is None
        still = still and not widget.play.value and widget.comm is None
        views = widget.lanes if isinstance(widget, Comparison) else [widget]
        still = still and all(lane.view.comm is None for lane in views)
        reference = weakref.ref(system)
        del widget, system, views
        gc.collect()
        return reference, still

    for make in (msprings.interact, lambda system: msprings.compare(system, scenes.chain(6))):
        reference, stopped = asyncio.run(play(make))
        assert stopped  # no step and no timer after close()
        assert reference() is None  # nothing holds the system any more


def test_the_timer_holds_the_player_only_weakly() -> None:
    class Lane:  # what the player uses of a LiveControls
        play = dt = types.SimpleNamespace(value=True)
        system = types.SimpleNamespace(t=0.0)

    async def dropped() -> weakref.ref:
        player = Playback([Lane()], lambda: 1.0 / 30.0, 30.0)
        player.start()  # schedules its timer on this loop
        assert player._timer is not None
        reference = weakref.ref(player)
        del player
        gc.collect()
        await asyncio.sleep(0.1)  # the timer fires and finds nothing to do
        return reference

    assert asyncio.run(dropped())() is None


def test_a_kernel_slower_than_real_time_slows_the_clock_evenly() -> None:
    """Each step costs 2 ms of (fake) wall time, at 30 frames/s: real time would need more
    steps a frame than fit in one.  The timer fires late by what the last frame took."""
    system = scenes.chain(6)
    live = msprings.interact(system, dt=1e-3)
    sent = recording(live)
    cost = 2e-3  # s of wall time per step
    wall = [0.0]
    live.player.timer = lambda: wall[0]
    advance = live._advance

    def slow(steps: int) -> bool:
        wall[0] += cost * steps
        return advance(steps)

    live._advance = slow
    live.play.value = True
    period = 1.0 / live.player.fps
    elapsed, steps = period, []
    for _ in range(90):
        before, began = system.steps, wall[0]
        live.player.pump(elapsed)
        ack(live, sent[-1][0])
        steps.append(system.steps - before)
        spent = wall[0] - began
        elapsed = period if spent <= period else spent + 0.5 * period  # as the asyncio timer fires
    budget = FRAME_BUDGET * period / cost  # steps a frame may take
    assert abs(steps[0] - period / 1e-3) <= 1  # the first frame, before any cost is known
    assert all(abs(count - budget) <= 1 for count in steps[2:]), steps  # even: no lurching
    assert at_clock(system.t, live.player.clock, live.dt.value)
    rate = (steps[-1] * 1e-3) / period
    assert rate == pytest.approx(FRAME_BUDGET * 1e-3 / cost, rel=0.1)  # 0.4 x real time, steadily


def test_a_cell_that_steps_or_resets_the_system_while_playing_moves_the_clock_to_it() -> None:
    system = scenes.chain(11)
    live = msprings.interact(system)
    sent = recording(live)
    live.play.value = True
    for _ in range(60):
        live.player.pump()
        ack(live, sent[-1][0])
    system.reset()  # from a cell, while playing
    live.player.pump()
    ack(live, sent[-1][0])
    assert system.t < 0.1 and at_clock(system.t, live.player.clock, live.dt.value)  # no 2 s burst
    system.step(live.dt.value, round(3.0 / live.dt.value))  # 3 s ahead
    t = system.t
    live.player.pump()
    ack(live, sent[-1][0])
    assert sent[-1][1] and system.t > t  # a picture of a step, not a frozen one
    assert at_clock(system.t, live.player.clock, live.dt.value)


def test_play_without_an_event_loop_warns_once_to_use_tick_or_run() -> None:
    live = msprings.interact(scenes.chain(4))
    with pytest.warns(RuntimeWarning, match=r"no running asyncio event loop.*tick\(\) or run"):
        live.play.value = True
    live.play.value = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        live.play.value = True  # once is enough


def test_after_a_blow_up_while_playing_the_page_shows_one_sane_frame_whole() -> None:
    """A lab control changed while playing must not make the picture from before Play the
    'last sane frame', and the status line and ledger chart must stop where the picture does."""
    system = scenes.single_spring()
    live = msprings.interact(system)
    sent = recording(live)
    live.dt.value = 1.01 * system.critical_dt("symplectic_euler")
    live.play.value = True
    frames = 0
    while live.player.playing:
        live.show["trace"].value = not live.show["trace"].value  # the lab publishes between frames
        live.player.pump()
        if sent:
            ack(live, sent[-1][0])
        frames += 1
        assert frames < 5000, "symplectic Euler above its critical step should blow up"
    assert live.lab.blown_up and "last sane frame" in live.message.value
    streamed = [(content, buffers) for content, buffers in sent if buffers]
    last, buffers = streamed[-1]
    assert live.view.positions == buffers[0] and live.view.strain == buffers[1]
    assert live.view.status["time"] == last["t"] == live.lab._sane["time"] < system.t
    history = np.frombuffer(live.view.history, "<f4").reshape(-1, 6)
    assert history[-1, 0] == np.float32(last["t"])
