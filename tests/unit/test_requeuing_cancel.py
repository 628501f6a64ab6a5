"""A run dead-letters is requeueing is told apart from a cancelled one by the Cancelling before its Cancelled
states: the worker's cancellation and the flow-run process may each store a Cancelled, so the inbox and the stuck-run
sweep look past every trailing Cancelled, not only the last state's predecessor."""

from __future__ import annotations

from prefect.states import Cancelled, Cancelling, Crashed, Running, Scheduled

from clausegate.ops.dead_letters import REQUEUING
from clausegate.ops.stuck_runs import requeuing_cancel

STOPPING = Cancelling(message=f"{REQUEUING}: stopping the hung attempt 1 through its worker")


def test_the_requeues_cancelling_is_found_past_every_trailing_cancelled() -> None:
    assert requeuing_cancel([Running(), Crashed(), STOPPING, Cancelled()]) is STOPPING
    assert requeuing_cancel([Running(), Crashed(), STOPPING, Cancelled(), Cancelled()]) is STOPPING


def test_any_other_cancel_is_a_cancel() -> None:
    by_user = Cancelling(message="cancelled by the sender")
    assert requeuing_cancel([Running(), by_user, Cancelled(), Cancelled()]) is None
    assert requeuing_cancel([Running(), Cancelled()]) is None
    assert requeuing_cancel([Cancelled(), Cancelled()]) is None
    assert requeuing_cancel([]) is None


def test_a_cancelling_not_yet_followed_by_cancelled_or_already_requeued_is_not_this_moment() -> None:
    assert requeuing_cancel([Running(), Crashed(), STOPPING]) is None  # the inbox reads the Cancelling itself
    assert requeuing_cancel([Running(), Crashed(), STOPPING, Cancelled(), Scheduled()]) is None


def test_a_view_of_the_cancelled_state_reads_the_history_up_to_it() -> None:
    """The inbox read the run Cancelled; the requeue's Scheduled may be stored before it reads the history."""
    cancelled = Cancelled()
    history = [Running(), Crashed(), STOPPING, cancelled, Scheduled()]
    assert requeuing_cancel(history, as_of=cancelled.id) is STOPPING
    assert requeuing_cancel(history) is None
