"""Where the daemon's events come from: files that appear (:mod:`.files`), the scheduler's view
of the running jobs (:mod:`.scheduler`), their learning curves (:mod:`.curves`), results that a
shared filesystem shows late (:mod:`.late_results`), the CLI's requests (:mod:`.requests`) and
the signals that stop the daemon (:mod:`.signals`). Each reads; none ends a job: the loop hands
what they found to :class:`~spearmint_nn.daemon.job_ends.JobEnds`."""
