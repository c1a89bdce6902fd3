-- title: In uninterruptible sleep {share_pct} of its busy threads' time (disk I/O, page faults, the kernel's locks)
-- minimum: 0.10
-- next: microscope report {capture} --metric offcpu --by-state --tree
-- Off CPU in state D: the kernel waits for a device or a lock of its own
-- on the thread's behalf. Share: that time over the busy threads' time.
SELECT sum(w.uninterruptible) * 1.0 / sum(w.life) AS share,
       duration_text(sum(w.uninterruptible)) AS waited
FROM thread_window w
WHERE w.busy AND w.life > 0
HAVING sum(w.uninterruptible) > 0
