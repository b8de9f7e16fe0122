// The cluster's workers and what each runs, by state.

import { api } from "../api.js";
import { fill, h } from "../dom.js";
import { emptyState } from "../ui.js";

function counts(counter) {
  const entries = Object.entries(counter).sort();
  if (!entries.length) return h("span", { class: "muted" }, "none");
  return h("div", { class: "chips" }, entries.map(([state, n]) => h("span", { class: `badge state state-${state.toLowerCase()}` }, `${n} ${state.toLowerCase()}`)));
}

function total(counter) {
  return Object.values(counter).reduce((a, b) => a + b, 0);
}

function card(w) {
  return h(
    "div",
    { class: "card worker", dataset: { worker: w.id } },
    h(
      "div",
      { class: "card-head" },
      h("h3", { class: "mono" }, w.id),
      w.this ? h("span", { class: "badge this" }, "this worker") : null,
      w.leader ? h("span", { class: "badge leader" }, "leader") : null,
      w.member ? null : h("span", { class: "badge state-failed", title: "Only the status topic still names this worker" }, "left the group"),
      w.status ? h("span", { class: `badge health health-${w.status}` }, w.status) : null,
    ),
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "REST URL"),
      h("dd", { class: "mono" }, w.url || "—"),
      h("dt", null, "Version"),
      h("dd", null, w.version || "—"),
      h("dt", null, `Connectors (${total(w.connectors)})`),
      h("dd", null, counts(w.connectors)),
      h("dt", null, `Tasks (${total(w.tasks)})`),
      h("dd", null, counts(w.tasks)),
    ),
  );
}

export function mount(container) {
  const grid = h("div", { class: "grid" });
  const sub = h("p", { class: "sub" }, "Workers that run connectors and tasks.");
  container.append(h("div", { class: "page-head" }, h("div", null, h("h1", null, "Workers"), sub)), grid);
  return {
    async refresh() {
      const data = await api.get("ops/workers");
      const generation = data.generation ? ` · generation ${data.generation}` : "";
      fill(sub, `${data.mode === "distributed" ? "A distributed cluster" : "A standalone worker"}${generation} · Kafka cluster id ${data.kafka_cluster_id || "—"}`);
      fill(grid, data.workers.length ? data.workers.map(card) : emptyState("No workers"));
    },
  };
}
