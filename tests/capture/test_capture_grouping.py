"""Multi-line blocks become one event: tracebacks, stack traces, indented continuations."""

from __future__ import annotations

import traceback

from flightlog.capture import CaptureConfig, CapturePipeline

from .conftest import Capture


def python_traceback(chained: str | None = None) -> str:
    """A real traceback printed by Python, optionally with a chained exception."""

    def inner() -> None:
        int("x")

    try:
        try:
            inner()
        except ValueError as exc:
            if chained == "cause":
                raise RuntimeError("loader failed") from exc
            if chained == "context":
                raise KeyError("missing")  # noqa: B904 - the implicit chain is the point
            raise
    except Exception as exc:
        return "".join(traceback.format_exception(exc))
    raise AssertionError("unreachable")


def messages(events: list[dict]) -> list[str]:
    return [e["message"] for e in events]


def test_python_traceback_is_one_error_event_with_the_whole_text(capture: Capture) -> None:
    tb = python_traceback()
    events = capture(b"starting\n" + tb.encode() + b"after the crash\n")
    assert messages(events) == ["starting", tb.rstrip("\n"), "after the crash"]
    crash = events[1]
    assert crash["level"] == 40
    assert crash["fields"] == {
        "block": "python_traceback",
        "exception": "ValueError",
        "exception_message": "invalid literal for int() with base 10: 'x'",
    }


def test_chained_tracebacks_stay_together(capture: Capture) -> None:
    for chained, phrase in (
        ("cause", "The above exception was the direct cause of the following exception:"),
        ("context", "During handling of the above exception, another exception occurred:"),
    ):
        tb = python_traceback(chained)
        assert phrase in tb
        events = capture(tb.encode(), b"next\n")
        assert messages(events) == [tb.rstrip("\n"), "next"]
        assert events[0]["level"] == 40


def test_traceback_split_across_many_reads_is_still_one_event(capture: Capture) -> None:
    tb = python_traceback("cause").encode()
    chunks = [tb[i : i + 7] for i in range(0, len(tb), 7)] + [b"later\n"]
    assert messages(capture(*chunks)) == [tb.decode().rstrip("\n"), "later"]


def test_blank_line_after_a_traceback_that_does_not_chain_is_its_own_event(
    capture: Capture,
) -> None:
    tb = 'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\nValueError: x\n'
    events = capture(tb.encode() + b"\nretrying\n")
    assert messages(events) == [tb.rstrip("\n"), "", "retrying"]


def test_a_data_loader_worker_s_original_traceback_stays_with_its_parent(capture: Capture) -> None:
    """torch re-raises a worker's exception with the worker's traceback in its message
    ("Original Traceback (most recent call last):"): one event, so the cause is read with it."""
    tb = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 11, in <module>\n'
        "    for batch in loader:\n"
        "RuntimeError: Caught UnicodeDecodeError in DataLoader worker process 0.\n"
        "Original Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 374, in _worker_loop\n'
        "    data = fetcher.fetch(index)\n"
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 3: invalid continuation byte\n"
    )
    events = capture(tb.encode() + b"\nnext\n")
    assert messages(events) == [tb.rstrip("\n"), "", "next"]
    assert events[0]["fields"]["exception"] == "UnicodeDecodeError"


def test_exception_group_is_one_event(capture: Capture) -> None:
    group = (
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "eg.py", line 2, in <module>\n'
        "  | ExceptionGroup: eg (2 sub-exceptions)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | ValueError: a\n"
        "    +---------------- 2 ----------------\n"
        "    | TypeError: b\n"
        "    +------------------------------------\n"
    )
    events = capture(b"epoch 1\n" + group.encode() + b"done\n")
    assert messages(events) == ["epoch 1", group.rstrip("\n"), "done"]
    assert events[1]["level"] == 40


def test_java_stack_trace_is_one_event(capture: Capture) -> None:
    trace = (
        'Exception in thread "main" java.lang.IllegalStateException: boom\n'
        "\tat com.example.App.run(App.java:42)\n"
        "\tat com.example.App.main(App.java:10)\n"
        "Caused by: java.io.IOException: disk full\n"
        "\tat com.example.Io.write(Io.java:7)\n"
        "\t... 2 more\n"
    )
    events = capture(trace.encode() + b"shutdown hook ran\n")
    assert messages(events) == [trace.rstrip("\n"), "shutdown hook ran"]
    assert events[0]["level"] == 40
    assert events[0]["fields"]["exception"] == "java.lang.IllegalStateException"


