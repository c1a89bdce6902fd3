-- title: System call {call}() took {share_pct} of its busy threads' time ({calls} calls, {mean} each)
-- minimum: 0.10
-- next: microscope report {capture} --syscalls
-- A call made so often, or so costly, that its own time is a large part
-- of the threads' time, apart from the calls that wait (the blocked and
-- sleeping rules' calls, futex).
SELECT sum(min(s.time + s.duration, w.end) - max(s.time, w.start)) * 1.0 /
         (SELECT sum(life) FROM thread_window WHERE busy AND life > 0) AS share,
       s.name AS call, count(*) AS calls, duration_text(sum(s.duration) / count(*)) AS mean
FROM syscalls s JOIN thread_window w ON w.thread = s.thread AND w.busy
WHERE s.time < w.end AND s.time + s.duration > w.start AND s.name NOT IN (
  'read', 'readv', 'pread64', 'preadv', 'preadv2', 'recvfrom', 'recvmsg', 'recvmmsg', 'poll',
  'ppoll', 'select', 'pselect6', 'epoll_wait', 'epoll_pwait', 'epoll_pwait2', 'accept',
  'accept4', 'connect', 'wait4', 'waitid', 'msgrcv', 'mq_timedreceive', 'io_getevents',
  'io_uring_enter', 'write', 'writev', 'sendto', 'sendmsg', 'fsync', 'fdatasync', 'futex',
  'nanosleep', 'clock_nanosleep', 'rt_sigtimedwait', 'rt_sigsuspend', 'pause', 'sched_yield')
GROUP BY s.name
ORDER BY sum(s.duration) DESC
LIMIT 1
