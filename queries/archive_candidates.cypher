// name: archive_candidates
// description: The memories the archivist would archive now, as `lifecycle evaluate` and `lifecycle report` see them: its archive rule on today's decayed importance, with the store's thresholds and half-lives.
// param: now TIMESTAMP = now
// param: age_days DOUBLE = settings.archive_age_days
// param: importance DOUBLE = settings.archive_importance_threshold
// param: accesses INT64 = settings.archive_access_threshold
// param: promote_accesses INT64 = settings.promotion_access_threshold
// param: promote_importance DOUBLE = settings.promotion_importance_threshold
// param: promote_references INT64 = settings.cross_reference_threshold
// param: min_drop DOUBLE = settings.decay_min_drop
// param: half_life_working DOUBLE = settings.half_life.working
// param: half_life_episodic DOUBLE = settings.half_life.episodic
// param: half_life_semantic DOUBLE = settings.half_life.semantic
// param: half_life_procedural DOUBLE = settings.half_life.procedural
// param: half_life_identity DOUBLE = settings.half_life.identity
// param: half_life_note DOUBLE = settings.half_life.note
// param: owner STRING = ""
// The lifecycle manager's order: importance decays first (original * 0.5^(idle days /
// half-life), unless tagged critical or permanent, and only by at least min_drop), then
// the rule: old, unimportant and unused, or tagged deprecated; an episodic memory that a
// promotion rule also fits goes to review instead. References count distinct memories
// of the same owner.
MATCH (m:Memory)
WHERE m.status = "active" AND ($owner = "" OR m.owner = $owner)
OPTIONAL MATCH (a:Memory)-[r:REFERENCES]->(m)
WHERE r.gone IS NULL AND a.id <> m.id AND coalesce(a.owner, "") = coalesce(m.owner, "")
WITH m, count(DISTINCT a.id) AS references,
     to_epoch_ms($now) * 1000 + date_part("microsecond", $now) % 1000 AS now_us,
     list_contains(m.tags, "critical") OR list_contains(m.tags, "permanent") AS kept
WITH m, references, kept,
     (now_us - to_epoch_ms(m.created) * 1000 - date_part("microsecond", m.created) % 1000)
       / 86400000000.0 AS age,
     (now_us - to_epoch_ms(coalesce(m.last_accessed, m.created)) * 1000
       - date_part("microsecond", coalesce(m.last_accessed, m.created)) % 1000)
       / 86400000000.0 AS idle,
     CASE m.kind WHEN "working" THEN $half_life_working WHEN "episodic" THEN $half_life_episodic
                 WHEN "semantic" THEN $half_life_semantic
                 WHEN "procedural" THEN $half_life_procedural
                 WHEN "identity" THEN $half_life_identity ELSE $half_life_note END AS half_life
WITH m, references, kept, CASE WHEN age > 0.0 THEN age ELSE 0.0 END AS age,
     // "WHEN kept = true": a bare boolean variable as a CASE's condition made Kuzu 0.11
     // mix up rows (measured: 4 of 167 ids repeated, kept memories decayed)
     CASE WHEN kept = true THEN m.importance
          ELSE m.original_importance * pow(0.5, CASE WHEN idle > 0.0 THEN idle ELSE 0.0 END
                                                / half_life) END AS target
WITH m, references, kept, age,
     CASE WHEN abs(m.importance - target) >= $min_drop THEN target ELSE m.importance END
       AS importance
WITH m, importance,
     (age >= $age_days AND importance < $importance AND m.access_count <= $accesses)
       OR list_contains(m.tags, "deprecated") AS archive,
     m.access_count >= $promote_accesses OR importance >= $promote_importance OR kept
       OR references >= $promote_references AS promote
WHERE archive AND NOT (m.kind = "episodic" AND promote)
RETURN m.id AS id, m.created AS created, importance, m.importance AS stored_importance,
       m.kind AS kind, m.text AS text
ORDER BY created, id
