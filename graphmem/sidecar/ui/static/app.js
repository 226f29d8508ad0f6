// graphmem dashboard: one page, five views, data from /ui/api (same origin, no network
// beyond it). Text from the store is only ever set as text (never parsed as HTML).
"use strict";

const KIND_COLOURS = {episodic: "#4C78A8", semantic: "#F58518", procedural: "#54A24B",
  identity: "#B279A2", working: "#E45756", note: "#72B7B2"};
const PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2",
  "#EECA3B", "#FF9DA6", "#9D755D", "#BAB0AC"];
const SVG_NS = "http://www.w3.org/2000/svg";
const state = {session: null};

// -- DOM helpers ----------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
function s(tag, attrs, parent) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}
const fmt = (x, d = 3) => typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(d)) : (x ?? "");
const day = iso => iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC") : "";
const memoryLink = (id, label) => h("a", {href: "#/memory/" + encodeURIComponent(id),
  class: "mlink", "data-id": id}, label || id);
const page = () => document.getElementById("page");
function render(...children) {
  page().replaceChildren(...children.flat(Infinity).filter(x => x !== null && x !== undefined && x !== false));
  drawCharts();
}
function card(n, label, id) {
  return h("div", {class: "card", id}, h("div", {class: "n"}, fmt(n)), h("div", {class: "k"}, label));
}
function table(headers, rows, attrs) {
  // in a box of its own that scrolls sideways: a wide table never widens the page
  return h("div", {class: "scroll"}, h("table", attrs || {}, h("thead", {}, h("tr", {}, headers.map(x =>
    h("th", {class: /^(#|n|count|importance|score|rank|useful|ignored)$/.test(x) ? "num" : ""}, x)))),
    h("tbody", {}, rows.map(r => h("tr", {}, r.map(c =>
      h("td", {class: typeof c === "number" ? "num" : ""}, c instanceof Node ? c : fmt(c))))))));
}
// A long name shortened in its middle: its start and its end tell owners and ids apart.
function middle(text, max) {
  text = String(text ?? "");
  if (text.length <= max) return text;
  const head = Math.ceil((max - 1) / 2), tail = max - 1 - head;
  return text.slice(0, head) + "…" + (tail ? text.slice(-tail) : "");
}
const date = iso => iso ? iso.slice(0, 10) : "";
function toast(message, action) {
  const box = document.getElementById("toast");
  box.replaceChildren(h("span", {}, message));
  if (action) box.append(h("button", {type: "button", onclick: () => { box.hidden = true; action.run(); }}, action.label));
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, action ? 12000 : 4000);
}

// -- charts (SVG, drawn here) -------------------------------------------------------------
// A chart is drawn at the width of its box in CSS pixels (one SVG unit is one pixel, text
// stays 11 px), and drawn again when that width changes: its labels are measured in the
// page's font, shortened in the middle or thinned out until none overlaps another or
// leaves the chart.
const charts = new ResizeObserver(entries => entries.forEach(e => drawChart(e.target)));
function chartBox(draw, title) {
  const box = h("div", {class: "chart-box"});
  box.draw = draw;
  box.title = title;
  charts.observe(box);
  return box;
}
function drawChart(box) {
  const width = Math.floor(box.clientWidth);
  if (!width || width === box.drawnWidth) return;
  box.drawnWidth = width;
  const svg = s("svg", {class: "chart", role: "img", "aria-label": box.title || "chart"});
  box.replaceChildren(svg);  // in the page first, so that its text can be measured
  box.draw(svg, width);
}
const drawCharts = (root = page()) => root.querySelectorAll(".chart-box").forEach(drawChart);
function size(svg, width, height) {
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
}
function textWidth(svg, text) {
  const probe = s("text", {x: 0, y: -100}, svg);
  probe.textContent = text;
  const width = probe.getComputedTextLength();
  probe.remove();
  return width;
}
// ``text`` in ``node``, shortened in its middle until it is at most ``max`` wide.
function fit(node, text, max) {
  node.textContent = text;
  if (node.getComputedTextLength() <= max) return node;
  let lo = 1, hi = text.length - 1, best = "…";
  while (lo <= hi) {
    const keep = (lo + hi) >> 1, short = middle(text, keep + 1);
    node.textContent = short;
    if (node.getComputedTextLength() <= max) { best = short; lo = keep + 1; } else hi = keep - 1;
  }
  node.textContent = best;
  return node;
}
const boxesMeet = (a, b, gap) => a.x < b.x + b.width + gap && b.x < a.x + a.width + gap &&
  a.y < b.y + b.height && b.y < a.y + a.height;
function nothingYet(svg, width) {
  size(svg, width, 24);
  s("text", {x: 4, y: 16}, svg).textContent = "nothing yet";
}
function barChart(entries, opts = {}) {
  const data = Object.entries(entries).filter(([, v]) => v > 0);
  return chartBox((svg, width) => {
    if (!data.length) return nothingYet(svg, width);
    const rowH = 22, max = Math.max(...data.map(([, v]) => v));
    size(svg, width, data.length * rowH + 6);
    // the label column: as wide as the longest label, at most 40% of the chart
    const longest = Math.max(...data.map(([k]) => textWidth(svg, k)));
    const labelW = Math.min(longest + 10, Math.max(56, width * 0.4));
    const barMax = Math.max(8, width - labelW - textWidth(svg, fmt(max)) - 10);
    data.forEach(([k, v], i) => {
      const y = i * rowH + 3, w = Math.max(2, barMax * v / max);
      const row = s("g", {class: "bar"}, svg);
      s("title", {}, row).textContent = `${k}: ${v}`;
      fit(s("text", {x: labelW - 6, y: y + 13, "text-anchor": "end", class: "label"}, row), k, labelW - 8);
      s("rect", {x: labelW, y, width: w, height: rowH - 6, rx: 3,
        fill: (opts.colours && opts.colours[k]) || PALETTE[i % PALETTE.length]}, row);
      s("text", {x: labelW + w + 4, y: y + 13, class: "value"}, row).textContent = fmt(v);
    });
  }, opts.title);
}
function columnChart(labels, series, opts = {}) {
  // series: [{name, values, colour}], stacked columns; plus an optional cumulative line.
  return chartBox((svg, width) => {
    if (!labels.length) return nothingYet(svg, width);
    const totals = labels.map((_, i) => series.reduce((a, x) => a + x.values[i], 0));
    const cumulative = []; totals.reduce((a, v, i) => (cumulative[i] = a + v), 0);
    const max = Math.max(1, ...totals), lineMax = Math.max(1, ...cumulative);
    const height = 200, top = opts.cumulative ? 24 : 10, bottom = 24, right = 6;
    const left = textWidth(svg, fmt(max)) + 10;
    const plotW = width - left - right, plotH = height - bottom - top, step = plotW / labels.length;
    const y = v => top + plotH - plotH * v / max, yLine = v => top + plotH - plotH * v / lineMax;
    size(svg, width, height);
    s("line", {x1: left, y1: top + plotH, x2: width - right, y2: top + plotH, class: "axis"}, svg);
    s("text", {x: left - 5, y: top + 8, "text-anchor": "end", class: "tick"}, svg).textContent = fmt(max);
    s("text", {x: left - 5, y: top + plotH, "text-anchor": "end", class: "tick"}, svg).textContent = "0";
    labels.forEach((label, i) => {
      let base = 0;
      series.forEach(x => {
        const v = x.values[i]; if (!v) return;
        const rect = s("rect", {x: left + i * step + step * 0.1, y: y(base + v), width: Math.max(1, step * 0.8),
          height: Math.max(1, y(base) - y(base + v)), fill: x.colour, "data-series": x.name, "data-value": v}, svg);
        s("title", {}, rect).textContent = `${label}: ${x.name} ${v}`;
        base += v;
      });
    });
    if (opts.cumulative) {
      const points = cumulative.map((v, i) => `${left + i * step + step / 2},${yLine(v)}`).join(" ");
      s("polyline", {points, fill: "none", stroke: "#444", "stroke-width": 1.5}, svg);
      s("text", {x: width - right, y: 12, "text-anchor": "end", class: "tick"}, svg).textContent = `total ${lineMax}`;
    }
    // the labels under the columns: a category's each, shortened to its column's width;
    // of a time line every k-th that fits, the last one rather than the one before it;
    // none past the chart's edges
    const placed = [];
    const place = i => {
      const x = left + i * step + step / 2;
      const node = fit(s("text", {x, y: height - 8, "text-anchor": "middle", class: "tick column"}, svg), labels[i],
        opts.categories ? Math.max(12, step - 10) : width);
      const w = node.getComputedTextLength();
      node.setAttribute("x", Math.min(Math.max(x, w / 2 + 1), width - w / 2 - 1));
      return node;
    };
    for (let i = 0; i < labels.length; i++) {
      const node = place(i), last = placed[placed.length - 1];
      if (last && boxesMeet(last.getBBox(), node.getBBox(), 8)) node.remove(); else placed.push(node);
    }
    if (placed.length && placed[placed.length - 1].textContent !== labels[labels.length - 1] && labels.length > 1) {
      const node = place(labels.length - 1);
      while (placed.length && boxesMeet(placed[placed.length - 1].getBBox(), node.getBBox(), 8)) placed.pop().remove();
    }
  }, opts.title);
}
function legend(items) {
  return h("div", {class: "legend"}, items.map(([name, colour]) => {
    const swatch = h("span"); swatch.style.background = colour; return [swatch, name];
  }));
}

// -- the API --------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, body) { super((body && (body.detail || body.error)) || `HTTP ${status}`);
    this.status = status; this.body = body; }
}
async function api(path, body) {
  const init = {credentials: "same-origin", headers: {Accept: "application/json"}};
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.headers["X-CSRF-Token"] = state.session ? state.session.csrf : "";
    init.body = JSON.stringify(body);
  }
  const response = await fetch("/ui/api/" + path, init);
  const data = await response.json().catch(() => null);
  if (response.status === 401 && path !== "login") { showLogin("Your session ended: log in again."); }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}
const can = scope => state.session && state.session.scopes.includes(scope);

// -- login ----------------------------------------------------------------------------
function showLogin(message) {
  state.session = null;
  document.getElementById("nav").hidden = true;
  document.getElementById("logout").hidden = true;
  document.getElementById("who").textContent = "";
  render();
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message || "";
  document.getElementById("token").focus();
}
async function login(token) {
  const headers = {Accept: "application/json"};
  if (token) headers.Authorization = "Bearer " + token;
  const response = await fetch("/ui/api/login", {method: "POST", credentials: "same-origin", headers});
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new ApiError(response.status, data);
  }
  return startSession();
}
async function startSession() {
  state.session = await api("session");
  document.getElementById("login").hidden = true;
  document.getElementById("nav").hidden = false;
  document.getElementById("logout").hidden = false;
  const s = state.session;
  const who = document.getElementById("who");
  who.textContent = `${s.owner ? "owner " + middle(s.owner, 24) : "local user (every owner)"} · ${s.scopes.join(", ")}`;
  who.title = `${s.owner ? "owner " + s.owner : "the local user, who sees every owner"}; scopes ${s.scopes.join(", ")}`;
  route();
}
async function boot() {
  document.getElementById("login-form").addEventListener("submit", async ev => {
    ev.preventDefault();
    const field = document.getElementById("token");
    try { await login(field.value.trim()); field.value = ""; }
    catch (err) { document.getElementById("login-error").textContent =
      err.status === 401 ? "Unknown token." : err.status === 403 ? "This token cannot read (it needs the read scope)." : String(err.message); }
  });
  document.getElementById("logout").addEventListener("click", async () => {
    try { await api("logout", {}); } finally { showLogin("Logged out."); }
  });
  window.addEventListener("hashchange", route);
  try { await startSession(); return; } catch (err) { if (err.status !== 401) throw err; }
  try { await login(null); }  // a sidecar without tokens: the local user, no token
  catch (err) { showLogin(""); }
}

// -- routing --------------------------------------------------------------------------
const PAGES = {overview: showOverview, quality: showQuality, review: showReview,
  memory: showMemory, recall: showRecall};
// One page is shown at a time: a route waits for the one before it (a slow page must not
// replace a quicker one opened after it).
let routing = Promise.resolve();
function route() { routing = routing.then(showRoute, showRoute); return routing; }
async function showRoute() {
  if (!state.session) return;
  const [name, ...rest] = (location.hash.replace(/^#\/?/, "") || "overview").split("/");
  const show = PAGES[name] || showOverview;
  if (showRoute.last !== undefined && showRoute.last !== location.hash) document.getElementById("toast").hidden = true;
  showRoute.last = location.hash;
  document.querySelectorAll("#nav a").forEach(a => a.classList.toggle("active", a.dataset.page === name));
  const started = performance.now();
  render(h("p", {class: "loading"}, "loading…"));
  page().dataset.ready = "";
  try { await show(rest.map(decodeURIComponent).join("/")); }
  catch (err) { if (err.status !== 401) render(h("h1", {}, "Could not load this page"),
    h("p", {class: "error", id: "page-error"}, `${err.status || ""} ${err.message}`)); }
  page().dataset.ready = name;
  page().dataset.loadMs = String(Math.round(performance.now() - started));
}

// -- Overview -------------------------------------------------------------------------
async function showOverview() {
  const o = await api("overview");
  const edges = Object.values(o.edges).reduce((a, b) => a + b, 0);
  const growth = o.growth;
  const lastRun = o.last_run;
  const planBox = h("div", {id: "plan"});
  const runPlan = async () => {
    planBox.replaceChildren(h("p", {class: "loading"}, "planning…"));
    const p = await api("lifecycle/plan");
    planBox.replaceChildren(h("p", {}, `A run now would evaluate ${p.evaluated} memories: `),
      barChart({...p.counts, "decay": p.jobs.decayed, "hot +": p.jobs.hot_added, "hot -": p.jobs.hot_removed,
        "expire": p.jobs.candidates_expired}, {title: "lifecycle plan"}),
      h("p", {class: "note"}, `dry run: nothing changed (${p.seconds.toFixed(2)} s)`));
    drawCharts(planBox);
  };
  render(
    h("h1", {}, "Overview"),
    h("div", {class: "cards"}, card(o.memories, "memories", "count-memories"),
      card(o.owners, "owners"), card(o.hot.count, "hot set"), card(edges, "edges"),
      card(o.by_status.active || 0, "active"), card(o.by_status.candidate || 0, "candidates"),
      o.entities ? card(o.entities.count, "entities") : null),
    h("div", {class: "grid"},
      h("div", {class: "panel"}, h("h2", {}, "By kind"), barChart(o.by_kind, {colours: KIND_COLOURS, title: "memories by kind"})),
      h("div", {class: "panel"}, h("h2", {}, "By status"), barChart(o.by_status, {title: "memories by status"})),
      h("div", {class: "panel"}, h("h2", {}, `Growth (memories created per ${growth.unit}, line: total)`),
        columnChart(growth.labels, [{name: "created", values: growth.counts, colour: "#4C78A8"}], {cumulative: true, title: "growth"})),
      h("div", {class: "panel"}, h("h2", {}, "Edges"), barChart(o.edges, {title: "edges by type"})),
      h("div", {class: "panel"}, h("h2", {}, "By owner"), barChart(o.by_owner, {title: "memories by owner"})),
      o.entities ? h("div", {class: "panel", id: "entities-panel"}, h("h2", {}, `Entities (${o.entities.count}) and facts`),
        barChart(o.entities.by_type, {title: "entities by type"}),
        h("p", {}, `${o.entities.facts.current} facts valid now, ${o.entities.facts.ended} ended by newer ones. Most mentioned:`),
        h("div", {}, o.entities.top.map(e => h("span", {class: "chip", title: e.type}, `${e.name} (${e.mentions})`)))) : null,
      h("div", {class: "panel"}, h("h2", {}, "Last lifecycle run"),
        lastRun ? [h("p", {}, `${day(lastRun.at)} by ${lastRun.agent}`), barChart(lastRun.events, {title: "events of the last run"})]
                : h("p", {class: "muted"}, "The lifecycle manager has not changed anything yet."),
        h("button", {type: "button", id: "plan-run", onclick: runPlan}, "Plan a run (dry run)"), planBox)),
    h("h2", {}, `Hot set (${o.hot.count})`),
    o.hot.top.length ? table(["memory", "kind", "importance", "accesses"], o.hot.top.map(m =>
      [memoryLink(m.id, m.label), m.kind, m.importance, m.access_count]), {id: "hot-table"})
      : h("p", {class: "muted"}, "No hot memories: the lifecycle manager picks them when it runs."));
}

// -- Extraction quality ---------------------------------------------------------------
async function showQuality() {
  const q = await api("quality");
  const c = q.conversations, f = q.feedback, undated = f.over_time.undated;
  const kinds = Object.keys(f.by_kind);
  render(
    h("h1", {}, "Extraction quality"),
    h("h2", {}, "From conversations"),
    h("div", {class: "cards"}, card(c.sessions, "sessions"), card(c.extracted, "memories extracted", "count-extracted"),
      card(c.candidates_now, "buffered as candidates now"), card(c.reinforced, "reinforced later"),
      card(c.confirmed_by_feedback, "confirmed by feedback"), card(c.expired, "candidates expired")),
    h("div", {class: "grid"},
      h("div", {class: "panel"}, h("h2", {}, "Extracted memories by status"), barChart(c.by_status, {title: "extracted by status"})),
      h("div", {class: "panel"}, h("h2", {}, "Extractor"), barChart(c.extractors, {title: "extractor used"}),
        h("p", {class: "note"}, "Memories name the extractor that made them (rules, or an Ollama model). " +
          "What the quality gate dropped and Ollama's fallbacks to the rules are reported by each " +
          "add_conversation call (its dropped list and warnings), not stored."))),
    h("h2", {}, "Retrieval feedback"),
    h("div", {class: "cards"}, card(f.useful, "useful", "count-useful"), card(f.ignored, "ignored", "count-ignored"),
      card(f.corrections, "corrections")),
    h("div", {class: "grid"},
      h("div", {class: "panel"}, h("h2", {}, "By kind"),
        columnChart(kinds, [{name: "useful", values: kinds.map(k => f.by_kind[k].useful), colour: "#54A24B"},
          {name: "ignored", values: kinds.map(k => f.by_kind[k].ignored), colour: "#E45756"}], {title: "feedback by kind", categories: true}),
        legend([["useful", "#54A24B"], ["ignored", "#E45756"]])),
      h("div", {class: "panel", id: "over-time"}, h("h2", {}, "Over time"),
        columnChart(f.over_time.labels, [{name: "useful", values: f.over_time.useful, colour: "#54A24B"},
          {name: "ignored", values: f.over_time.ignored, colour: "#E45756"},
          {name: "corrections", values: f.over_time.corrections, colour: "#F58518"}], {title: "feedback over time"}),
        legend([["useful", "#54A24B"], ["ignored", "#E45756"], ["corrections", "#F58518"]]),
        h("p", {class: "note", id: "undated"}, undated.useful || undated.ignored
          ? `Dated by the feedback events; ${undated.useful} useful and ${undated.ignored} ignored came with imported memories, undated.`
          : "Each mark is dated by its feedback event: the days add up to the totals above."))),
    h("h2", {}, "Most often ignored"),
    q.most_ignored.length ? table(["memory", "kind", "status", "useful", "ignored"], q.most_ignored.map(m =>
      [memoryLink(m.id, m.label), m.kind, m.status, m.useful, m.ignored]), {id: "ignored-table"})
      : h("p", {class: "muted"}, "No memory was marked ignored yet."));
}

// -- Review queue ---------------------------------------------------------------------
const VERBS = {promote: "Promote", archive: "Archive", keep: "Keep"};
const named = item => `“${middle(item.subject || item.text || item.id, 60)}”`;
async function decide(item, decision) {
  const result = await api("review/decide", {memory_id: item.id, decision});
  if (decision === "keep") toast(`Kept ${named(item)} (recorded; out of this queue for the restore window)`);
  else toast(`${VERBS[decision]}d ${named(item)}`, {label: "Undo", run: () => undo([item])});
  await showReview();
  return result;
}
// Undo the last promotion or archive of each of ``items`` ({id, subject or label}).
async function undo(items) {
  const undone = [], failed = [];
  for (const item of items) {
    try { const r = await api("review/undo", {memory_id: item.id});
      (r.success ? undone : failed).push([item, r.success ? r.undone : r.error]); }
    catch (err) { failed.push([item, err.message]); }
  }
  if (failed.length) toast(`Undo failed for ${named(failed[0][0])}: ${failed[0][1]}` +
    (failed.length > 1 ? ` (and ${failed.length - 1} more)` : ""));
  else if (undone.length === 1) toast(`Undid the ${undone[0][1]} of ${named(undone[0][0])}`);
  else toast(`Undid ${undone.length} decisions`);
  if ((location.hash || "").startsWith("#/review")) await showReview();
}
async function approveArchives(items) {
  const r = await api("review/approve-archives", {memory_ids: items.map(x => x.id)});
  const done = items.filter(x => r.archived.includes(x.id));
  const skipped = r.skipped.length ? `; ${r.skipped.length} left as they are (${r.skipped[0].why})` : "";
  toast(`Archived ${done.length} ${done.length === 1 ? "memory" : "memories"}${skipped}`,
    done.length ? {label: "Undo", run: () => undo(done)} : null);
  await showReview();
}
function queue(items, shown = 15) {
  const box = h("div", {id: "queue"});
  const more = () => {
    box.replaceChildren(...items.slice(0, shown));
    if (items.length > shown) box.append(h("button", {type: "button", id: "more", onclick: () => { shown += 15; more(); }},
      `Show more (${items.length - shown} left)`));
    if (!items.length) box.append(h("p", {class: "muted"}, "Nothing to review."));
  };
  more();
  return box;
}
// The archives waiting for approval: pick some or all (those not shown yet too) and
// approve them in one go; each stays undoable on its own.
function bulkBar(archives, chosen, admin) {
  const count = h("span", {id: "bulk-count"});
  const all = h("input", {type: "checkbox", id: "bulk-all", disabled: !admin});
  const button = h("button", {type: "button", class: "bad", id: "bulk-archive", disabled: true,
    onclick: async () => { button.disabled = true;
      try { await approveArchives(archives.filter(x => chosen.has(x.id))); }
      catch (err) { toast(`Failed: ${err.message}`); button.disabled = false; } }});
  const update = () => {
    count.textContent = `${chosen.size} of ${archives.length} chosen`;
    button.textContent = `Approve ${chosen.size} ${chosen.size === 1 ? "archive" : "archives"}`;
    button.disabled = !admin || !chosen.size;
    all.checked = chosen.size === archives.length;
    document.querySelectorAll("#queue input.pick").forEach(x => { x.checked = chosen.has(x.value); });
  };
  all.addEventListener("change", () => {
    archives.forEach(x => all.checked ? chosen.add(x.id) : chosen.delete(x.id)); update(); });
  const bar = h("div", {class: "row bulk", id: "bulk"},
    h("label", {}, all, ` all ${archives.length} archives waiting for approval`), count, button);
  bar.update = update;
  update();
  return bar;
}
async function showReview() {
  const r = await api("review");
  const admin = r.can_decide;
  const archives = r.items.filter(x => x.action === "archive");
  const chosen = new Set();
  let bar = null;
  const items = r.items.map(item => {
    const m = item.metrics;
    const pick = item.action === "archive" ? h("input", {type: "checkbox", class: "pick", value: item.id,
      disabled: !admin, "aria-label": "choose this archive", onchange: ev => {
        ev.target.checked ? chosen.add(item.id) : chosen.delete(item.id); bar.update(); }}) : null;
    return h("div", {class: "item", "data-id": item.id},
      h("div", {class: "head"}, pick, h("span", {class: "badge " + item.action}, item.action),
        memoryLink(item.id, item.subject || middle(item.text, 80) || item.id),
        h("span", {class: "muted"}, [item.kind, item.created ? "created " + date(item.created) : null,
          state.session.owner ? null : item.owner && "owner " + middle(item.owner, 24),
          `confidence ${fmt(item.confidence, 2)}`].filter(Boolean).join(" · "))),
      item.text ? h("p", {class: "excerpt"}, item.text) : null,
      h("ul", {}, item.reasons.map(x => h("li", {}, x))),
      h("div", {class: "metrics"}, `importance ${fmt(m.importance)} · age ${fmt(m.ageInDays ?? m.age_in_days, 0)} days · ` +
        `${m.accessCount ?? m.access_count} accesses · decayed ${fmt(m.decayedScore ?? m.decayed_score)} · ` +
        `${m.crossReferenceCount ?? m.cross_reference_count} cross-references · centrality ${fmt(m.centrality, 4)}`),
      h("div", {class: "actions"}, item.choices.map(choice => h("button", {type: "button",
        class: choice === "keep" ? "" : choice === "promote" ? "good" : "bad", "data-decision": choice,
        disabled: !admin, title: admin ? null : "needs a token with the admin scope",
        onclick: async ev => { ev.target.disabled = true;
          try { await decide(item, choice); } catch (err) { toast(`Failed: ${err.message}`); ev.target.disabled = false; } }},
        VERBS[choice]))));
  });
  if (archives.length) bar = bulkBar(archives, chosen, admin);
  const decisions = r.decisions;
  render(
    h("h1", {}, "Review queue"),
    h("div", {class: "cards"}, card(r.counts.review || 0, "to review (rules disagree or near a threshold)", "count-review"),
      r.auto_archive ? null : card(r.counts.archive || 0, "archives waiting for approval", "count-archive"),
      card(decisions.length, `decisions undoable (${fmt(r.window_days)} days)`)),
    admin ? null : h("p", {class: "note", id: "read-only"}, "Read only: decisions need a token with the admin scope."),
    h("p", {class: "note"}, `Decisions are recorded with the actor dashboard:<owner> in the memory's version row and event. ` +
      `The queue holds the first ${r.items.length} (100 of each action at most); decide them and the next ones come.`),
    bar,
    queue(items),
    h("h2", {}, "Your recent decisions"),
    decisions.length ? table(["memory", "decision", "from → to", "actor", "at", "undo until", ""], decisions.map(d =>
      [memoryLink(d.memory_id, d.label), d.decision, `${d.from} → ${d.to}`, d.actor, day(d.at), day(d.undo_until),
       h("button", {type: "button", class: "undo", "data-id": d.memory_id, disabled: !admin,
         onclick: () => undo([{id: d.memory_id, subject: d.label}])}, "Undo")]),
      {id: "decisions"}) : h("p", {class: "muted"}, "None within the restore window."));
}

// -- Memory view ----------------------------------------------------------------------
function fields(m) {
  const rows = [["id", m.id], ["owner", m.owner], ["project", m.project], ["kind", m.kind], ["status", m.status],
    ["importance", `${fmt(m.importance)} (originally ${fmt(m.original_importance)})`], ["confidence", fmt(m.confidence)],
    ["created", day(m.created)], ["modified", day(m.modified)], ["valid", `${day(m.valid_from) || "…"} → ${day(m.valid_to) || "…"}`],
    ["accesses", `${m.access_count} (last ${day(m.last_accessed) || "never"})`], ["feedback", `${m.useful_count} useful, ${m.ignored_count} ignored`],
    ["tags", (m.tags || []).join(", ")], ["session", m.session], ["version", m.version],
    ["superseded by", (m.superseded_by || []).join(", ")], ["provenance", JSON.stringify(m.provenance)]];
  return h("dl", {class: "fields"}, rows.filter(([, v]) => v !== null && v !== "" && v !== undefined)
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))]));
}
async function showFinder(query) {
  const box = h("div", {id: "found"}, h("p", {class: "loading"}, "loading…"));
  const input = h("input", {type: "search", id: "find", placeholder: "words of a memory (empty: the newest)", value: query || ""});
  const go = async () => {
    const found = await api("memories?q=" + encodeURIComponent(input.value));
    box.replaceChildren(found.memories.length ? table(["memory", "kind", "status", "created", "owner"], found.memories.map(m =>
      [memoryLink(m.id, m.label), m.kind, h("span", {class: "state"}, h("span", {class: "badge " + m.status}, m.status),
        m.current === false ? h("span", {class: "badge archive"}, "superseded") : null, m.hot ? h("span", {class: "badge hot"}, "hot") : null),
       date(m.created), middle(m.owner || "", 24)]), {id: "found-table"})
      : h("p", {class: "muted"}, "No memory matches."));
  };
  render(h("h1", {}, "Memory view"),
    h("form", {class: "row", onsubmit: ev => { ev.preventDefault(); go(); }}, input, h("button", {type: "submit"}, "Find")),
    h("p", {class: "note"}, "Every version is found: current ones, the versions they replaced, candidates, archived and tombstoned ones."),
    box);
  await go();
}
async function showMemory(id) {
  if (!id) return showFinder("");
  const d = await api("memory?id=" + encodeURIComponent(id));
  const m = d.memory;
  const e = d.evaluation;
  const drawing = h("iframe", {class: "drawing", id: "drawing", sandbox: "allow-scripts", title: "neighbourhood drawing",
    src: "/ui/api/drawing?id=" + encodeURIComponent(m.id)});
  render(
    h("p", {}, h("a", {href: "#/memory"}, "← find another memory")),
    h("h1", {id: "memory-title"}, m.subject || m.text.slice(0, 80) || m.id),
    h("div", {class: "row"}, h("span", {class: "badge"}, m.kind), h("span", {class: "badge"}, m.status),
      m.hot ? h("span", {class: "badge hot"}, "hot") : null, m.superseded_by.length ? h("span", {class: "badge archive"}, "superseded") : null),
    h("div", {class: "text", id: "memory-text"}, m.text),
    h("div", {class: "grid"},
      h("div", {class: "panel"}, h("h2", {}, "Fields"), fields(m)),
      h("div", {class: "panel"}, h("h2", {}, "Lifecycle"),
        e ? [h("p", {}, h("span", {class: "badge " + e.action}, e.action), ` confidence ${fmt(e.confidence, 2)}`),
          h("ul", {}, e.reasons.map(x => h("li", {}, x)))] : h("p", {class: "muted"}, `Not evaluated: the memory is ${m.status}.`),
        h("h3", {}, "Entities it mentions"), d.entities.length ? h("div", {id: "entities"}, d.entities.map(x =>
          h("span", {class: "chip", title: `${x.type}, ${x.role}: “${x.surface}”`}, `${x.name} · ${x.type}`)))
          : h("p", {class: "muted"}, "none"),
        h("h3", {}, "Facts it states"), d.facts.length ? h("ul", {id: "facts"}, d.facts.map(f => h("li", {},
          `${f.subject_name} —${f.predicate}→ ${f.object_name}`, h("span", {class: "muted"},
            ` valid ${day(f.valid_from) || "…"} → ${day(f.valid_to) || "now"}` + (f.ended_by ? ` (ended by ${f.ended_by})` : "") +
            ` · confidence ${fmt(f.confidence, 2)} · ${f.rule}`))))
          : h("p", {class: "muted"}, "none"),
        d.chain.length ? [h("h3", {}, `Supersede chain (${d.chain.length} versions, oldest first)`), h("ol", {class: "chain", id: "chain"},
          d.chain.map(c => h("li", {class: c.this ? "this" : "", "data-id": c.id},
            h("span", {class: "version"}, `v${c.version}`), " ", h("span", {class: "when"}, date(c.created)), " ",
            h("span", {class: "badge"}, c.current ? "current" : "replaced"), " ",
            c.this ? h("span", {class: "excerpt"}, c.excerpt, h("span", {class: "muted"}, " (this one)"))
                   : memoryLink(c.id, c.excerpt))))] : null)),
    h("h2", {}, "Neighbourhood"),
    h("p", {class: "note"}, "Drag nodes, scroll to zoom, click a memory for its details (the drawing of graphmem draw ID --out FILE.html)."),
    drawing,
    h("h2", {}, `Edges (${d.edges.length})`),
    d.edges.length ? table(["type", "direction", "other memory", "weight"], d.edges.map(x =>
      [x.kind, x.direction, x.other.kind ? memoryLink(x.other.id, x.other.label) : x.other.id, x.weight]), {id: "edges-table"})
      : h("p", {class: "muted"}, "no edges"),
    h("h2", {}, `Versions (${d.versions.length})`),
    table(["#", "change", "at", "actor", "reason", "status", "kind", "importance", "text"], d.versions.map(v =>
      [v.seq, v.change_type, day(v.at), v.actor || "", v.reason || "", v.status || "", v.kind || "",
       v.importance ?? "", v.redacted ? "(redacted)" : (v.text || "").slice(0, 60)]), {id: "versions-table"}),
    h("h2", {}, `Events (${d.events.length})`),
    d.events.length ? table(["event", "from → to", "reason", "triggered by", "agent", "at"], d.events.map(x =>
      [x.event_type, `${x.from_state} → ${x.to_state}`, x.reason, x.triggered_by, x.agent_id, day(x.timestamp)]), {id: "events-table"})
      : h("p", {class: "muted"}, "no lifecycle events"));
}

