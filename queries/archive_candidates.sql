-- archive_candidates.cypher over PostgreSQL's tables: the same parameters, rule and rows.
-- Ages and idle times are whole microseconds divided in double precision, as Kuzu does.
WITH measured AS (
  SELECT m.id, m.created, m.kind, m.text, m.importance AS stored, m.original_importance,
         m.access_count, m.tags,
         'critical' = ANY (m.tags) OR 'permanent' = ANY (m.tags) AS kept,
         (SELECT count(DISTINCT a.id)
            FROM edges r JOIN memories a ON a.id = r.src
           WHERE r.kind = 'references' AND r.dst = m.id AND a.id <> m.id
             AND coalesce(a.owner, '') = coalesce(m.owner, '')) AS "references",
         (extract(epoch FROM %(now)s - m.created) * 1000000)::bigint::double precision
           / 86400000000.0 AS age,
         (extract(epoch FROM %(now)s - coalesce(m.last_accessed, m.created)) * 1000000)
           ::bigint::double precision / 86400000000.0 AS idle,
         CASE m.kind WHEN 'working' THEN %(half_life_working)s
                     WHEN 'episodic' THEN %(half_life_episodic)s
                     WHEN 'semantic' THEN %(half_life_semantic)s
                     WHEN 'procedural' THEN %(half_life_procedural)s
                     WHEN 'identity' THEN %(half_life_identity)s
                     ELSE %(half_life_note)s END AS half_life
    FROM memories m
   WHERE m.status = 'active' AND (%(owner)s = '' OR m.owner = %(owner)s)
), halved AS (
  SELECT *, CASE WHEN age > 0.0 THEN age ELSE 0.0 END AS age_0,
         CASE WHEN idle > 0.0 THEN idle ELSE 0.0 END / half_life AS halvings
    FROM measured
), decayed AS (
  -- PostgreSQL refuses a product or power that underflows where Kuzu gives (nearly) 0:
  -- below the smallest normal double (2^-1022) the decayed importance is 0 here.
  SELECT *, CASE WHEN kept THEN stored
                 WHEN original_importance <= 0.0
                      OR halvings - ln(original_importance) / ln(2.0) >= 1022 THEN 0.0
                 ELSE original_importance * pow(0.5, halvings) END AS target
    FROM halved
), rated AS (
  SELECT *, CASE WHEN abs(stored - target) >= %(min_drop)s THEN target ELSE stored END
              AS importance
    FROM decayed
)
SELECT id, created, importance, stored AS stored_importance, kind, text
  FROM rated
 WHERE ((age_0 >= %(age_days)s AND importance < %(importance)s AND access_count <= %(accesses)s)
        OR 'deprecated' = ANY (tags))
   AND NOT (kind = 'episodic'
            AND (access_count >= %(promote_accesses)s OR importance >= %(promote_importance)s
                 OR kept OR "references" >= %(promote_references)s))
 ORDER BY created, id
