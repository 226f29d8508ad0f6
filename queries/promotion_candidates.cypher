// name: promotion_candidates
// description: Active episodic memories that meet a promotion rule (as of the last lifecycle run's counts).
// param: access_threshold INT64 = 10
// param: importance_threshold DOUBLE = 0.8
// param: xref_threshold INT64 = 3
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.status = "active" AND m.kind = "episodic" AND ($owner = "" OR m.owner = $owner)
  AND (m.access_count >= $access_threshold OR m.importance >= $importance_threshold
       OR coalesce(m.xref_count, 0) >= $xref_threshold
       OR list_contains(m.tags, "critical") OR list_contains(m.tags, "permanent"))
RETURN m.id AS id, m.access_count AS accesses, m.importance AS importance,
       coalesce(m.xref_count, 0) AS xrefs, m.tags AS tags, m.text AS text
ORDER BY accesses DESC, importance DESC, id
