import type { StatusSnapshot } from "./snapshot.ts";

/**
 * The status page's body from a snapshot. Self-contained on purpose (no imports, no outer
 * names): the server renders the first view with it, and the page embeds this very function's
 * source to re-render each snapshot it polls, so both views are one code and need no build step.
 */
export function renderStatus(s: StatusSnapshot): string {
  const esc = (v: unknown) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const bytes = (n: number | null | undefined) => {
    if (n === null || n === undefined) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let v = n;
    let u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return `${v >= 100 || u === 0 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
  };
  const time = (t: number) => new Date(t).toISOString().slice(11, 19);
  const W = 320;
  const H = 64;
  /** A small line chart of (t, v) points over the sampled window; gaps where v is null. */
  const chart = (id: string, label: string, values: Array<[number, number | null]>, unit: string) => {
    const t0 = s.points[0]?.t ?? s.t;
    const t1 = Math.max(s.t, t0 + 1);
    const known = values.filter((p): p is [number, number] => p[1] !== null);
    const max = Math.max(1e-9, ...known.map((p) => p[1]));
    let path = "";
    let dots = "";
    let pen = false;
    for (const [t, v] of values) {
      if (v === null) {
        pen = false;
        continue;
      }
      const x = ((t - t0) / (t1 - t0)) * (W - 6) + 3;
      const y = H - 3 - (v / max) * (H - 8);
      path += `${pen ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)} `;
      dots += `<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="1.8" class="dot"/>`;
      pen = true;
    }
    const lastValue = known.at(-1)?.[1];
    const shown = lastValue === undefined ? "no data yet" : `${lastValue.toFixed(lastValue < 10 ? 2 : 0)} ${unit}`;
    return `<figure class="chart" id="${esc(id)}" data-points="${known.length}"><figcaption>${esc(label)} <b>${esc(shown)}</b> <span class="dim">max ${esc(max.toFixed(max < 10 ? 2 : 0))} ${esc(unit)}</span></figcaption><svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(label)}"><rect x="0" y="0" width="${W}" height="${H}" class="bg"/><path d="${path}" class="line"/>${dots}</svg></figure>`;
  };

  const stateClass = (state: string) => (state === "READY" ? "ok" : state === "UNAVAILABLE" ? "bad" : "warn");
  const models = s.models
    .map(
      (m) =>
        `<tr data-model="${esc(m.name)}"><td class="name">${esc(m.name)}</td><td>${esc(m.version)}</td><td><span class="state ${stateClass(m.state)}">${esc(m.state)}</span></td><td class="reason">${esc(m.reason || "")}</td><td>${esc(m.residency ?? "–")}${m.resident ? " (resident)" : ""}</td><td class="num">${bytes(m.weightBytes)}</td><td class="num">${bytes(m.scratchBytes)}</td><td class="num requests">${m.requests}</td><td class="num failures">${m.failures}</td></tr>`,
    )
    .join("");

  const b = s.budget;
  let bar = '<p class="dim">no weight budget resolved yet</p>';
  if (b && b.limitBytes > 0) {
    const pct = (n: number) => `${Math.max(0, Math.min(100, (n / b.limitBytes) * 100)).toFixed(2)}%`;
    const freePool = Math.max(0, b.poolBytes - b.pinnedBytes - b.residentOnDemandBytes);
    const rest = Math.max(0, b.limitBytes - b.poolBytes - b.maxScratchBytes);
    bar = `<div class="bar" id="memory-bar" title="limit ${bytes(b.limitBytes)}"><span class="seg pinned" style="width:${pct(b.pinnedBytes)}"></span><span class="seg resident" style="width:${pct(b.residentOnDemandBytes)}"></span><span class="seg pool" style="width:${pct(freePool)}"></span><span class="seg scratch" style="width:${pct(b.maxScratchBytes)}"></span><span class="seg rest" style="width:${pct(rest)}"></span></div><ul class="legend"><li><i class="pinned"></i>pinned weights ${bytes(b.pinnedBytes)}</li><li><i class="resident"></i>on-demand weights resident ${bytes(b.residentOnDemandBytes)}</li><li><i class="pool"></i>free weight pool ${bytes(freePool)} (pool ${bytes(b.poolBytes)})</li><li><i class="scratch"></i>run scratch reserve ${bytes(b.maxScratchBytes)}</li><li><i class="rest"></i>kept free ${bytes(rest)}</li><li>limit <b>${bytes(b.limitBytes)}</b></li></ul>`;
  }

  const lookups = s.cache.hits + s.cache.misses;
  const hitRate = lookups > 0 ? (s.cache.hits / lookups) * 100 : null;
  const hitSeries: Array<[number, number | null]> = s.points.map((p) => {
    const n = p.cacheHits + p.cacheMisses;
    return [p.t, n > 0 ? (p.cacheHits / n) * 100 : null];
  });
  const latencyCharts = s.models
    .filter((m) => m.state === "READY" || s.points.some((p) => p.models[m.name]))
    .map((m) =>
      chart(
        `latency-${m.name}`,
        `${m.name} latency`,
        s.points.map((p) => [p.t, p.models[m.name]?.ms ?? null]),
        "ms",
      ),
    )
    .join("");
  const events = [...s.events]
    .slice(-12)
    .reverse()
    .map(
      (e) =>
        `<li class="event ${esc(e.kind)}"><time>${time(e.t)}</time> <b>${esc(e.model)}</b> ${esc(e.kind)}: ${esc(e.text)}</li>`,
    )
    .join("");

  return `<header><h1>${esc(s.name)} <span class="dim">${esc(s.version)}</span></h1><p id="readiness" class="${s.ready ? "ok" : "bad"}">${s.ready ? "ready" : `not ready: ${esc(s.readyReason)}`}</p><p id="engine"><b>${esc(s.engine)}</b> engine${s.device ? ` on ${esc(s.device)}` : ""}: <span class="dim">${esc(s.engineReason)}</span></p><p class="dim" id="updated">updated ${time(s.t)} UTC</p></header>
<section><h2>Models</h2><table id="models"><thead><tr><th>model</th><th>version</th><th>state</th><th>reason</th><th>residency</th><th>weights</th><th>scratch</th><th>requests</th><th>failed</th></tr></thead><tbody>${models || '<tr><td colspan="9" class="dim">no model in the repository</td></tr>'}</tbody></table></section>
<section><h2>Memory budget</h2>${bar}</section>
<section class="charts"><h2>Program cache and latency <span class="dim">(last ${Math.max(1, Math.round(((s.points.at(-1)?.t ?? s.t) - (s.points[0]?.t ?? s.t)) / 60000))} min)</span></h2><p id="cache-hit-rate">program cache hit rate <b>${hitRate === null ? "–" : `${hitRate.toFixed(0)}%`}</b> <span class="dim">(${s.cache.hits} hits, ${s.cache.misses} misses)</span></p><div class="row">${chart("cache-chart", "cache hit rate", hitSeries, "%")}${latencyCharts}</div></section>
<section><h2>Recent reloads and errors</h2><ul id="events">${events || '<li class="dim">nothing yet</li>'}</ul></section>`;
}
