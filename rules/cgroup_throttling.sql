-- title: Throttled by its cgroup's CPU quota ({quota_us} us per {period_us} us) {share_pct} of its busy threads' time
-- minimum: 0.10
-- next: microscope query {capture} "SELECT scope, quota_us, period_us, periods, throttled_periods, duration_text(throttled_ns) AS throttled FROM cgroup_window WHERE periods IS NOT NULL"
-- The cgroup's quota, not the machine, held the threads back: they were
-- runnable and not allowed to run. Share: the cgroup's throttled time in
-- the window (at most the threads' run-queue time) over their time; the
-- run-queue rule takes the same time off its own.
SELECT min(c.throttled_ns, (SELECT sum(run_delay) FROM thread_window WHERE busy)) * 1.0 /
         (SELECT sum(life) FROM thread_window WHERE busy AND life > 0) AS share,
       c.scope AS cgroup,
       c.quota_us, c.period_us,
       c.throttled_periods || ' of ' || c.periods AS throttled_periods,
       duration_text(c.throttled_ns) AS throttled
FROM cgroup_window c
WHERE c.throttled_ns > 0
ORDER BY c.throttled_ns DESC
LIMIT 1
