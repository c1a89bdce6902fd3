-- title: Sleeping {share_pct} of its busy threads' time in {call}() ({calls} calls)
-- minimum: 0.15
-- next: microscope report {capture} --syscalls
-- Time the program asked to sleep (nanosleep, clock_nanosleep): a poll
-- loop, a backoff, a rate limit. Share: those calls' time over the busy
-- threads' time.
SELECT sum(min(s.time + s.duration, w.end) - max(s.time, w.start)) * 1.0 /
         (SELECT sum(life) FROM thread_window WHERE busy AND life > 0) AS share,
       s.name AS call, count(*) AS calls,
       duration_text(sum(min(s.time + s.duration, w.end) - max(s.time, w.start))) AS slept
FROM syscalls s JOIN thread_window w ON w.thread = s.thread AND w.busy
WHERE s.name IN ('nanosleep', 'clock_nanosleep') AND s.time < w.end AND s.time + s.duration > w.start
GROUP BY s.name
ORDER BY sum(s.duration) DESC
LIMIT 1
