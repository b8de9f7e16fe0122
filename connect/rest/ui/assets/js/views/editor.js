// Dialogs that send JSON to the API: create a connector, edit its config, alter its
// offsets, rewind a sink to a time. Each validates what it can before sending and shows
// the API's own error message when the worker refuses.

import { api, seg } from "../api.js";
import { fill, h } from "../dom.js";
import { modal, toast } from "../ui.js";

function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (exc) {
    throw new Error(`${what} is not valid JSON: ${exc.message}`);
  }
}

function editor(value, { rows = 16, label }) {
  return h("textarea", { class: "input code", rows, spellcheck: "false", "aria-label": label, value });
}

/** A config map as Kafka wants it: every value a string. */
function stringMap(obj, what) {
  if (!obj || typeof obj !== "object" || Array.isArray(obj)) throw new Error(`${what} must be a JSON object of "key": "value"`);
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v !== null && typeof v === "object") throw new Error(`The value of "${k}" must be a string, number or boolean`);
    out[k] = v === null ? null : String(v);
  }
  return out;
}

function validationErrors(result) {
  const problems = [];
  for (const item of result.configs || []) {
    for (const error of item.value?.errors || []) problems.push([item.value.name, error]);
  }
  return problems;
}

function problemsList(problems) {
  return h("ul", { class: "problems" }, problems.map(([key, error]) => h("li", null, h("code", null, key), " ", error)));
}

const TEMPLATE = (cls) =>
  JSON.stringify({ "connector.class": cls || "FileStreamSource", "tasks.max": "1", topic: "my-topic", file: "data/input.txt" }, null, 2);

/** Create a connector from its name and JSON config (or Kafka's {"name", "config"}). */
export async function openCreate(ctx) {
  const name = h("input", { class: "input", id: "create-name", placeholder: "my-connector", autocomplete: "off", "aria-label": "Connector name" });
  const plugin = h("select", { class: "input", id: "create-plugin", "aria-label": "Connector class" }, h("option", { value: "" }, "Loading plugins…"));
  const config = editor(TEMPLATE(), { label: "Connector config (JSON)" });
  config.id = "create-config";
  const state = h(
    "select",
    { class: "input", id: "create-state", "aria-label": "Initial state" },
    ["RUNNING", "PAUSED", "STOPPED"].map((s) => h("option", { value: s }, s.toLowerCase())),
  );
  const report = h("div", { class: "validate-report" });
  api
    .get("connector-plugins")
    .then((plugins) => {
      fill(
        plugin,
        h("option", { value: "" }, "Insert a plugin's class…"),
        plugins.map((p) => h("option", { value: p.class }, `${p.class.split(".").pop()} (${p.type})`)),
      );
    })
    .catch(() => fill(plugin, h("option", { value: "" }, "Plugins unavailable")));
  plugin.addEventListener("change", () => {
    if (!plugin.value) return;
    let current = {};
    try {
      current = JSON.parse(config.value);
    } catch {
      current = {};
    }
    current["connector.class"] = plugin.value;
    config.value = JSON.stringify(current, null, 2);
  });

  function read() {
    let parsed = parseJson(config.value, "The config");
    let chosen = name.value.trim();
    if (parsed && typeof parsed.config === "object" && !Array.isArray(parsed.config)) {
      chosen = chosen || String(parsed.name || "");
      parsed = parsed.config;
    }
    const map = stringMap(parsed, "The config");
    chosen = chosen || map.name || "";
    if (!chosen) throw new Error("Give the connector a name.");
    return { name: chosen, config: { ...map, name: chosen } };
  }

  async function validate() {
    const { config: map } = read();
    const cls = map["connector.class"];
    if (!cls) throw new Error('The config needs "connector.class".');
    const result = await api.put(`connector-plugins/${seg(cls)}/config/validate`, map);
    const problems = validationErrors(result);
    fill(report, problems.length ? problemsList(problems) : h("div", { class: "alert alert-ok" }, "The config is valid."));
    return problems;
  }

  await modal({
    title: "New connector",
    wide: true,
    testid: "create",
    body: [
      h("div", { class: "form-row" }, h("label", { for: "create-name" }, "Name"), name),
      h("div", { class: "form-row" }, h("label", { for: "create-plugin" }, "Plugin"), plugin, h("label", { for: "create-state" }, "Start as"), state),
      h("label", { for: "create-config", class: "block-label" }, "Config (JSON; Kafka's {\"name\", \"config\"} form works too)"),
      config,
      report,
    ],
    actions: [
      { label: "Validate", kind: "default", testid: "validate", run: async () => (await validate(), false) },
      {
        label: "Create",
        kind: "primary",
        icon: "plus",
        testid: "create",
        run: async () => {
          const body = read();
          const problems = await validate();
          if (problems.length) throw new Error("Fix the config first: see the problems above.");
          await api.post("connectors", { ...body, initial_state: state.value });
          toast(`Created ${body.name}`);
          ctx.navigate(`#/connectors/${encodeURIComponent(body.name)}`);
        },
      },
    ],
  });
}

