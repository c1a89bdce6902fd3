-- title: On CPU {share_pct} of its busy threads' time, most in {function} ({function_share} of the samples)
-- minimum: 0.25
-- next: microscope report {capture} --tree --focus {focus}
-- The CPU is the bottleneck: the threads that did something ran most of
-- the window. Share: their time on CPU (schedstat) over their time in the
-- window; the function is the one with the most samples of its own.
SELECT sum(w.on_cpu) * 1.0 / sum(w.life) AS share,
       f.name AS function,
       printf('%.0f%%', f.self_percent) AS function_share,
       '^' || re_quote(f.name) || '$' AS focus,
       count(*) AS threads
FROM thread_window w
     LEFT JOIN (SELECT name, self_percent FROM function_costs ORDER BY self DESC LIMIT 1) f
WHERE w.busy AND w.life > 0
HAVING count(*) > 0