// -- Recall playground ----------------------------------------------------------------
function explanation(hit) {
  const e = hit.explanation;
  const rows = Object.entries(e.channels).map(([name, c]) => [name, c.rank, c.score]);
  const path = e.graph_path || [];
  return h("div", {class: "why"},
    rows.length ? table(["channel", "rank", "score"], rows, {class: "channels"}) : null,
    h("div", {},
      path.length ? h("p", {class: "path"}, "graph path: via " + path.join(" → ")) : null,
      h("pre", {}, hit.why.join("\n"))));
}
async function mark(hit, query, useful, box) {
  try {
    const r = await api("feedback", {memory_id: hit.memory.id, useful, query});
    box.replaceChildren(h("span", {class: "marked"}, `marked ${useful ? "useful" : "ignored"} · ${r.useful_count} useful, ${r.ignored_count} ignored, importance ${fmt(r.importance)}`));
  } catch (err) { toast(`Failed: ${err.message}`); }
}
async function showRecall(query) {
  const s = state.session;
  const input = h("input", {type: "search", id: "query", placeholder: "ask what the agent remembers", value: query || ""});
  const preset = h("select", {id: "preset"}, s.presets.map(p => h("option", {value: p, selected: p === "default"}, p)));
  const k = h("input", {type: "number", id: "k", min: 1, max: 50, value: 8});
  const kinds = h("span", {}, s.kinds.map(kind => h("label", {}, h("input", {type: "checkbox", value: kind, class: "kind"}), " " + kind + " ")));
  const results = h("div", {id: "hits"});
  const run = async () => {
    if (!input.value.trim()) return;
    results.replaceChildren(h("p", {class: "loading"}, "recalling…"));
    const chosen = [...kinds.querySelectorAll("input:checked")].map(x => x.value);
    const started = performance.now();
    const r = await api("recall", {query: input.value, preset: preset.value, k: Number(k.value), kinds: chosen.length ? chosen : null});
    const ms = Math.round(performance.now() - started);
    results.replaceChildren(h("p", {class: "note"}, `${r.hits.length} hits in ${ms} ms · preset ${r.preset}` +
      (r.record_access ? " · accesses recorded" : " · read only: no access recorded")),
      ...r.hits.map(hit => {
        const box = h("span", {class: "feedback"});
        const writable = can("write");
        box.append(h("button", {type: "button", class: "good", "data-mark": "useful", disabled: !writable,
          title: writable ? null : "needs a token with the write scope", onclick: () => mark(hit, r.query, true, box)}, "Useful"),
          h("button", {type: "button", class: "bad", "data-mark": "ignored", disabled: !writable,
          title: writable ? null : "needs a token with the write scope", onclick: () => mark(hit, r.query, false, box)}, "Ignored"));
        return h("div", {class: "item hit", "data-id": hit.memory.id},
          h("div", {class: "head"}, h("b", {}, `#${hit.rank}`), memoryLink(hit.memory.id, hit.memory.label),
            h("span", {class: "badge"}, hit.memory.kind), h("span", {class: "muted"}, `score ${fmt(hit.score, 5)}`)),
          h("div", {class: "text"}, hit.text), explanation(hit), h("div", {class: "actions"}, box));
      }));
    page().dataset.ready = "recall-done";
  };
  render(h("h1", {}, "Recall playground"),
    h("form", {class: "row", id: "recall-form", onsubmit: ev => { ev.preventDefault(); run().catch(err => results.replaceChildren(h("p", {class: "error"}, err.message))); }},
      input, h("label", {}, "preset ", preset), h("label", {}, "k ", k), h("button", {type: "submit", class: "primary"}, "Recall")),
    h("div", {class: "row"}, h("span", {class: "muted"}, "kinds:"), kinds),
    results);
  if (query) await run();
}

document.addEventListener("DOMContentLoaded", boot);
