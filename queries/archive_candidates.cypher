// name: archive_candidates
// description: Active memories older than `age_days`, of low importance and never used (the archive rule).
// param: now TIMESTAMP
// param: age_days INT64 = 30
// param: importance DOUBLE = 0.3
MATCH (m:Memory)
WHERE m.status = "active" AND m.importance < $importance AND m.access_count = 0
  AND m.created <= $now - to_days($age_days)
RETURN m.id AS id, m.created AS created, m.importance AS importance, m.kind AS kind,
       m.text AS text
ORDER BY created