def test_logged_java_exception_becomes_a_stack_trace_when_frames_follow(capture: Capture) -> None:
    trace = "java.lang.RuntimeException: x\n    at a.b.C.d(C.java:1)\nCaused by: java.lang.Error: y\n    at q.W.e(W.java:2)\n"
    events = capture(trace.encode() + b"after\n")
    assert messages(events) == [trace.rstrip("\n"), "after"]
    assert events[0]["level"] == 40 and events[0]["fields"]["block"] == "java_stacktrace"


def test_cpp_terminate_and_gdb_backtrace_are_grouped(capture: Capture) -> None:
    terminate = "terminate called after throwing an instance of 'std::runtime_error'\n  what():  boom\n"
    gdb = (
        "#0  0x00007ffff7a42428 in __GI_raise (sig=sig@entry=6) at ../sysdeps/raise.c:54\n"
        "#1  0x00007ffff7a4402a in __GI_abort () at abort.c:89\n"
        "#2  0x0000000000400b3d in main () at crash.cc:5\n"
    )
    events = capture(terminate.encode() + gdb.encode() + b"(gdb) quit\n")
    assert messages(events) == [terminate.rstrip("\n"), gdb.rstrip("\n"), "(gdb) quit"]
    assert [e["level"] for e in events] == [40, 40, 20]


def test_glibc_and_abseil_crash_reports_are_grouped(capture: Capture) -> None:
    glibc = (
        "*** Error in `./train': double free or corruption (fasttop): 0x0000000001c2b010 ***\n"
        "======= Backtrace: =========\n"
        "/lib/x86_64-linux-gnu/libc.so.6(+0x777e5)[0x7f3b2c6f77e5]\n"
        "./train[0x400b3d]\n"
        "======= Memory map: ========\n"
        "00400000-00401000 r-xp 00000000 08:01 1234 /tmp/train\n"
    )
    absl = "*** SIGSEGV received at time=1700000000 on cpu 3 ***\nPC: @     0x7f8b2 (unknown)  raise\n    @     0x55d8 main\n"
    events = capture(glibc.encode() + absl.encode() + b"bye\n")
    assert messages(events) == [glibc.rstrip("\n"), absl.rstrip("\n"), "bye"]
    assert events[0]["level"] == 40 and events[1]["level"] == 40


def test_go_panic_and_fatal_python_error_are_grouped(capture: Capture) -> None:
    panic = "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()\n\t/app/main.go:5 +0x1d\nexit status 2\n"
    fatal = 'Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n  File "x.py", line 3 in f\n'
    events = capture(panic.encode() + fatal.encode() + b"after\n")
    assert messages(events) == [panic.rstrip("\n"), fatal.rstrip("\n"), "after"]
    assert events[0]["level"] == 50 and events[1]["level"] == 50


def test_a_traceback_written_right_after_a_bar_without_its_newline_is_one_event(capture: Capture) -> None:
    """Issue 29: a bar left open when the workload dies (tqdm without ``close()``, a cursor move
    of a nested bar) puts the traceback's header on the bar's line; the bar stays progress."""
    tb = python_traceback()
    bar = "\r 60%|██████    | 3/5 [00:00<00:00, 24.93it/s]"
    events = capture(
        b"\r  0%|          | 0/5 [00:00<?, ?it/s]" + bar.encode() + b"\x1b[A",
        tb.encode(),
        b"\r 60%|######    | 3/5 [00:01<00:00]\n",  # the bar closed at exit, after the traceback
    )
    assert messages(events) == [bar[1:], tb.rstrip("\n"), " 60%|######    | 3/5 [00:01<00:00]"]
    assert [e["level"] for e in events] == [20, 40, 20]
    assert events[1]["fields"]["exception"] == "ValueError"
    # the header after the bar cleared (tqdm's blank refresh), the bar in the same chunk
    events = capture(b"\r 10%|#   | 1/10\r" + b" " * 20 + b"\r" + tb.encode() + b"next\n")
    assert messages(events) == [tb.rstrip("\n"), "next"]
    assert events[0]["level"] == 40