/** Replace a connector's config (masked secrets sent back as [hidden] keep their value). */
export async function openEditConfig(ctx, name, config) {
  const text = editor(JSON.stringify(config, null, 2), { rows: 20, label: "Connector config (JSON)" });
  text.id = "edit-config";
  await modal({
    title: `Edit ${name}`,
    wide: true,
    testid: "edit-config",
    body: [
      h("p", { class: "muted" }, "The whole config is replaced. Secrets show as [hidden]; leave them so and they keep their value."),
      text,
    ],
    actions: [
      {
        label: "Save config",
        testid: "save-config",
        run: async () => {
          const map = stringMap(parseJson(text.value, "The config"), "The config");
          await api.put(`connectors/${seg(name)}/config`, map);
          toast(`Saved the config of ${name}`);
          await ctx.refresh();
        },
      },
    ],
  });
}

/** PATCH a stopped connector's offsets: Kafka's {"offsets": [{partition, offset}]}. */
export async function openEditOffsets(ctx, name, offsets) {
  const text = editor(JSON.stringify({ offsets }, null, 2), { rows: 16, label: "Offsets (JSON)" });
  await modal({
    title: `Alter offsets of ${name}`,
    wide: true,
    testid: "edit-offsets",
    body: [h("p", { class: "muted" }, "Entries name a partition and its new offset; an offset of null resets that partition."), text],
    actions: [
      {
        label: "Alter offsets",
        testid: "save-offsets",
        run: async () => {
          const body = parseJson(text.value, "The offsets");
          const result = await api.patch(`connectors/${seg(name)}/offsets`, body);
          toast(result?.message || "Offsets altered");
          await ctx.refresh();
        },
      },
    ],
  });
}

/** Move a stopped sink to the first record at or after a time in each partition. */
export async function openRewind(ctx, name) {
  const when = h("input", { type: "datetime-local", class: "input", step: 1, "aria-label": "Time" });
  const hour = new Date(Date.now() - 3600_000);
  when.value = new Date(hour.getTime() - hour.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  await modal({
    title: `Rewind ${name} to a time`,
    testid: "rewind",
    body: [h("p", { class: "muted" }, "Each partition moves to its first record at or after this time (your browser's time zone), found in the log's time index."), when],
    actions: [
      {
        label: "Rewind",
        testid: "rewind",
        icon: "clock",
        run: async () => {
          const ms = new Date(when.value).getTime();
          if (Number.isNaN(ms)) throw new Error("Pick a date and time.");
          const { offsets } = await api.get(`ops/connectors/${seg(name)}/offsets-for-time?timestamp_ms=${ms}`);
          if (!offsets.length) throw new Error("The connector has no partitions to move.");
          const result = await api.patch(`connectors/${seg(name)}/offsets`, { offsets });
          toast(result?.message || "Offsets moved");
          await ctx.refresh();
        },
      },
    ],
  });
}
