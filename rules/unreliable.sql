-- title: {share_pct} of the samples have cut or lost stacks: the other findings may be incomplete ({cut} cut, {lost} lost)
-- minimum: 0.10
-- next: microscope report {capture} --flat
-- Stacks that end before their outermost frame (no unwind information,
-- the copied stack ran out) and samples the rings lost: where they fall
-- the call paths above are not known. Share: of all samples, kept or lost.
SELECT (cut + lost) * 1.0 / max(1, all_samples + lost) AS share, cut, lost
FROM (SELECT (SELECT count(*) FROM samples
              WHERE stack_end NOT IN ('complete', 'frame-pointer-end')) AS cut,
             (SELECT count(*) FROM samples) AS all_samples,
             -- Samples the kernel dropped (LOST_SAMPLES) and the rings' lost
             -- records, less those of tasks and mappings (not samples).
             (SELECT coalesce(sum(count) FILTER (WHERE kind = 'lost_samples'), 0)
                     + max(0, coalesce(sum(count) FILTER (WHERE kind = 'ring_lost_records'), 0)
                              - coalesce(sum(count) FILTER (WHERE kind = 'lost_task_records'), 0))
              FROM losses) AS lost)
