// The connector list: the cluster at a glance (summary cards) and every connector with
// its state, tasks, worker and throughput, from one request (GET /ops/connectors).

import { api } from "../api.js";
import { fill, h } from "../dom.js";
import { compact, int, rate, shortClass } from "../format.js";
import { sparkline } from "../chart.js";
import { button, emptyState, stateBadge, taskDots, toast, typeBadge } from "../ui.js";
import { openCreate } from "./editor.js";

const STATE_FILTERS = ["ALL", "RUNNING", "PAUSED", "STOPPED", "FAILED"];
// Kept across visits of the page: an operator's filter survives a look at one connector.
const prefs = { search: "", state: "ALL", type: "all", sort: "name", desc: false };
let firstRender = true;

const COLUMNS = [
  ["name", "Connector", (c) => c.name],
  ["type", "Type", (c) => c.type],
  ["state", "State", (c) => c.state],
  ["tasks", "Tasks", (c) => c.tasks.length],
  ["worker", "Worker", (c) => c.worker_id],
  ["in", "In", (c) => c.in_per_s],
  ["out", "Out", (c) => c.out_per_s],
  ["errors", "Errors", (c) => c.record_failures + c.dlq_records + failedTasks(c)],
];

function failedTasks(c) {
  return c.tasks.filter((t) => t.state === "FAILED").length + (c.state === "FAILED" ? 1 : 0);
}

function matches(c) {
  if (prefs.state !== "ALL") {
    const failing = c.state === "FAILED" || c.tasks.some((t) => t.state === "FAILED");
    if (prefs.state === "FAILED" ? !failing : c.state !== prefs.state) return false;
  }
  if (prefs.type !== "all" && c.type !== prefs.type) return false;
  if (!prefs.search) return true;
  const q = prefs.search.toLowerCase();
  return c.name.toLowerCase().includes(q) || c.class.toLowerCase().includes(q) || c.worker_id.toLowerCase().includes(q);
}

function sorted(connectors) {
  const key = COLUMNS.find(([id]) => id === prefs.sort)?.[2] || COLUMNS[0][2];
  const out = [...connectors].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return typeof x === "number" ? x - y : String(x).localeCompare(String(y));
  });
  return prefs.desc ? out.reverse() : out;
}

function card(label, value, detail, extra) {
  return h("div", { class: "card stat" }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value" }, value), detail ? h("div", { class: "stat-detail" }, detail) : null, extra);
}

function countsLine(counter) {
  const parts = Object.entries(counter)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => h("span", { class: `count state-text-${state.toLowerCase()}` }, `${n} ${state.toLowerCase()}`));
  return parts.length ? parts.flatMap((p, i) => (i ? [" · ", p] : [p])) : "none";
}

function summary(data) {
  const byState = {};
  const tasksByState = {};
  let failures = 0;
  let dlq = 0;
  let inRate = 0;
  let outRate = 0;
  for (const c of data.connectors) {
    byState[c.state] = (byState[c.state] || 0) + 1;
    for (const t of c.tasks) tasksByState[t.state] = (tasksByState[t.state] || 0) + 1;
    failures += c.record_failures;
    dlq += c.dlq_records;
    inRate += c.in_per_s;
    outRate += c.out_per_s;
  }
  const samples = data.history.samples;
  const tasks = Object.values(tasksByState).reduce((a, b) => a + b, 0);
  const failedTasksCount = tasksByState.FAILED || 0;
  return [
    card("Connectors", int(data.connectors.length), countsLine(byState)),
    card("Tasks", int(tasks), countsLine(tasksByState)),
    card("Records in", rate(inRate), "polled by sources, read by sinks", sparkline(samples.map((p) => p.in), { width: 96, className: "series-in" })),
    card("Records out", rate(outRate), "written to the log, put to sinks", sparkline(samples.map((p) => p.out), { width: 96, className: "series-out" })),
    h(
      "div",
      { class: ["card stat", (failedTasksCount || byState.FAILED) && "stat-alert"] },
      h("div", { class: "stat-label" }, "Failed"),
      h("div", { class: "stat-value" }, int(failedTasksCount + (byState.FAILED || 0))),
      h("div", { class: "stat-detail" }, `${compact(failures)} record failures · ${compact(dlq)} to the DLQ`),
    ),
  ];
}

