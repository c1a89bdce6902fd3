-- title: {waker} held the others up: {waiters} threads' waits it ended were {share_pct} of their time
-- minimum: 0.30
-- next: microscope query {capture} "SELECT t.name, o.waker_name, count(*) AS waits, duration_text(sum(o.duration)) AS waited FROM off_cpu o JOIN threads t ON t.id = o.thread WHERE o.state = 'sleeping' GROUP BY 1, 2 ORDER BY sum(o.duration) DESC LIMIT 10"
-- One thread whose wake-ups end most of the other threads' sleeps: the
-- others wait for it (a lock it holds, work it hands out one at a time).
-- Share: the sleeps it ended, over the time of the threads that slept.
WITH sleeps AS (
  SELECT o.thread, o.waker_tid, o.waker_name,
         max(0, min(o.end, w.end) - max(o.start, w.start)) AS inside
  FROM off_cpu o JOIN thread_window w ON w.thread = o.thread AND w.busy
  WHERE o.state = 'sleeping' AND o.waker_tid IS NOT NULL AND o.waker_tid != w.tid
    AND o.end > w.start AND o.start < w.end
),
by_waker AS (
  SELECT waker_tid, waker_name, sum(inside) AS ended, count(DISTINCT thread) AS waiters
  FROM sleeps GROUP BY waker_tid
)
SELECT b.ended * 1.0 /
         (SELECT sum(life) FROM thread_window WHERE busy AND life > 0
          AND thread IN (SELECT thread FROM sleeps WHERE waker_tid = b.waker_tid)) AS share,
       b.waker_name || ' (tid ' || b.waker_tid || ')' AS waker, b.waiters,
       duration_text(b.ended) AS waited
FROM by_waker b
WHERE b.waiters >= 2
ORDER BY b.ended DESC
LIMIT 1
