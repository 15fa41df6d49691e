"""The daemon's policies: each is handed what it needs and returns a decision as a value, and
none moves a job or writes a job file (tests/unit/daemon/test_job_ends_owner.py). Early stopping
(:mod:`.early_stopping`), the next attempt of an interrupted job (:mod:`.reattempts`), failures
before the first success (:mod:`.before_success`), the site's limits (:mod:`.site_limits`), how
many jobs may start (:mod:`.capacity`) and edits of config.json while running (:mod:`.live_config`)."""
