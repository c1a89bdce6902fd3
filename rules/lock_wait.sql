-- title: Blocked on a lock {share_pct} of its busy threads' time ({waits} waits; woken most by {waker})
-- minimum: 0.15
-- next: microscope report {capture} --metric offcpu --tree --focus 'pthread_mutex_(timed|clock)?lock|__lll_lock_wait|pthread_rwlock|sem_(timed|clock)?wait'
-- Threads asleep in a lock's wait (a mutex, a rwlock, a semaphore), off
-- CPU until its holder let it go. Share: those intervals, within each
-- thread's window, over the busy threads' time. A condition variable's
-- wait is left to the other rules, and a mutex wait below CPython's eval
-- loop to the GIL's (take_gil holds one; threading.Lock is a semaphore).
WITH waits AS (
  SELECT o.*, max(0, min(o.end, w.end) - max(o.start, w.start)) AS inside
  FROM off_cpu o JOIN thread_window w ON w.thread = o.thread AND w.busy
  WHERE o.state = 'sleeping' AND o.end > w.start AND o.start < w.end
    AND stack_contains(o.stack, 'pthread_mutex_(timed|clock)?lock|__lll_lock_wait|pthread_rwlock_|sem_(timed|clock)?wait|__new_sem_wait')
    AND NOT stack_contains(o.stack, 'pthread_cond')
    AND NOT (stack_contains(o.stack, '_PyEval_EvalFrameDefault|PyEval_RestoreThread|take_gil')
             AND stack_contains(o.stack, 'pthread_mutex_(timed|clock)?lock|__lll_lock_wait'))
)
SELECT sum(inside) * 1.0 / (SELECT sum(life) FROM thread_window WHERE busy AND life > 0) AS share,
       count(*) AS waits,
       duration_text(sum(inside)) AS blocked,
       (SELECT coalesce(waker_name || ' (tid ' || waker_tid || ')', 'not known') FROM waits
        GROUP BY waker_tid ORDER BY sum(inside) DESC LIMIT 1) AS waker
FROM waits
HAVING count(*) > 0