def test_indented_lines_continue_the_previous_event_of_the_same_stream(capture: Capture) -> None:
    out = b"model:\n  name: resnet50\n  layers: 50\ntrainer:\n\tmax_epochs: 10\nsummary\n"
    assert messages(capture(out)) == [
        "model:\n  name: resnet50\n  layers: 50",
        "trainer:\n\tmax_epochs: 10",
        "summary",
    ]


def test_continuation_across_chunks_and_the_level_of_the_head(capture: Capture) -> None:
    events = capture(b"ERROR disk slow\n", b"  device sda\n", b"  queue 12\nok\n")
    assert messages(events) == ["ERROR disk slow\n  device sda\n  queue 12", "ok"]
    assert events[0]["level"] == 40


def test_streams_are_grouped_independently() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}))
    batch = pipeline.feed("stdout", b"epoch 1\n", 1.0)
    batch.extend(pipeline.feed("stderr", b"  not a continuation of stdout\n", 1.1))
    batch.extend(pipeline.feed("stdout", b"  loss 0.5\n", 1.2))
    batch.extend(pipeline.close(2.0))
    by_stream = {(e["stream"], e["message"]) for e in batch.events()}
    assert by_stream == {
        ("stdout", "epoch 1\n  loss 0.5"),
        ("stderr", "  not a continuation of stdout"),
    }


def test_a_pending_block_is_stored_after_group_idle_of_quiet() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}, group_idle=0.5))
    tb = b'Traceback (most recent call last):\n  File "t.py", line 1\nValueError: x\n'
    assert len(pipeline.feed("stderr", tb, 10.0)) == 0
    assert len(pipeline.poll(10.3)) == 0
    stored = pipeline.poll(10.6)
    assert stored.message == [tb.decode().rstrip("\n")]
    assert stored.time == [10.0]  # the time of the chunk that completed its first line
    assert len(pipeline.close(11.0)) == 0


def test_the_last_plain_line_is_held_only_until_the_next_line_decides() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}))
    assert pipeline.feed("stdout", b"a\nb\n", 1.0).message == ["a"]
    assert pipeline.feed("stdout", b"c\n", 1.1).message == ["b"]
    assert pipeline.poll(2.0).message == ["c"]


def test_an_endless_indented_listing_is_cut_into_bounded_events(capture: Capture) -> None:
    listing = b"table:\n" + b"".join(b"  row %05d %s\n" % (i, b"x" * 40) for i in range(200))
    events = capture(listing, max_line_bytes=1024)
    assert len(events) > 1
    assert all(len(e["message"]) <= 4 * 1024 + 60 for e in events)
    assert sum(e["message"].count("row ") for e in events) == 200


def test_events_carry_attempt_rank_and_stream(capture: Capture) -> None:
    events = capture(b"hello\n", attempt=3, rank=1, stream="stderr")
    assert events == [
        {
            "time": 1000.0,
            "stream": "stderr",
            "level": 20,
            "component": None,
            "message": "hello",
            "fields": None,
            "rank": 1,
            "attempt": 3,
            "stage": None,
        }
    ]


def test_a_ray_task_s_traceback_in_its_wrapper_s_message_stays_with_it(capture: Capture) -> None:
    """Ray re-raises a task's exception as ``RayTaskError(KeyError)`` (an actor's as
    ``ActorDiedError``) with the task's frames in its message and the task's own exception line
    last, at the margin. That line was an event of its own: the diagnosis read the wrapper's
    words ("ray::featurize() (pid=…)") as the ``KeyError``'s message and never saw ``'ts'``
    (data_error 0.30 on a complete Ray job; issue 29). Printed by a real Ray 2 job."""
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/jobs/featurize.py", line 27, in <module>\n'
        "    mean_hour = ray.get(ref)\n"
        '  File "/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 1053, in get_objects\n'
        "    raise value.as_instanceof_cause()\n"
        "ray.exceptions.RayTaskError(KeyError): ray::featurize() (pid=18891, ip=192.0.2.2)\n"
        '  File "/jobs/featurize.py", line 20, in featurize\n'
        '    hours = [(r["ts"] // 3600) % 24 for r in rows]\n'
        "              ~^^^^^^\n"
        "KeyError: 'ts'\n"
    )
    events = capture(tb.encode() + b"shard 3 done\n")
    assert messages(events) == [tb.rstrip("\n"), "shard 3 done"]
    assert events[0]["fields"]["exception"] == "KeyError"
