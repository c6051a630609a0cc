// The page `crawler serve` answers at /: one file, its style and script inside, nothing fetched
// from elsewhere. Its script asks api/fleet every two seconds and redraws: the counts, two
// charts over the last hour, or since the first reading (pages/s and items/s; queued and leased), the workers, the records
// set aside by reason and the errors by kind. Everything it shows comes from Redis, which anyone
// who reaches it may write: it goes into the page as text (textContent), never as markup.
#pragma once

namespace crawler::cli::detail {

inline constexpr const char* fleet_page_html = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>crawler fleet</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fafafa; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; }
  #where, #updated { color: #666; }
  #error { color: #b00; font-weight: bold; }
  .cards { display: flex; flex-wrap: wrap; gap: .8em; margin: 1em 0; }
  .card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: .5em .9em;
          min-width: 8em; }
  .card b { display: block; font-size: 1.5em; }
  .charts { display: flex; flex-wrap: wrap; gap: 1em; }
  figure { margin: 0; background: #fff; border: 1px solid #ddd; border-radius: 6px;
           padding: .5em; }
  figcaption { color: #444; margin-bottom: .3em; }
  .legend span { margin-right: 1em; }
  table { border-collapse: collapse; background: #fff; margin: .5em 0 1em; }
  th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
  th:first-child, td:first-child { text-align: left; }
  tr.dead td { color: #b00; }
  h2 { font-size: 1.1em; margin: 1.2em 0 .2em; }
  .none { color: #888; }
</style>
</head>
<body>
<h1 id="title">Fleet</h1>
<div id="where"></div>
<div id="updated"></div>
<div id="error"></div>
<div class="cards">
  <div class="card">workers alive<b id="alive">-</b></div>
  <div class="card">workers dead<b id="dead">-</b></div>
  <div class="card">queued<b id="queued">-</b></div>
  <div class="card">in flight (leased)<b id="leased">-</b></div>
  <div class="card">start URLs waiting<b id="start_urls">-</b></div>
  <div class="card">pages<b id="pages">-</b></div>
  <div class="card">items<b id="items">-</b></div>
  <div class="card">dead letters<b id="dead_letters">-</b></div>
  <div class="card">set aside<b id="set_aside">-</b></div>
</div>
<div class="charts">
  <figure><figcaption>pages/s and items/s
    <span class="legend"><span style="color:#1f77b4">&#9632; pages/s</span>
    <span style="color:#2ca02c">&#9632; items/s</span></span></figcaption>
    <canvas id="rates" width="560" height="200"></canvas></figure>
  <figure><figcaption>queue depth and leases
    <span class="legend"><span style="color:#ff7f0e">&#9632; queued</span>
    <span style="color:#9467bd">&#9632; leased</span></span></figcaption>
    <canvas id="depth" width="560" height="200"></canvas></figure>
</div>
<h2>Workers</h2>
<table id="workers"><thead><tr><th>worker</th><th>state</th><th>up (s)</th><th>pages</th>
  <th>items</th><th>in flight</th><th>pages/s</th><th>heartbeat (s ago)</th><th>leases</th>
  <th>leases back in (s)</th></tr></thead><tbody></tbody></table>
<h2>Set aside and dead letters, by reason</h2>
<table id="reasons"><thead><tr><th>reason</th><th>where</th><th>records</th></tr></thead>
  <tbody></tbody></table>
<h2>Errors, by kind</h2>
<table id="errors"><thead><tr><th>kind</th><th>count</th></tr></thead><tbody></tbody></table>
<div id="partial"></div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const show = (id, value) => { $(id).textContent = String(value); };

// Rows of `cells` (each shown as text) in the table's body, replacing what was there.
function fill(tableId, rows, rowClass) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  for (const cells of rows) {
    const tr = document.createElement("tr");
    if (rowClass) tr.className = rowClass(cells) || "";
    for (const cell of cells.values) {
      const td = document.createElement("td");
      td.textContent = String(cell);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.className = "none";
    td.colSpan = $(tableId).tHead.rows[0].cells.length;
    td.textContent = "none";
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

// A per-second rate of `field` over the history: each point against the one ~30 s before it
// (the workers add their counts to the fleet's at each heartbeat).
function rates(history, field) {
  const out = [];
  let back = 0;
  for (let i = 1; i < history.length; ++i) {
    while (back < i - 1 && history[i].t - history[back + 1].t >= 30) ++back;
    const dt = history[i].t - history[back].t;
    const dv = history[i][field] - history[back][field];
    out.push({ t: history[i].t, v: dt > 0 && dv >= 0 ? dv / dt : 0 });
  }
  return out;
}

// The charts span the last hour, or less while the readings do not go back that far.
function span(history, now) {
  if (history.length === 0) return 60;
  return Math.min(3600, Math.max(60, now - history[0].t));
}

function chart(canvasId, series, now, seconds) {
  const canvas = $(canvasId);
  const g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 48, bottom = 18;
  g.clearRect(0, 0, w, h);
  let top = 0;
  for (const s of series) for (const p of s.points) top = Math.max(top, p.v);
  top = top > 0 ? top * 1.1 : 1;
  g.strokeStyle = "#ccc";
  g.fillStyle = "#666";
  g.font = "11px sans-serif";
  for (let k = 0; k <= 4; ++k) {
    const y = (h - bottom) * (1 - k / 4);
    g.beginPath(); g.moveTo(left, y); g.lineTo(w, y); g.stroke();
    g.fillText((top * k / 4).toPrecision(3), 2, Math.max(10, y));
  }
  g.fillText(seconds >= 120 ? "-" + Math.round(seconds / 60) + " min" : "-" +
             Math.round(seconds) + " s", left, h - 4);
  g.fillText("now", w - 24, h - 4);
  const x = (t) => left + (w - left) * (1 - (now - t) / seconds);
  for (const s of series) {
    g.strokeStyle = s.color;
    g.lineWidth = 2;
    g.beginPath();
    s.points.forEach((p, i) => {
      const px = x(p.t), py = (h - bottom) * (1 - p.v / top);
      if (i === 0) g.moveTo(px, py); else g.lineTo(px, py);
    });
    g.stroke();
  }
}

function render(fleet) {
  document.title = "crawler fleet " + fleet.spider;
  show("title", "Fleet " + fleet.spider);
  show("where", "Redis at " + fleet.redis + ", queue " + fleet.queue);
  show("updated", "updated " + new Date().toLocaleTimeString());
  show("error", fleet.error ? "Cannot read the fleet: " + fleet.error : "");
  const workers = fleet.workers.filter((w) => w.readable);
  show("alive", workers.filter((w) => w.live).length);
  show("dead", workers.filter((w) => !w.live).length);
  for (const id of ["queued", "leased", "pages", "items", "dead_letters"]) show(id, fleet[id]);
  show("start_urls", fleet.start_urls_waiting);
  show("set_aside", fleet.set_aside + fleet.start_urls_set_aside);
  fill("workers", workers.map((w) => ({ live: w.live, values: [
    w.id, w.live ? "alive" : "dead", Math.round(w.up), w.pages, w.items, w.in_flight,
    w.live ? w.pages_per_second.toFixed(1) : "", Math.round(w.heartbeat_age), w.leases,
    w.leases > 0 ? Math.max(0, Math.ceil(w.leases_back_in)) : ""] })),
    (row) => row.live ? "" : "dead");
  const reasons = [];
  for (const [where, counted] of Object.entries(fleet.reasons)) {
    for (const [reason, count] of Object.entries(counted)) {
      reasons.push({ values: [reason, where, count] });
    }
  }
  fill("reasons", reasons);
  fill("errors", Object.entries(fleet.errors).map(([kind, count]) => ({ values: [kind, count] })));
  show("partial", fleet.partial.map((p) => "figures may be partial: " + p).join("\n"));
  const history = fleet.history, seconds = span(history, fleet.now);
  chart("rates", [{ color: "#1f77b4", points: rates(history, "pages") },
                  { color: "#2ca02c", points: rates(history, "items") }], fleet.now, seconds);
  chart("depth", [{ color: "#ff7f0e", points: history.map((s) => ({ t: s.t, v: s.queued })) },
                  { color: "#9467bd", points: history.map((s) => ({ t: s.t, v: s.leased })) }],
        fleet.now, seconds);
}

async function tick() {
  try {
    const answer = await fetch("api/fleet", { cache: "no-store" });
    if (!answer.ok) throw new Error("HTTP " + answer.status);
    render(await answer.json());
  } catch (error) {
    show("error", "Cannot reach crawler serve: " + error.message);
  }
  setTimeout(tick, 2000);
}
tick();
</script>
</body>
</html>
)html";

}  // namespace crawler::cli::detail
