-- title: Python threads waiting for the GIL {share_pct} of their time ({threads} threads: one runs Python at a time)
-- minimum: 0.15
-- next: microscope report {capture} --metric offcpu --threads --look python
-- CPython lets one thread of an interpreter run Python at a time; the
-- others wait for it in take_gil: on the GIL's condition variable (giving
-- up after the switch interval, 5 ms, to ask again) and on its mutex,
-- below the eval loop (or PyEval_RestoreThread, back from C code).
-- Share: the time asleep in those waits of the Python threads that ran
-- (on CPU a twentieth of their time) and waited there a tenth of it, over
-- those threads' time. (threading.Lock waits on a semaphore: the lock
-- rule's; a main thread joining its workers waits there, and hardly runs.)
WITH per AS (
  SELECT o.thread, sum(max(0, min(o.end, w.end) - max(o.start, w.start))) AS waited, w.life,
         w.on_cpu
  FROM off_cpu o JOIN thread_window w ON w.thread = o.thread AND w.busy AND w.life > 0
  WHERE o.state = 'sleeping'
    AND stack_contains(o.stack, '_PyEval_EvalFrameDefault|PyEval_RestoreThread|take_gil')
    AND stack_contains(o.stack, 'pthread_cond_(timed|clock)?wait|__pthread_cond_wait|pthread_mutex_(timed|clock)?lock|__lll_lock_wait')
  GROUP BY o.thread
),
waiting AS (SELECT * FROM per WHERE waited * 10 >= life AND on_cpu * 20 >= life)
SELECT sum(waited) * 1.0 / sum(life) AS share,
       count(*) AS threads,
       duration_text(sum(waited)) AS waiting
FROM waiting
HAVING count(*) > 0
