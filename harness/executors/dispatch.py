"""Which executor answers a run's missing requests: none when every response is stored, else Ray, a pool of local
processes, or this process, as :class:`~harness.executors.base.ExecutorOptions` says.

The executors are imported only when chosen, so a run in this process never imports Ray or multiprocessing.
"""

from __future__ import annotations

from harness.executors.base import Answered, AnswerJob
from harness.executors.blocks import anything_missing, stored_model_info


def answer_missing(job: AnswerJob) -> Answered:
    """Store a response for every instance of ``job.runs`` that has none, with the executor ``job.options`` names.

    A finished run (every response stored) asks no executor: no model loads, no cluster starts."""
    runs, options = job.runs, job.options
    if not anything_missing(runs):
        execution = {"executor": options.name, "blocks": {r.name: {"sent": 0} for r in runs}}
        return Answered(stored_model_info(runs), None, None, execution)
    if options.name == "ray":
        from harness.executors.ray_driver import answer_on_ray

        return answer_on_ray(job)
    if options.workers is not None:
        from harness.executors.processes import answer_in_processes

        return answer_in_processes(job)
    from harness.executors.local import answer_locally

    return answer_locally(job)
