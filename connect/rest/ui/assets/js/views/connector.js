// One connector: its state and actions, throughput chart, tasks with their traces,
// dead letters, offsets and sink lag, and its config (secrets masked by the worker).

import { ApiError, api, seg } from "../api.js";
import { fill, h, icon } from "../dom.js";
import { compact, int, rate, share, shortClass } from "../format.js";
import { throughputChart } from "../chart.js";
import { button, confirmAction, emptyState, stateBadge, toast, typeBadge } from "../ui.js";
import { openEditConfig, openEditOffsets, openRewind } from "./editor.js";

const TABS = [
  ["overview", "Overview"],
  ["offsets", "Offsets & lag"],
  ["config", "Config"],
];
const HIDDEN = "[hidden]";

function href(name, tab) {
  return `#/connectors/${encodeURIComponent(name)}${tab && tab !== "overview" ? `/${tab}` : ""}`;
}

async function act(ctx, label, call) {
  try {
    await call();
    toast(label);
  } catch (exc) {
    toast(exc.message, "error");
  }
  await ctx.refresh();
}

function actions(c, ctx) {
  const path = `connectors/${seg(c.name)}`;
  const out = [];
  if (c.target === "STARTED") {
    out.push(button("Pause", { iconName: "pause", testid: "pause", onclick: () => act(ctx, `Pausing ${c.name}`, () => api.put(`${path}/pause`)) }));
  } else {
    out.push(button("Resume", { iconName: "play", kind: "primary", testid: "resume", onclick: () => act(ctx, `Resuming ${c.name}`, () => api.put(`${path}/resume`)) }));
  }
  if (c.target !== "STOPPED") {
    out.push(button("Stop", { iconName: "stop", testid: "stop", onclick: () => act(ctx, `Stopping ${c.name}`, () => api.put(`${path}/stop`)) }));
  }
  const failed = c.tasks.some((t) => t.state === "FAILED");
  out.push(
    h(
      "details",
      { class: "menu" },
      h("summary", { class: "btn btn-default", dataset: { action: "restart-menu" } }, icon("restart"), "Restart"),
      h(
        "div",
        { class: "menu-items" },
        button("Restart connector", { testid: "restart", onclick: () => act(ctx, `Restarting ${c.name}`, () => api.post(`${path}/restart`)) }),
        button("Restart failed tasks", {
          testid: "restart-failed",
          disabled: !failed && c.state !== "FAILED",
          onclick: () => act(ctx, `Restarting the failed tasks of ${c.name}`, () => api.post(`${path}/restart?includeTasks=true&onlyFailed=true`)),
        }),
        button("Restart connector and all tasks", { testid: "restart-all", onclick: () => act(ctx, `Restarting ${c.name} and its tasks`, () => api.post(`${path}/restart?includeTasks=true`)) }),
      ),
    ),
  );
  out.push(
    button("Delete", {
      kind: "danger",
      iconName: "trash",
      testid: "delete",
      onclick: () =>
        confirmAction({
          title: `Delete ${c.name}?`,
          message: `The connector and its tasks stop and its config is removed. Its offsets stay in the log, so a connector created again under the same name resumes where this one stopped.`,
          label: "Delete connector",
          run: async () => {
            await api.del(path);
            toast(`Deleted ${c.name}`);
            ctx.navigate("#/connectors");
          },
        }),
    }),
  );
  return out;
}

function header(c, ctx) {
  return [
    h("nav", { class: "crumbs" }, h("a", { href: "#/connectors" }, "‹ All connectors")),
    h(
      "div",
      { class: "page-head" },
      h(
        "div",
        null,
        h("h1", { class: "title-row" }, h("span", { class: "connector-name" }, c.name), stateBadge(c.state), typeBadge(c.type)),
        h(
          "p",
          { class: "sub" },
          h("span", { title: c.class }, shortClass(c.class)),
          " · ",
          `${c.tasks.length} task${c.tasks.length === 1 ? "" : "s"}`,
          " · worker ",
          h("span", { class: "mono" }, c.worker_id || "—"),
          c.target !== "STARTED" && c.target !== c.state ? ` · target ${c.target}` : "",
        ),
      ),
      h("div", { class: "actions" }, actions(c, ctx)),
    ),
  ];
}

