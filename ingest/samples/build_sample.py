"""Write the shipped sample corpus: ``python -m ingest.samples.build_sample``.

A fictional agent, Wren, keeps memories of its work for Nadia Okafor across four projects
(orchard: a web app; greenhouse: soil sensors; thesis: Nadia's research; home) and a few
for a second user, Tomás. Deterministic: the same file every run (seeded generator).
It covers all six kinds, the four UMP statuses, supersede chains, wiki pointers and id
cross-references in text, unknown fields, null versus absent, and mixed timestamp styles,
so the corpus exercises the importer's round trip as well as recall and the lifecycle.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("agent_memories.ump.json")
NADIA = "did:key:z6MkwrenNadiaOkafor7h3kq9"
TOMAS = "did:key:z6MkwrenTomasRuiz2p8d4m"
#: The corpus' "today": the demo's clock is set here so ages mean something.
AS_OF = datetime(2026, 7, 15, 18, 0, tzinfo=UTC)
START = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)

IDENTITY = [
    ("Prefers TypeScript", "Nadia prefers TypeScript over JavaScript for anything with more "
     "than one file.", ["preferences", "critical"]),
    ("Answer style", "Nadia likes concise answers: code first, explanation after, no "
     "apologies.", ["preferences"]),
    ("Time zone", "Nadia works from Lagos, West Africa Time (UTC+1); meetings before 09:00 "
     "WAT are off limits.", ["schedule"]),
    ("Editor", "Nadia uses Neovim with the LazyVim distribution and tmux.", ["tools"]),
    ("Cat", "Nadia's cat is called Biscuit; she mentions him when a build is slow.",
     ["personal"]),
    ("Coffee", "Nadia drinks one flat white in the morning and nothing with caffeine after "
     "14:00.", ["personal"]),
    ("Languages", "Nadia speaks English, Yoruba and conversational French.", ["personal"]),
    ("Review habit", "Nadia reviews pull requests in the evening and wants a summary of "
     "risky changes first.", ["workflow"]),
    ("Commit style", "Nadia wants conventional commits (feat:, fix:, chore:) with a body "
     "that says why.", ["workflow", "permanent"]),
    ("Testing preference", "Nadia prefers property-based tests with Hypothesis for parsers "
     "and fast-check for TypeScript.", ["testing", "preferences"]),
    ("Notifications", "Nadia does not want Slack pings for CI failures on draft PRs.",
     ["workflow"]),
    ("Dark mode", "Nadia uses a dark theme everywhere; screenshots should be dark too.",
     ["preferences"]),
    ("Accessibility", "Nadia cares about accessibility: every orchard page must pass axe "
     "checks.", ["orchard", "critical"]),
    ("Running", "Nadia runs 5 km on Tuesday and Saturday mornings; no calls then.",
     ["schedule", "personal"]),
    ("University", "Nadia is a PhD candidate at the University of Lagos, supervised by "
     "Prof. Adeyemi.", ["thesis"]),
    ("Budget", "Nadia's cloud budget for side projects is 40 USD a month.", ["budget"]),
    ("Laptop", "Nadia's laptop is a 2023 ThinkPad X1 Carbon running Fedora 40.", ["tools"]),
    ("Python style", "Nadia formats Python with ruff and type-checks with mypy --strict.",
     ["tools", "preferences"]),
    ("Reading", "Nadia reads papers on Sunday afternoons and keeps notes in Zotero.",
     ["thesis"]),
    ("Travel", "Nadia travels to Ibadan every second Friday for lab work.", ["schedule"]),
]

SEMANTIC = [
    ("Orchard stack", "Orchard's front end is TypeScript with SvelteKit; the API is Rust "
     "with axum.", ["orchard", "architecture"]),
    ("Orchard auth", "Orchard signs users in with passkeys (WebAuthn) and falls back to "
     "email magic links.", ["orchard", "auth"]),
    ("Orchard search", "Orchard's search combines PostgreSQL full-text search with pgvector "
     "similarity.", ["orchard", "search"]),
    ("Orchard queue", "Orchard runs background jobs on a Redis-backed queue with three "
     "workers.", ["orchard", "jobs"]),
    ("Orchard CDN", "Orchard serves images through Cloudflare R2 with a 30-day cache.",
     ["orchard", "infra"]),
    ("Orchard repo", "Orchard's code lives in github.com/nadia-okafor/orchard, default "
     "branch main.", ["orchard"]),
    ("Orchard metrics", "Orchard exports Prometheus metrics on /metrics; Grafana dashboards "
     "live in the infra repo.", ["orchard", "observability"]),
    ("Orchard SLO", "Orchard's API SLO is 99.5% of requests under 300 ms over 30 days.",
     ["orchard", "observability", "critical"]),
    ("Greenhouse sensors", "Greenhouse has 24 capacitive soil-moisture sensors on ESP32 "
     "boards.", ["greenhouse", "hardware"]),
    ("Greenhouse MQTT", "Greenhouse sensors publish to MQTT topic greenhouse/<bed>/moisture "
     "every 60 seconds.", ["greenhouse", "mqtt"]),
    ("Greenhouse storage", "Greenhouse readings are stored in TimescaleDB with a 7-day raw "
     "retention and hourly rollups.", ["greenhouse", "storage"]),
    ("Greenhouse calibration", "Each moisture sensor is calibrated against dry soil (0%) "
     "and saturated soil (100%).", ["greenhouse", "hardware"]),
    ("Greenhouse alerts", "Greenhouse alerts when a bed stays below 25% moisture for two "
     "hours.", ["greenhouse", "alerts"]),
    ("Thesis topic", "Nadia's thesis models soil moisture dynamics with physics-informed "
     "neural networks.", ["thesis"]),
    ("Thesis data", "The thesis uses the greenhouse readings plus the FAO-56 "
     "evapotranspiration formula.", ["thesis", "greenhouse"]),
    ("Thesis chapters", "The thesis has five chapters; chapter 3 is the model, chapter 4 "
     "the field evaluation.", ["thesis"]),
    ("Home network", "The home network uses a UniFi gateway; the lab VLAN is 20.",
     ["home", "network"]),
    ("Home NAS", "The home NAS is a Synology DS920+ with nightly backups to Backblaze B2.",
     ["home", "backup"]),
    ("CI", "All repositories use GitHub Actions; orchard's pipeline takes about 11 minutes.",
     ["ci"]),
    ("Secrets", "Secrets are kept in 1Password and injected with op run; never in .env "
     "files.", ["security", "critical"]),
]

PROCEDURAL = [
    ("Deploy orchard", "To deploy orchard: run make release, wait for CI to go green, then "
     "fly deploy --app orchard-prod. → see [wiki/orchard/deploy-runbook]",
     ["orchard", "deploy"]),
    ("Roll back orchard", "To roll back orchard: fly releases --app orchard-prod, then fly "
     "deploy --image <previous image>. Tell Nadia before rolling back.", ["orchard", "deploy"]),
    ("Run orchard locally", "To run orchard locally: docker compose up db redis, then cargo "
     "run -p api and pnpm dev in web/.", ["orchard", "dev"]),
    ("Orchard migrations", "Write orchard migrations with sqlx migrate add; never lock the "
     "users table, add columns as nullable first.", ["orchard", "database"]),
    ("Rotate MQTT password", "To rotate the MQTT broker password: update 1Password, run "
     "ansible-playbook broker.yml, then reflash sensors with make flash-all.",
     ["greenhouse", "mqtt", "security"]),
    ("Flash a sensor", "To flash a greenhouse sensor: hold BOOT, run pio run -t upload -e "
     "esp32, release BOOT when writing starts.", ["greenhouse", "hardware"]),
    ("Recalibrate sensor", "To recalibrate a moisture sensor: measure dry and saturated "
     "readings, write them to calibration.yaml, restart the collector.",
     ["greenhouse", "hardware"]),
    ("Build thesis PDF", "To build the thesis PDF: latexmk -pdf main.tex in thesis/; "
     "figures are regenerated by make figures first.", ["thesis"]),
    ("Cite a paper", "To cite a paper in the thesis: add it to Zotero, export Better BibTeX "
     "to refs.bib, cite with \\citep{key}.", ["thesis"]),
    ("Restore NAS backup", "To restore from the NAS backup: Hyper Backup > Restore > pick "
     "the B2 task and a version; test on a scratch share first.", ["home", "backup"]),
    ("Review a PR", "When reviewing a PR for Nadia: list risky changes first, then tests "
     "missing, then style nits.", ["workflow"]),
    ("Triage CI failure", "To triage a CI failure: rerun once, read the first failing job's "
     "log, check whether main fails too before blaming the PR.", ["ci"]),
    ("Write release notes", "Release notes: group by feat/fix, link PRs, one line each, and "
     "a migration note when the schema changes.", ["workflow", "orchard"]),
    ("Add a grafana panel", "To add a Grafana panel: edit dashboards/orchard.json in the "
     "infra repo and open a PR; do not edit in the UI.", ["orchard", "observability"]),
    ("Renew TLS", "TLS certificates renew automatically on fly.io; for the NAS run "
     "acme.sh --renew -d nas.home.arpa.", ["home", "security"]),
]

NOTES = [
    ("Reading list", "Papers to read: Raissi 2019 on PINNs; Allen 1998 FAO-56; Vereecken "
     "2008 on soil moisture variability.", ["thesis"]),
    ("Wiki: deploy runbook", "The orchard deploy runbook lives in the wiki. → see "
     "[wiki/orchard/deploy-runbook]", ["orchard", "deploy"]),
    ("Wiki: sensor wiring", "Sensor wiring diagrams: → see [wiki/greenhouse/wiring]",
     ["greenhouse", "hardware"]),
    ("Gift idea", "Gift idea for Prof. Adeyemi: a copy of 'The Soil Will Save Us'.",
     ["thesis", "personal"]),
    ("Conference", "Deadline for the AgriAI workshop is 2026-09-01; page limit 8.",
     ["thesis", "deadline"]),
    ("Orchard ideas", "Ideas for orchard: offline mode with a service worker; CSV import of "
     "harvest logs.", ["orchard", "ideas"]),
    ("Greenhouse ideas", "Ideas for greenhouse: a solenoid valve per bed driven by the "
     "alert rule.", ["greenhouse", "ideas"]),
    ("Useful command", "jq '.[] | select(.kind==\"episodic\")' filters UMP exports by kind.",
     ["tools"]),
]

WORKING = [
    "Currently debugging flaky test test_sync_conflicts in orchard's API crate.",
    "Draft reply to Prof. Adeyemi about chapter 3 feedback is half written.",
    "Sensor bed-07 readings look stuck at 41%; suspect a loose connector.",
    "Investigating why pnpm install takes 3 minutes on CI; cache key may be wrong.",
    "Comparing TimescaleDB compression settings for the greenhouse hypertable.",
    "Writing the migration plan for orchard's harvest table split.",
    "Reading the axum 0.7 upgrade guide; extractors changed order.",
    "Checking whether the B2 lifecycle rule deletes old NAS versions after 90 days.",
]

# Facts that changed over time: each chain is oldest first.
CHAINS = [
    ("Orchard database", ["Orchard stores data in PostgreSQL 14 on a single fly.io volume.",
                          "Orchard stores data in PostgreSQL 15 with a read replica.",
                          "Orchard stores data in PostgreSQL 16 with pgvector 0.7 and a read "
                          "replica."], "semantic", ["orchard", "database"]),
    ("Orchard hosting", ["Orchard is hosted on Heroku hobby dynos.",
                         "Orchard is hosted on Render with autoscaling.",
                         "Orchard is hosted on fly.io in the jnb region."],
     "semantic", ["orchard", "infra"]),
    ("Axum version", ["Orchard's API uses axum 0.6.", "Orchard's API uses axum 0.7 after the "
                      "upgrade."], "semantic", ["orchard"]),
    ("MQTT broker", ["Greenhouse uses Mosquitto 1.6 as its MQTT broker.",
                     "Greenhouse uses Mosquitto 2.0 with per-sensor credentials."],
     "semantic", ["greenhouse", "mqtt"]),
    ("Thesis deadline", ["Thesis submission is due 2026-10-31.",
                         "Thesis submission moved to 2026-12-15.",
                         "Thesis submission is due 2027-01-31 after the extension."],
     "semantic", ["thesis", "deadline"]),
    ("Standup time", ["Nadia's standup with the orchard contributors is at 10:00 WAT.",
                      "Nadia's standup moved to 11:30 WAT on Mondays and Thursdays."],
     "identity", ["schedule"]),
    ("Deploy command", ["To deploy orchard run git push heroku main.",
                        "To deploy orchard run make release then fly deploy."],
     "procedural", ["orchard", "deploy"]),
    ("Sensor firmware", ["Greenhouse sensor firmware is version 1.2.",
                         "Greenhouse sensor firmware is version 1.3 with deep sleep."],
     "semantic", ["greenhouse", "hardware"]),
]

EPISODE_TEMPLATES = [
    ("orchard", "Deployed orchard {ver} to production; {detail}.", ["orchard", "deploy"]),
    ("orchard", "Orchard CI failed on {test}: {cause}. Fixed by {fix}.", ["orchard", "ci"]),
    ("orchard", "Paired with Nadia on orchard's {feature}; she wants {wish}.",
     ["orchard", "pairing"]),
    ("orchard", "Orchard incident: {incident}. Root cause {cause}; resolved in {minutes} "
     "minutes.", ["orchard", "incident"]),
    ("greenhouse", "Greenhouse bed-{bed:02d} dropped to {pct}% moisture; {action}.",
     ["greenhouse", "alerts"]),
    ("greenhouse", "Replaced the sensor on bed-{bed:02d}; {detail}.",
     ["greenhouse", "hardware"]),
    ("greenhouse", "Greenhouse collector restarted after {cause}.", ["greenhouse", "ops"]),
    ("thesis", "Nadia finished a draft of chapter {chapter} section {section}; {detail}.",
     ["thesis", "writing"]),
    ("thesis", "Meeting with Prof. Adeyemi: {feedback}.", ["thesis", "meeting"]),
    ("thesis", "Trained the PINN model run {run}: validation RMSE {rmse} on bed-{bed:02d}.",
     ["thesis", "experiments"]),
    ("home", "NAS backup to B2 {status} ({size} GB).", ["home", "backup"]),
    ("home", "Updated the UniFi gateway firmware to {fw}.", ["home", "network"]),
]
SLOTS: dict[str, list[Any]] = {
    "ver": ["v1.8.0", "v1.8.1", "v1.9.0", "v1.9.2", "v2.0.0", "v2.0.1", "v2.1.0"],
    "detail": ["no errors in the first hour", "p95 latency stayed under 180 ms",
               "one migration took 40 seconds", "the cache hit rate dropped for ten minutes",
               "readings look plausible again", "needed two tries because of a flaky upload",
               "Prof. Adeyemi asked for more figures", "she is unsure about the ablation"],
    "test": ["test_sync_conflicts", "test_passkey_login", "test_harvest_import",
             "e2e/search.spec.ts", "test_queue_retry"],
    "cause": ["a race in the retry logic", "an expired test certificate",
              "a timezone assumption (UTC vs WAT)", "Redis running out of memory",
              "a disk filling up with logs", "a changed upstream API", "a power cut"],
    "fix": ["pinning the clock in the test", "raising the Redis maxmemory",
            "rotating the certificate", "adding a retry with backoff", "reverting the PR"],
    "feature": ["harvest calendar", "search ranking", "passkey onboarding",
                "CSV export", "offline mode"],
    "wish": ["fewer clicks", "keyboard shortcuts", "a dark theme", "tests before the UI",
             "server-side rendering"],
    "incident": ["login failures for 12% of users", "search returning stale results",
                 "image uploads timing out", "the queue stalling"],
    "minutes": [7, 12, 18, 25, 41, 64],
    "bed": list(range(1, 25)),
    "pct": [14, 18, 21, 23, 24],
    "action": ["watered it by hand", "opened the valve for 10 minutes",
               "found the drip line blocked", "alert was a false positive"],
    "chapter": [2, 3, 4],
    "section": [1, 2, 3, 4],
    "feedback": ["tighten the related-work section", "add the ablation without physics loss",
                 "compare against the FAO-56 baseline", "shorten chapter 2 by a third"],
    "run": [f"r{n}" for n in range(11, 60)],
    "rmse": ["0.041", "0.038", "0.052", "0.035", "0.047", "0.033"],
    "status": ["completed", "completed", "completed", "failed, retried the next night"],
    "size": [212, 218, 225, 231, 240],
    "fw": ["4.0.6", "4.0.9", "4.1.2"],
}

TOMAS_MEMORIES = [
    ("identity", "Tomás prefers Go and writes tests with testify."),
    ("identity", "Tomás works from Madrid (CET) and starts at 08:00."),
    ("semantic", "Tomás's project ledgerline is a double-entry bookkeeping API in Go."),
    ("semantic", "Ledgerline stores transactions in SQLite with WAL mode."),
    ("procedural", "To release ledgerline: goreleaser release --clean after tagging vX.Y.Z."),
    ("procedural", "To run ledgerline tests: go test ./... -race -count=1."),
    ("episodic", "Tomás fixed a rounding bug in ledgerline's currency conversion."),
    ("episodic", "Tomás asked for a review of the ledgerline import parser."),
    ("note", "Tomás wants a CSV importer for bank statements in ledgerline."),
    ("working", "Sketching ledgerline's reconciliation screen."),
]


class _Ids:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def new(self) -> str:
        alphabet = "abcdefghijklmnopqrstuvwxyz234567"
        return "urn:ump:" + "".join(self._rng.choice(alphabet) for _ in range(26))


def _stamp(when: datetime, style: int) -> str:
    """Timestamps as real files have them: mostly milliseconds and Z, some not."""
    if style == 1:
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if style == 2:
        return (when + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.") + \
            f"{when.microsecond // 1000:03d}+01:00"
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def build() -> list[dict[str, Any]]:
    rng = random.Random(20260715)
    ids = _Ids(rng)
    records: list[dict[str, Any]] = []
    span = (AS_OF - START).total_seconds()

    def when(lo: float = 0.0, hi: float = 1.0) -> datetime:
        seconds = span * (lo + (hi - lo) * rng.random())
        moment = START + timedelta(seconds=seconds)
        return moment.replace(microsecond=rng.randrange(0, 1000) * 1000)

    def record(kind: str, subject: str | None, text: str, tags: list[str], *,
               created: datetime, owner: str = NADIA, project: str = "openclaw/workspace",
               status: str = "active", confidence: float | None = None,
               session: str | None = None) -> dict[str, Any]:
        style = rng.choices([0, 1, 2], weights=[8, 1, 1])[0]
        rec: dict[str, Any] = {
            "ump": "0.1",
            "id": ids.new(),
            "kind": kind,
            "body": {"subject": subject, "text": text} if subject else {"text": text},
            "scope": {"owner": owner, "project": project, "visibility": "private",
                      "tags": tags},
            "time": {"created": _stamp(created, style), "modified": _stamp(created, style),
                     "observed": _stamp(created, style), "valid_from": _stamp(created, style),
                     "valid_to": None},
            "lifecycle": {"status": status,
                          "confidence": confidence if confidence is not None
                          else round(rng.uniform(0.55, 1.0), 2)},
            "superseded_by": [],
            "provenance": {"agent": "wren", "source": "session",
                           "session_id": session or f"s-{created:%Y-%m-%d}-{rng.randint(1, 3)}"},
            "integrity": {"sha256": hashlib.sha256(text.encode()).hexdigest()},
        }
        records.append(rec)
        return rec

    for subject, text, tags in IDENTITY:
        record("identity", subject, text, tags, created=when(0.0, 0.5))
    for subject, text, tags in SEMANTIC:
        record("semantic", subject, text, tags, created=when(0.0, 0.8))
    procedures = {s: record("procedural", s, t, tags, created=when(0.0, 0.8))
                  for s, t, tags in PROCEDURAL}
    for subject, text, tags in NOTES:
        record("note", subject, text, tags, created=when(0.1, 0.9))
    for text in WORKING:
        record("working", None, text, ["scratch"], created=when(0.85, 1.0))

    # Supersede chains: older versions point at their replacement.
    for subject, texts, kind, tags in CHAINS:
        chain = []
        for n, text in enumerate(texts):
            lo = n / len(texts) * 0.9
            chain.append(record(kind, subject, text, tags,
                                created=when(lo, lo + 0.9 / len(texts))))
        for old, new in itertools.pairwise(chain):
            old["superseded_by"] = [new["id"]]

    # Episodes: one to three a day.
    day = START
    while day < AS_OF - timedelta(days=1):
        for _ in range(rng.choice([1, 2, 2, 3])):
            project, template, tags = rng.choice(EPISODE_TEMPLATES)
            values = {k: rng.choice(v) for k, v in SLOTS.items()}
            moment = day + timedelta(hours=rng.uniform(0, 12))
            moment = moment.replace(microsecond=rng.randrange(0, 1000) * 1000)
            record("episodic", None, f"{moment:%Y-%m-%d}: " + template.format(**values),
                   list(tags), created=moment, project=f"wren/{project}")
        day += timedelta(days=1)

    # Cross-references by id: episodes that followed a procedure say so.
    episodes = [r for r in records if r["kind"] == "episodic"]
    for rec in rng.sample(episodes, 18):
        proc = rng.choice(list(procedures.values()))
        rec["body"]["text"] += f" Followed {proc['body']['subject']} ({proc['id']})."

    for kind, text in TOMAS_MEMORIES:
        record(kind, None, text, ["ledgerline"], created=when(0.2, 1.0), owner=TOMAS,
               project="tomas/ledgerline")

    _assign_statuses(rng, records)
    _add_round_trip_quirks(rng, records)
    return records


def _assign_statuses(rng: random.Random, records: list[dict[str, Any]]) -> None:
    """About 50 candidates, 40 archived and 45 tombstoned, drawn from plausible kinds."""
    pool = [r for r in records if not r["superseded_by"] and r["scope"]["owner"] == NADIA]
    episodic = [r for r in pool if r["kind"] == "episodic"]
    rng.shuffle(episodic)
    for rec in episodic[:40]:
        rec["lifecycle"]["status"] = "archived"
    for rec in episodic[40:75]:
        rec["lifecycle"]["status"] = "tombstoned"
    others = [r for r in pool if r["lifecycle"]["status"] == "active"]
    rng.shuffle(others)
    for rec in others[:50]:
        rec["lifecycle"]["status"] = "candidate"
        rec["lifecycle"]["confidence"] = round(rng.uniform(0.3, 0.6), 2)
    for rec in others[50:60]:
        rec["lifecycle"]["status"] = "tombstoned"
    for rec in [r for r in records if r["kind"] == "working"][:4]:
        rec["lifecycle"]["status"] = "tombstoned"


def _add_round_trip_quirks(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for rec in rng.sample(records, 12):
        rec["superseded_by"] = None if not rec["superseded_by"] else rec["superseded_by"]
    for rec in rng.sample(records, 10):
        rec["time"].pop("valid_to")
    for rec in rng.sample(records, 8):
        rec["x_wren"] = {"pinned": rng.random() < 0.5, "mood": "focused"}
    for rec in rng.sample(records, 6):
        rec["body"]["format"] = "markdown"


def main() -> None:
    records = build()
    OUT.write_text(json.dumps(records, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(records)} records to {OUT}")


if __name__ == "__main__":
    main()