function row(c, ctx) {
  const running = c.tasks.filter((t) => t.state === "RUNNING").length;
  const errors = c.record_failures + c.dlq_records;
  const href = `#/connectors/${encodeURIComponent(c.name)}`;
  return h(
    "tr",
    { class: "row-link", dataset: { connector: c.name, state: c.state }, onclick: (e) => e.target.tagName !== "A" && ctx.navigate(href) },
    h("td", null, h("a", { href, class: "name" }, c.name), h("div", { class: "muted small", title: c.class }, shortClass(c.class))),
    h("td", null, typeBadge(c.type)),
    h("td", null, stateBadge(c.state), c.target && c.target !== "STARTED" && c.target !== c.state ? h("div", { class: "muted small" }, `→ ${c.target}`) : null),
    h("td", null, taskDots(c.tasks), h("span", { class: "muted small" }, ` ${running}/${c.tasks.length}`)),
    h("td", { class: "mono small" }, c.worker_id || "—"),
    h("td", { class: "num" }, rate(c.in_per_s)),
    h("td", { class: "num" }, rate(c.out_per_s)),
    h("td", { class: ["num", (errors || failedTasks(c)) && "text-bad"] }, failedTasks(c) ? `${failedTasks(c)} failed` : errors ? compact(errors) : "—"),
  );
}

export function mount(container, _params, ctx) {
  const summaryEl = h("div", { class: "cards" });
  const tbody = h("tbody");
  const shown = h("span", { class: "muted small" });
  const chips = h("div", { class: "chips", role: "group", "aria-label": "Filter by state" });
  const head = h("tr");
  const table = h("table", { class: "table", id: "connector-table" }, h("thead", null, head), tbody);
  const body = h("div", { class: "table-wrap" }, table);
  let data = null;

  const search = h("input", {
    type: "search",
    class: "input search",
    placeholder: "Filter by name, class or worker",
    value: prefs.search,
    "aria-label": "Filter connectors",
    oninput: (e) => {
      prefs.search = e.target.value;
      render();
    },
  });
  const typeSelect = h(
    "select",
    { class: "input", "aria-label": "Type", onchange: (e) => ((prefs.type = e.target.value), render()) },
    ["all", "source", "sink"].map((t) => h("option", { value: t, selected: prefs.type === t }, t === "all" ? "All types" : `${t}s`)),
  );

  function renderChips() {
    fill(
      chips,
      STATE_FILTERS.map((s) =>
        h("button", { type: "button", class: ["chip", prefs.state === s && "chip-on"], dataset: { filter: s }, onclick: () => ((prefs.state = s), render()) }, s === "ALL" ? "All" : s.toLowerCase()),
      ),
    );
  }

  function renderHead() {
    fill(
      head,
      COLUMNS.map(([id, label]) =>
        h(
          "th",
          {
            class: [["in", "out", "errors"].includes(id) && "num", "sortable", prefs.sort === id && (prefs.desc ? "sorted-desc" : "sorted-asc")],
            onclick: () => {
              prefs.desc = prefs.sort === id ? !prefs.desc : ["in", "out", "errors"].includes(id);
              prefs.sort = id;
              render();
            },
          },
          label,
        ),
      ),
    );
  }

  function render() {
    renderChips();
    renderHead();
    if (!data) return;
    const rows = sorted(data.connectors.filter(matches));
    fill(tbody, rows.map((c) => row(c, ctx)));
    fill(shown, `${rows.length} of ${data.connectors.length} shown`);
    body.hidden = data.connectors.length === 0;
    emptyEl.hidden = data.connectors.length !== 0;
  }

  const emptyEl = h("div", { hidden: true }, emptyState("No connectors yet", "Create one from its JSON config: a connector class, its settings, and how many tasks may run it."), h("div", { class: "center" }, button("New connector", { kind: "primary", iconName: "plus", onclick: () => openCreate(ctx).catch((e) => toast(e.message, "error")) })));

  container.append(
    h("div", { class: "page-head" }, h("div", null, h("h1", null, "Connectors"), h("p", { class: "sub" }, "Every connector on the cluster, with its tasks and throughput."))),
    summaryEl,
    h("div", { class: "toolbar" }, search, chips, typeSelect, h("span", { class: "spacer" }), shown),
    body,
    emptyEl,
  );
  render();

  return {
    async refresh() {
      data = await api.get("ops/connectors");
      fill(summaryEl, summary(data));
      render();
      ctx.counts({ connectors: data.connectors.length, failed: data.connectors.filter((c) => failedTasks(c)).length });
      if (firstRender) {
        // The first list on screen, for bench/ops_bench.py: the rows are in the DOM now,
        // and painted by the frame after next.
        firstRender = false;
        performance.mark("tributary:connectors-rendered");
        const rows = tbody.rows.length;
        requestAnimationFrame(() =>
          requestAnimationFrame(() => {
            performance.mark("tributary:connectors-painted");
            document.body.dataset.connectorRows = String(rows);
          }),
        );
      }
    },
  };
}
