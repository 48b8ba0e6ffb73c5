"""The read side's position as the API knows it (issue 15, 7): requests wait on it without a
thread each, and whoever learns a new position, from any thread, wakes exactly those it reaches."""

from __future__ import annotations

import asyncio
import threading

from projections.runner import AppliedPosition


def test_an_advance_from_another_thread_wakes_the_waiters_it_reaches_and_only_them() -> None:
    applied = AppliedPosition()

    async def scenario() -> tuple[list[bool], bool]:
        reached = [asyncio.ensure_future(applied.wait_async(n, 5)) for n in (1, 2, 3)]
        beyond = asyncio.ensure_future(applied.wait_async(4, 0.3))
        await asyncio.sleep(0.01)
        threading.Thread(target=applied.advance, args=(3,)).start()
        return list(await asyncio.gather(*reached)), await beyond

    woken, beyond = asyncio.run(scenario())
    assert woken == [True, True, True]
    assert beyond is False  # timed out: nothing reached 4
    assert not applied.waiting()


def test_a_position_reached_already_answers_at_once_and_give_up_answers_false() -> None:
    applied = AppliedPosition()
    applied.advance(7)

    async def scenario() -> tuple[bool, bool]:
        waiting = asyncio.ensure_future(applied.wait_async(8, 5))
        await asyncio.sleep(0.01)
        applied.give_up()  # the runner failed or stopped
        return await applied.wait_async(7, 5), await waiting

    assert asyncio.run(scenario()) == (True, False)
    assert applied.wait(7, 0) is True and applied.wait(9, 0.05) is False