function kpi(label, value, cls) {
  return h("div", { class: ["card stat", cls] }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value" }, value));
}

function trace(text) {
  return h("pre", { class: "trace" }, text);
}

function tasksTable(c, ctx) {
  if (!c.tasks.length) return emptyState("No tasks", c.target === "STOPPED" ? "A stopped connector runs no tasks." : "The connector has not started any task yet.");
  const rows = [];
  for (const t of c.tasks) {
    rows.push(
      h(
        "tr",
        { dataset: { task: t.id, state: t.state } },
        h("td", { class: "mono" }, `#${t.id}`),
        h("td", null, stateBadge(t.state)),
        h("td", { class: "mono small" }, t.worker_id || "—"),
        h("td", { class: "num" }, int(t.records_in)),
        h("td", { class: "num" }, int(t.records_out)),
        h("td", { class: ["num", t.record_failures && "text-bad"] }, int(t.record_failures)),
        h("td", { class: ["num", t.dlq_records && "text-warn"] }, int(t.dlq_records)),
        h(
          "td",
          { class: "right" },
          button("Restart", {
            kind: t.state === "FAILED" ? "primary" : "ghost",
            iconName: "restart",
            testid: `restart-task-${t.id}`,
            onclick: () => act(ctx, `Restarting task ${t.id} of ${c.name}`, () => api.post(`connectors/${seg(c.name)}/tasks/${t.id}/restart`)),
          }),
        ),
      ),
    );
    if (t.trace) {
      rows.push(h("tr", { class: "trace-row", dataset: { traceOf: t.id } }, h("td", { colspan: 8 }, h("div", { class: "trace-label" }, `Task ${t.id} failed with:`), trace(t.trace))));
    }
  }
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "table", id: "task-table" },
      h("thead", null, h("tr", null, ["Task", "State", "Worker", "In", "Out", "Failures", "Dead-lettered", ""].map((l, i) => h("th", { class: i >= 3 && i <= 6 ? "num" : null }, l)))),
      h("tbody", null, rows),
    ),
  );
}

function errorsCard(c, config) {
  const tolerance = config?.["errors.tolerance"] || "none";
  const dlq = config?.["errors.deadletterqueue.topic.name"] || "";
  return h(
    "div",
    { class: "card" },
    h("h3", null, "Error handling"),
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "errors.tolerance"),
      h("dd", null, tolerance),
      h("dt", null, "Dead-letter topic"),
      h("dd", { class: "mono" }, dlq || (c.type === "sink" ? "none" : "— (sinks only)")),
      h("dt", null, "Records dead-lettered"),
      h("dd", { class: c.dlq_records ? "text-warn" : null, dataset: { field: "dlq" } }, int(c.dlq_records)),
      h("dt", null, "Record failures"),
      h("dd", { class: c.record_failures ? "text-bad" : null }, int(c.record_failures)),
    ),
  );
}

function overview(c, config, width, ctx) {
  const failed = c.tasks.filter((t) => t.state === "FAILED").length;
  return [
    c.trace ? h("div", { class: "alert alert-error" }, h("strong", null, "The connector failed:"), trace(c.trace)) : null,
    failed ? h("div", { class: "alert alert-error", role: "alert" }, `${failed} task${failed > 1 ? "s" : ""} failed — the traces are below. Fix the cause, then restart.`) : null,
    h(
      "div",
      { class: "cards" },
      kpi("In", rate(c.in_per_s)),
      kpi("Out", rate(c.out_per_s)),
      kpi("Records in", compact(c.records_in)),
      kpi("Records out", compact(c.records_out)),
      kpi("Dead-lettered", compact(c.dlq_records), c.dlq_records ? "stat-warn" : null),
    ),
    h("div", { class: "card" }, h("h3", null, "Throughput"), throughputChart(c.history, { width })),
    h("div", { class: "card" }, h("h3", null, "Tasks"), tasksTable(c, ctx)),
    errorsCard(c, config),
  ];
}

function json(value) {
  return h("code", { class: "json" }, JSON.stringify(value));
}

