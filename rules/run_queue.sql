-- title: Waiting for a CPU {share_pct} of its busy threads' time: more runnable threads than CPUs ({waiting_thread} waited most)
-- minimum: 0.15
-- next: microscope report {capture} --metric offcpu --by-state
-- CPU contention: runnable, not running, because other tasks (of this
-- program or others) held the CPUs. Share: time on run queues (schedstat)
-- over the busy threads' time in the window, less what their cgroup's
-- quota throttled (the throttling rule's).
SELECT max(0, sum(w.run_delay) - min(sum(w.run_delay),
                                     coalesce((SELECT max(throttled_ns) FROM cgroup_window), 0)))
         * 1.0 / sum(w.life) AS share,
       (SELECT name || ' (tid ' || tid || ')' FROM thread_window WHERE busy
        ORDER BY run_delay DESC LIMIT 1) AS waiting_thread,
       duration_text(sum(w.run_delay)) AS run_delay,
       duration_text(sum(w.on_cpu)) AS on_cpu,
       count(*) AS threads
FROM thread_window w
WHERE w.busy AND w.life > 0
HAVING count(*) > 0
