// Throughput charts drawn as SVG by hand: a few dozen points need no chart library, and
// the console ships nothing it did not write.

import { fill, h, s } from "./dom.js";
import { compact } from "./format.js";

const SERIES = [
  { key: "in", label: "In", className: "series-in" },
  { key: "out", label: "Out", className: "series-out" },
];

function niceCeiling(x) {
  if (x <= 0) return 1;
  const exp = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= x) return m * exp;
  return 10 * exp;
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

function path(points) {
  return points.map(([x, y], i) => `${i ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`).join("");
}

/**
 * Records/s in and out over time. samples: [{t: epoch ms, in: r/s, out: r/s}].
 * Returns an element that fills its container's width.
 */
export function throughputChart(samples, { width = 640, height = 180 } = {}) {
  const box = h("div", { class: "chart" });
  if (!samples || samples.length < 2) {
    box.append(h("div", { class: "chart-empty" }, "Collecting samples… the chart fills in as the page watches."));
    return box;
  }
  const pad = { left: 48, right: 14, top: 12, bottom: 24 };
  const w = Math.max(240, width);
  const plotW = w - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const t0 = samples[0].t;
  const t1 = samples[samples.length - 1].t;
  const span = Math.max(1, t1 - t0);
  const top = niceCeiling(Math.max(...samples.map((p) => Math.max(p.in, p.out))));
  const x = (t) => pad.left + ((t - t0) / span) * plotW;
  const y = (v) => pad.top + plotH - (v / top) * plotH;

  const svg = s("svg", {
    class: "chart-svg",
    viewBox: `0 0 ${w} ${height}`,
    width: w,
    height,
    role: "img",
    "aria-label": "Records per second in and out",
  });
  for (const frac of [0, 0.5, 1]) {
    const v = top * frac;
    svg.append(
      s("line", { class: "gridline", x1: pad.left, x2: w - pad.right, y1: y(v), y2: y(v) }),
      s("text", { class: "axis", x: pad.left - 8, y: y(v) + 4, "text-anchor": "end" }, `${compact(v)}/s`),
    );
  }
  for (const [t, anchor] of [[t0, "start"], [t0 + span / 2, "middle"], [t1, "end"]]) {
    svg.append(s("text", { class: "axis", x: x(t), y: height - 6, "text-anchor": anchor }, clock(t)));
  }
  for (const series of SERIES) {
    const pts = samples.map((p) => [x(p.t), y(p[series.key])]);
    const area = `${path(pts)}L${pts[pts.length - 1][0].toFixed(1)},${y(0)}L${pts[0][0].toFixed(1)},${y(0)}Z`;
    svg.append(s("path", { class: `area ${series.className}`, d: area }));
    svg.append(s("path", { class: `line ${series.className}`, d: path(pts) }));
  }
  const guide = s("line", { class: "guide", x1: 0, x2: 0, y1: pad.top, y2: pad.top + plotH, visibility: "hidden" });
  svg.append(guide);
  const tip = h("div", { class: "chart-tip", hidden: true });
  svg.addEventListener("mousemove", (event) => {
    const rect = svg.getBoundingClientRect();
    const px = ((event.clientX - rect.left) / rect.width) * w;
    const t = t0 + ((px - pad.left) / plotW) * span;
    let best = samples[0];
    for (const p of samples) if (Math.abs(p.t - t) < Math.abs(best.t - t)) best = p;
    guide.setAttribute("x1", x(best.t));
    guide.setAttribute("x2", x(best.t));
    guide.setAttribute("visibility", "visible");
    tip.hidden = false;
    fill(
      tip,
      h("strong", null, clock(best.t)),
      h("span", { class: "series-in" }, `in ${compact(best.in)}/s`),
      h("span", { class: "series-out" }, `out ${compact(best.out)}/s`),
    );
    tip.style.left = `${(x(best.t) / w) * 100}%`;
  });
  svg.addEventListener("mouseleave", () => {
    guide.setAttribute("visibility", "hidden");
    tip.hidden = true;
  });
  box.append(svg, tip, legend());
  return box;
}

function legend() {
  return h(
    "div",
    { class: "chart-legend" },
    SERIES.map((series) => h("span", { class: `legend-item ${series.className}` }, h("i"), `${series.label} (records/s)`)),
  );
}

/** A tiny line of the last values, for summary cards. */
export function sparkline(values, { width = 120, height = 32, className = "series-in" } = {}) {
  const svg = s("svg", { class: "sparkline", viewBox: `0 0 ${width} ${height}`, width, height, "aria-hidden": "true" });
  if (!values || values.length < 2) return svg;
  const top = Math.max(...values) || 1;
  const pts = values.map((v, i) => [(i / (values.length - 1)) * width, height - 2 - (v / top) * (height - 4)]);
  const area = `${path(pts)}L${width},${height}L0,${height}Z`;
  svg.append(s("path", { class: `area ${className}`, d: area }), s("path", { class: `line ${className}`, d: path(pts) }));
  return svg;
}
