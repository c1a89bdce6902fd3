-- title: Blocked in {call}() {share_pct} of its busy threads' time ({calls} calls, most on fd {fd})
-- minimum: 0.15
-- next: microscope report {capture} --syscalls
-- Waiting for input or for a peer: reads, receives, polls, accepts, a
-- child's exit. Share: the slowest such call's time over the busy threads'
-- time (the calls' own durations, from entry to exit, within the window).
WITH calls AS (
  SELECT s.name, s.arg0,
         min(s.time + s.duration, w.end) - max(s.time, w.start) AS duration
  FROM syscalls s JOIN thread_window w ON w.thread = s.thread AND w.busy
  WHERE s.time < w.end AND s.time + s.duration > w.start AND s.name IN (
    'read', 'readv', 'pread64', 'preadv', 'preadv2', 'recvfrom', 'recvmsg', 'recvmmsg',
    'poll', 'ppoll', 'select', 'pselect6', 'epoll_wait', 'epoll_pwait', 'epoll_pwait2',
    'accept', 'accept4', 'connect', 'wait4', 'waitid', 'msgrcv', 'mq_timedreceive',
    'io_getevents', 'io_uring_enter', 'write', 'writev', 'sendto', 'sendmsg', 'fsync', 'fdatasync')
)
SELECT sum(duration) * 1.0 / (SELECT sum(life) FROM thread_window WHERE busy AND life > 0) AS share,
       name AS call, count(*) AS calls, duration_text(sum(duration)) AS blocked,
       (SELECT arg0 FROM calls c2 WHERE c2.name = calls.name GROUP BY arg0
        ORDER BY sum(duration) DESC LIMIT 1) AS fd
FROM calls
GROUP BY name
ORDER BY sum(duration) DESC
LIMIT 1
