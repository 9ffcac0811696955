import type { PriceSeries } from "../api-types.js";
import { h } from "../dom.js";
import { price } from "./change.js";

/**
 * Each plan's price over time as an SVG the console draws itself (no chart library, no CDN):
 * a step line per plan, each with its own marker shape and dash and its name at its end, so the
 * lines are told apart without colour; the same figures follow as a table for screen readers.
 */

const NS = "http://www.w3.org/2000/svg";
const W = 640;
const H = 240;
const PAD = { left: 56, right: 110, top: 16, bottom: 30 };
const DASHES = ["", "6 3", "2 3", "10 3 2 3"];
const MARKERS = ["circle", "square", "triangle", "diamond"] as const;

function svg(tag: string, attrs: Record<string, string | number>, ...children: Node[]): SVGElement {
  const el = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  el.append(...children);
  return el;
}

function marker(shape: (typeof MARKERS)[number], x: number, y: number): SVGElement {
  if (shape === "circle") return svg("circle", { cx: x, cy: y, r: 4 });
  if (shape === "square") return svg("rect", { x: x - 4, y: y - 4, width: 8, height: 8 });
  const d =
    shape === "triangle"
      ? `M${x},${y - 5}L${x + 5},${y + 4}L${x - 5},${y + 4}Z`
      : `M${x},${y - 5}L${x + 5},${y}L${x},${y + 5}L${x - 5},${y}Z`;
  return svg("path", { d });
}

export function priceChart(plans: PriceSeries[], now = Date.now()): HTMLElement {
  const priced = plans.filter((p) => p.points.some((pt) => pt.amount !== null));
  if (priced.length === 0) return h("p", { class: "muted" }, "No published prices seen yet.");
  const times = priced.flatMap((p) => p.points.map((pt) => Date.parse(pt.at)));
  const t0 = Math.min(...times);
  const t1 = Math.max(now, t0 + 86_400_000);
  const top = Math.max(...priced.flatMap((p) => p.points.map((pt) => pt.amount ?? 0))) * 1.15 || 1;
  const x = (t: number) => PAD.left + ((t - t0) / (t1 - t0)) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const first = priced[0]?.points.find((pt) => pt.amount !== null);
  const axisLabel = (v: number) => price(v, first?.currency ?? null);
  const day = (t: number) =>
    new Date(t).toLocaleDateString(undefined, { month: "short", day: "numeric" });
  const chart = svg(
    "svg",
    {
      viewBox: `0 0 ${W} ${H}`,
      role: "img",
      class: "chart",
      "aria-label": `Price history of ${priced.length} plans; the figures follow as a table`,
    },
    ...[0, 0.5, 1].map((f) =>
      svg(
        "g",
        { class: "grid" },
        svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(top * f), y2: y(top * f) }),
        svg(
          "text",
          { x: PAD.left - 6, y: y(top * f) + 4, "text-anchor": "end" },
          document.createTextNode(axisLabel(Math.round(top * f))),
        ),
      ),
    ),
    svg("text", { x: PAD.left, y: H - 8 }, document.createTextNode(day(t0))),
    svg(
      "text",
      { x: W - PAD.right, y: H - 8, "text-anchor": "end" },
      document.createTextNode(day(t1)),
    ),
  );
  priced.forEach((plan, i) => {
    const shape = MARKERS[i % MARKERS.length] ?? "circle";
    const pts = plan.points
      .filter((pt) => pt.amount !== null)
      .map((pt) => [x(Date.parse(pt.at)), y(pt.amount ?? 0)] as const);
    const end = x(plan.current ? t1 : Date.parse(plan.lastSeenAt));
    // A step line: a price holds until the next point shows a new one.
    const d = `${pts.map(([px, py], j) => (j === 0 ? `M${px},${py}` : `H${px}V${py}`)).join("")}H${end}`;
    const last = pts[pts.length - 1] ?? [end, 0];
    chart.append(
      svg(
        "g",
        { class: `series s${i % 4}` },
        svg("path", { d, fill: "none", "stroke-dasharray": DASHES[i % 4] ?? "" }),
        ...pts.map(([px, py]) => marker(shape, px, py)),
        svg("text", { x: end + 6, y: last[1] + 4 }, document.createTextNode(plan.plan)),
      ),
    );
  });
  const table = h(
    "table",
    { class: "figures" },
    h("caption", null, "Prices by plan"),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        h("th", { scope: "col" }, "Plan"),
        h("th", { scope: "col" }, "Prices over time"),
      ),
    ),
    h(
      "tbody",
      null,
      plans.map((p) =>
        h(
          "tr",
          null,
          h("th", { scope: "row" }, p.plan, p.current ? "" : " (no longer listed)"),
          h(
            "td",
            null,
            p.points
              .map(
                (pt) =>
                  `${day(Date.parse(pt.at))}: ${price(pt.amount, pt.currency, pt.period, pt.contactSales)}`,
              )
              .join(" → "),
          ),
        ),
      ),
    ),
  );
  return h("figure", { class: "price-history" }, chart, table);
}
