// Topics of the worker's log: partitions, earliest and latest offsets, records, size.

import { api } from "../api.js";
import { fill, h, icon } from "../dom.js";
import { bytes, compact, int } from "../format.js";
import { emptyState } from "../ui.js";

const prefs = { search: "", internal: false };
const expanded = new Set();

function partitionRows(topic) {
  return topic.partitions.map((p) =>
    h(
      "tr",
      { class: "sub-row", dataset: { partitionOf: topic.name } },
      h("td", { class: "mono indent" }, `partition ${p.partition}`),
      h("td"),
      h("td", { class: "num" }, int(p.latest_offset - p.earliest_offset)),
      h("td", { class: "num" }, int(p.earliest_offset)),
      h("td", { class: "num" }, int(p.latest_offset)),
      h("td"),
      h("td"),
    ),
  );
}

function row(topic, onToggle) {
  const open = expanded.has(topic.name);
  const earliest = Math.min(...topic.partitions.map((p) => p.earliest_offset));
  const latest = Math.max(...topic.partitions.map((p) => p.latest_offset));
  return [
    h(
      "tr",
      { class: ["row-link", open && "open"], dataset: { topic: topic.name }, onclick: () => onToggle(topic.name) },
      h("td", null, h("span", { class: ["chev", open && "chev-open"] }, icon("chevron")), h("span", { class: "name mono" }, topic.name), topic.internal ? h("span", { class: "badge internal" }, "internal") : null),
      h("td", { class: "num" }, int(topic.partitions.length)),
      h("td", { class: "num" }, compact(topic.records)),
      h("td", { class: "num" }, topic.partitions.length ? int(earliest) : "—"),
      h("td", { class: "num" }, topic.partitions.length ? int(latest) : "—"),
      h("td", { class: "num" }, bytes(topic.size_bytes)),
      h("td", { class: "num" }, topic.segments ?? "—"),
    ),
    open ? partitionRows(topic) : null,
  ];
}

export function mount(container) {
  let data = null;
  const tbody = h("tbody");
  const shown = h("span", { class: "muted small" });
  const render = () => {
    if (!data) return;
    const q = prefs.search.toLowerCase();
    const topics = data.topics.filter((t) => (prefs.internal || !t.internal) && t.name.toLowerCase().includes(q));
    fill(tbody, topics.map((t) => row(t, toggle)));
    const hidden = data.topics.filter((t) => t.internal).length;
    fill(shown, `${topics.length} topic${topics.length === 1 ? "" : "s"}${prefs.internal ? "" : ` · ${hidden} internal hidden`}`);
    empty.hidden = topics.length > 0;
  };
  const toggle = (name) => {
    if (expanded.has(name)) expanded.delete(name);
    else expanded.add(name);
    render();
  };
  const empty = h("div", { hidden: true }, emptyState("No topics", "Topics appear when a source connector first writes to one."));
  container.append(
    h("div", { class: "page-head" }, h("div", null, h("h1", null, "Topics"), h("p", { class: "sub" }, "The log's topics: partitions, offsets and size on disk. Click a topic for its partitions."))),
    h(
      "div",
      { class: "toolbar" },
      h("input", { type: "search", class: "input search", placeholder: "Filter topics", value: prefs.search, "aria-label": "Filter topics", oninput: (e) => ((prefs.search = e.target.value), render()) }),
      h("label", { class: "check" }, h("input", { type: "checkbox", checked: prefs.internal, id: "show-internal", onchange: (e) => ((prefs.internal = e.target.checked), render()) }), " Show internal topics"),
      h("span", { class: "spacer" }),
      shown,
    ),
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "table", id: "topic-table" },
        h("thead", null, h("tr", null, ["Topic", "Partitions", "Records", "Earliest", "Latest", "Size", "Segments"].map((l, i) => h("th", { class: i ? "num" : null }, l)))),
        tbody,
      ),
    ),
    empty,
  );
  return {
    async refresh() {
      data = await api.get("ops/topics");
      render();
    },
  };
}
