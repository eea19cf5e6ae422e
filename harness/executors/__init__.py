"""Executors: who answers a run's missing requests. The runner opens the response stores and scores; an executor
only turns missing instances into stored responses, block by block.

* ``local`` (:mod:`harness.executors.local`): this process loads the model and answers the blocks in order; with
  ``--workers N``, N child processes on this machine answer them (:mod:`harness.executors.processes`).
* ``ray`` (:mod:`harness.executors.ray_driver`): Ray actors, one per worker, each holding a loaded model.

Workers (processes or actors) answer blocks sent by this process, which alone writes the stores; both pools run the
same driver loop (:mod:`harness.executors.pool`; see ``docs/distributed.md``). All of them cut the same fixed blocks
(:mod:`harness.executors.blocks`) and build the same requests with the same seeds, so where a block is answered
cannot change a number.

The layers, each importing only those above it: :mod:`~harness.executors.base` (the options and what answering
returns), :mod:`~harness.executors.blocks` (the unit of work), :mod:`~harness.executors.worker` (a worker holding a
model), :mod:`~harness.executors.local` and :mod:`~harness.executors.pool` with its backends, and
:mod:`~harness.executors.dispatch` (which one answers). This package only re-exports what the runner and the
command line use; no module of it imports the package itself.
"""

from harness.executors.base import EXECUTORS, PLACEMENT_SECONDS, Answered, AnswerJob, ExecutorOptions
from harness.executors.dispatch import answer_missing

__all__ = [
    "EXECUTORS",
    "PLACEMENT_SECONDS",
    "AnswerJob",
    "Answered",
    "ExecutorOptions",
    "answer_missing",
]