function offsetsPanel(c, offsets, lag, ctx) {
  const stopped = c.target === "STOPPED";
  const path = `connectors/${seg(c.name)}`;
  const tools = stopped
    ? h(
        "div",
        { class: "actions" },
        button("Alter offsets…", { iconName: "edit", testid: "alter-offsets", onclick: () => openEditOffsets(ctx, c.name, offsets) }),
        c.type === "sink" ? button("Rewind to time…", { iconName: "clock", testid: "rewind", onclick: () => openRewind(ctx, c.name) }) : null,
        button("Reset offsets", {
          kind: "danger",
          testid: "reset-offsets",
          onclick: () =>
            confirmAction({
              title: `Reset the offsets of ${c.name}?`,
              message: c.type === "sink" ? "The sink forgets its committed positions and reads every partition again from where auto.offset.reset says." : "The source forgets where it stopped and starts reading its source from the beginning.",
              label: "Reset offsets",
              run: async () => {
                const result = await api.del(`${path}/offsets`);
                toast(result?.message || "Offsets reset");
                await ctx.refresh();
              },
            }),
        }),
      )
    : h("div", { class: "alert alert-info" }, "Offsets can be changed only while the connector is stopped. ", button("Stop connector", { iconName: "stop", testid: "stop-for-offsets", onclick: () => act(ctx, `Stopping ${c.name}`, () => api.put(`${path}/stop`)) }));

  const parts = [tools];
  if (c.type === "sink") {
    const maxLag = Math.max(0, ...lag.map((l) => l.lag));
    const total = lag.reduce((a, l) => a + l.lag, 0);
    parts.push(
      h(
        "div",
        { class: "card" },
        h("h3", null, "Lag ", h("span", { class: "muted" }, `${int(total)} records behind`)),
        lag.length
          ? h(
              "table",
              { class: "table", id: "lag-table" },
              h("thead", null, h("tr", null, ["Topic", "Partition", "Log end", "Committed", "Lag", ""].map((l, i) => h("th", { class: i >= 1 && i <= 4 ? "num" : null }, l)))),
              h(
                "tbody",
                null,
                lag.map((l) =>
                  h(
                    "tr",
                    { dataset: { topic: l.topic, partition: l.partition } },
                    h("td", { class: "mono" }, l.topic),
                    h("td", { class: "num" }, l.partition),
                    h("td", { class: "num" }, int(l.log_end_offset)),
                    h("td", { class: "num" }, l.committed_offset === null ? "—" : int(l.committed_offset)),
                    h("td", { class: ["num", l.lag > 0 && "text-warn"] }, int(l.lag)),
                    h("td", { class: "bar-cell" }, h("div", { class: "bar" }, h("i", { style: { width: `${share(l.lag, maxLag)}%` } }))),
                  ),
                ),
              ),
            )
          : emptyState("No partitions", "The topics this sink reads do not exist yet."),
      ),
    );
  }
  const rows = offsets.map((o) =>
    c.type === "sink"
      ? h("tr", null, h("td", { class: "mono" }, o.partition?.kafka_topic ?? json(o.partition)), h("td", { class: "num" }, o.partition?.kafka_partition ?? "—"), h("td", { class: "num" }, o.offset ? int(o.offset.kafka_offset) : "—"))
      : h("tr", null, h("td", null, json(o.partition)), h("td", null, o.offset ? json(o.offset) : "—")),
  );
  const head = c.type === "sink" ? ["Topic", "Partition", "Committed offset"] : ["Source partition", "Source offset"];
  parts.push(
    h(
      "div",
      { class: "card" },
      h("h3", null, c.type === "sink" ? "Committed offsets" : "Source offsets"),
      offsets.length
        ? h("table", { class: "table", id: "offsets-table" }, h("thead", null, h("tr", null, head.map((l, i) => h("th", { class: c.type === "sink" && i ? "num" : null }, l)))), h("tbody", null, rows))
        : emptyState("No offsets yet", "Nothing has been committed for this connector."),
    ),
  );
  return parts;
}

function configPanel(c, info, ctx) {
  const entries = Object.entries(info.config).sort(([a], [b]) => a.localeCompare(b));
  return h(
    "div",
    { class: "card" },
    h("div", { class: "card-head" }, h("h3", null, "Config"), button("Edit config", { iconName: "edit", testid: "edit-config", onclick: () => openEditConfig(ctx, c.name, info.config) })),
    h(
      "table",
      { class: "table kv", id: "config-table" },
      h(
        "tbody",
        null,
        entries.map(([k, v]) =>
          h(
            "tr",
            { dataset: { key: k } },
            h("th", { class: "mono" }, k),
            h("td", { class: "mono" }, v === HIDDEN ? h("span", { class: "badge secret", title: "A secret: the worker never shows it" }, icon("lock"), "hidden") : v),
          ),
        ),
      ),
    ),
  );
}

export function mount(container, { name, tab }, ctx) {
  const head = h("div");
  const tabs = h("nav", { class: "tabs" }, TABS.map(([id, label]) => h("a", { href: href(name, id), class: ["tab", id === tab && "active"], dataset: { tab: id } }, label)));
  const body = h("div", { class: "tab-body" });
  container.append(head, tabs, body);

  return {
    async refresh() {
      let c;
      try {
        const data = await api.get(`ops/connectors?connector=${seg(name)}`);
        c = { ...data.connectors[0], history: data.history.samples };
      } catch (exc) {
        if (exc instanceof ApiError && exc.status === 404) {
          fill(head, h("nav", { class: "crumbs" }, h("a", { href: "#/connectors" }, "Connectors")));
          tabs.hidden = true;
          fill(body, emptyState(`No connector named ${name}`, "It may have been deleted."));
          return;
        }
        throw exc;
      }
      const menuOpen = head.querySelector("details.menu")?.open;
      fill(head, header(c, ctx));
      if (menuOpen) head.querySelector("details.menu").open = true;
      const width = Math.max(320, body.clientWidth - 42);
      if (tab === "offsets") {
        const [offsets, lag] = await Promise.all([
          api.get(`connectors/${seg(name)}/offsets`).then((r) => r.offsets),
          c.type === "sink" ? api.get(`ops/lag?connector=${seg(name)}`).then((r) => r.lag) : Promise.resolve([]),
        ]);
        fill(body, offsetsPanel(c, offsets, lag, ctx));
      } else if (tab === "config") {
        const info = await api.get(`connectors/${seg(name)}`);
        fill(body, configPanel(c, info, ctx));
      } else {
        const info = await api.get(`connectors/${seg(name)}`).catch(() => null);
        fill(body, overview(c, info?.config, width, ctx));
      }
    },
  };
}

