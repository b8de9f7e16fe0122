// The embedded schema registry: subjects, their versions, and each version's schema.

import { api, seg } from "../api.js";
import { fill, h } from "../dom.js";
import { emptyState } from "../ui.js";

const TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** Pretty JSON with spans per token kind (text nodes only: never parsed as HTML). */
function highlighted(text) {
  let pretty = text;
  try {
    pretty = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return h("pre", { class: "code-block" }, text); // not JSON (e.g. Protobuf): as sent
  }
  const out = [];
  let last = 0;
  for (const m of pretty.matchAll(TOKEN)) {
    if (m.index > last) out.push(pretty.slice(last, m.index));
    const kind = m[1] ? (m[2] ? "tok-key" : "tok-str") : m[3] ? "tok-lit" : "tok-num";
    out.push(h("span", { class: kind }, m[1] || m[0]));
    if (m[2]) out.push(m[2]);
    last = m.index + m[0].length;
  }
  out.push(pretty.slice(last));
  return h("pre", { class: "code-block", id: "schema-text" }, out);
}

export function mount(container, { subject, version }) {
  const list = h("div", { class: "subject-list" });
  const detail = h("div", { class: "subject-detail card" });
  const layout = h("div", { class: "split" }, list, detail);
  const sub = h("p", { class: "sub" }, "Subjects of the embedded schema registry, their versions and schemas.");
  container.append(h("div", { class: "page-head" }, h("div", null, h("h1", null, "Schemas"), sub)), layout);
  let shownKey = null;

  async function showSchema(chosen) {
    const ver = version || "latest";
    const key = `${chosen.subject}/${ver}`;
    if (key === shownKey) return;
    const record = await api.get(`ops/schemas/${seg(chosen.subject)}/versions/${seg(ver)}`);
    shownKey = key;
    fill(
      detail,
      h("div", { class: "card-head" }, h("h3", { class: "mono" }, chosen.subject), h("span", { class: "badge" }, record.schemaType || "AVRO"), h("span", { class: "muted small" }, `compatibility ${chosen.compatibility}`)),
      h(
        "div",
        { class: "chips versions" },
        chosen.versions.map((v) =>
          h("a", { class: ["chip", v === record.version && "chip-on"], href: `#/schemas/${encodeURIComponent(chosen.subject)}/${v}`, dataset: { version: v } }, `v${v}`),
        ),
      ),
      h("dl", { class: "facts" }, h("dt", null, "Version"), h("dd", null, String(record.version)), h("dt", null, "Schema id"), h("dd", null, String(record.id)), record.deleted ? [h("dt", null, "Deleted"), h("dd", { class: "text-warn" }, "soft-deleted")] : null),
      highlighted(record.schema),
    );
  }

  return {
    async refresh() {
      const data = await api.get("ops/schemas");
      if (!data.enabled) {
        fill(layout, emptyState("No embedded schema registry", "Start the worker with schema.registry.enable=true to serve a registry over this log; its subjects show here."));
        return;
      }
      if (!data.subjects.length) {
        fill(layout, emptyState("No subjects yet", "Schemas appear here once a converter or a client registers one."));
        return;
      }
      if (!layout.contains(list)) fill(layout, list, detail);
      const chosen = data.subjects.find((s) => s.subject === subject) || data.subjects[0];
      fill(
        list,
        data.subjects.map((s) =>
          h(
            "a",
            { class: ["subject", s === chosen && "active", s.deleted && "deleted"], href: `#/schemas/${encodeURIComponent(s.subject)}`, dataset: { subject: s.subject } },
            h("span", { class: "mono name" }, s.subject),
            h("span", { class: "muted small" }, s.latest ? `v${s.latest.version} · id ${s.latest.id} · ${s.latest.type}` : "deleted"),
          ),
        ),
      );
      await showSchema(chosen);
    },
  };
}
