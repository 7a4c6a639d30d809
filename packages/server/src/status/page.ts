import { renderStatus } from "./render.ts";
import type { StatusSnapshot } from "./snapshot.ts";

/** How often the open page asks for a new snapshot. */
export const REFRESH_MS = 2_000;

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;padding:16px 24px;color:#1d2330;background:#f6f7f9}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
.dim{color:#6b7280;font-weight:normal}.ok{color:#137333}.bad{color:#b3261e}.warn{color:#a16207}
header p{margin:2px 0}
table{border-collapse:collapse;background:#fff;width:100%}th,td{padding:4px 8px;border-bottom:1px solid #e5e7eb;text-align:left}
th{font-weight:600;background:#eef0f4}.num{text-align:right;font-variant-numeric:tabular-nums}.reason{max-width:420px;color:#4b5563}
.state{padding:1px 6px;border-radius:3px;font-size:12px;font-weight:600}.state.ok{background:#e6f4ea}.state.bad{background:#fce8e6}.state.warn{background:#fef7e0}
.bar{display:flex;height:18px;background:#e5e7eb;border-radius:3px;overflow:hidden;max-width:760px}.seg{height:100%}.seg:not([style="width:0.00%"]){min-width:3px}
.pinned{background:#1e40af}.resident{background:#3b82f6}.pool{background:#bfdbfe}.scratch{background:#f59e0b}.rest{background:#d1d5db}
.legend{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 16px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.row{display:flex;flex-wrap:wrap;gap:12px}.chart{margin:0;background:#fff;padding:6px;border:1px solid #e5e7eb}
.chart figcaption{font-size:12px;margin-bottom:2px}.chart .bg{fill:#fafafa}.chart .line{fill:none;stroke:#2563eb;stroke-width:1.5}.chart .dot{fill:#2563eb}
#events{list-style:none;padding:0;margin:0;background:#fff;border:1px solid #e5e7eb;max-width:980px}#events li{padding:3px 8px;border-bottom:1px solid #f0f0f0;overflow-wrap:anywhere}
.event.failed,.event.errors{color:#b3261e}.event.reloaded,.event.loaded{color:#137333}time{font-variant-numeric:tabular-nums;color:#6b7280}
`;

/**
 * The whole page: the first view rendered here, then the browser re-renders every snapshot it
 * fetches from /status.json with the same function (its source is embedded). No build step, no
 * script or font from anywhere else.
 */
export function statusPage(snapshot: StatusSnapshot): string {
  // </script> inside the JSON would end the script element early.
  const data = JSON.stringify(snapshot).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${snapshot.name} status</title><style>${STYLE}</style></head>
<body><main id="status">${renderStatus(snapshot)}</main>
<script>
const renderStatus = ${renderStatus.toString()};
let latest = ${data};
async function refresh() {
  try {
    const r = await fetch("status.json", { cache: "no-store" });
    if (r.ok) {
      latest = await r.json();
      document.getElementById("status").innerHTML = renderStatus(latest);
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
    }
  } catch (e) {
    document.getElementById("updated").textContent = "cannot reach the worker: " + e.message;
  }
}
setInterval(refresh, ${REFRESH_MS});
</script></body></html>`;
}
