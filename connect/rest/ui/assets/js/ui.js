// Shared pieces of the console: state and type badges, buttons, modals, toasts.

import { h, icon } from "./dom.js";

export function stateBadge(state) {
  const value = state || "UNASSIGNED";
  return h("span", { class: `badge state state-${value.toLowerCase()}`, title: `state ${value}` }, value);
}

export function typeBadge(type) {
  const value = type || "unknown";
  return h("span", { class: `badge type type-${value}` }, value);
}

/** One dot per task, coloured by state: a connector's health at a glance. */
export function taskDots(tasks) {
  return h(
    "span",
    { class: "task-dots" },
    tasks.map((t) => h("i", { class: `dot state-${t.state.toLowerCase()}`, title: `task ${t.id}: ${t.state}` })),
  );
}

export function button(label, { kind = "default", iconName, onclick, title, disabled, testid } = {}) {
  return h(
    "button",
    { type: "button", class: `btn btn-${kind}`, onclick, title, disabled, dataset: testid ? { action: testid } : undefined },
    iconName ? icon(iconName) : null,
    label,
  );
}

export function emptyState(title, detail) {
  return h("div", { class: "empty" }, h("div", { class: "empty-title" }, title), detail ? h("p", null, detail) : null);
}

export function errorBox(message) {
  return h("div", { class: "alert alert-error", role: "alert" }, message);
}

// ------------------------------------------------------------------ toasts

export function toast(message, kind = "ok") {
  const root = document.getElementById("toasts");
  const el = h("div", { class: `toast toast-${kind}`, role: "status" }, message);
  root.append(el);
  setTimeout(() => el.classList.add("toast-out"), 3500);
  setTimeout(() => el.remove(), 4000);
}

// ------------------------------------------------------------------ modals

let openModal = null;

export function modalOpen() {
  return openModal !== null;
}

/**
 * A modal dialog. body: element(s); actions: [{label, kind, run: async () => close?}].
 * An action's run() may throw: its message shows in the dialog, which stays open.
 * Resolves with the label of the action that closed it, or null when dismissed.
 */
export function modal({ title, body, actions = [], wide = false, testid }) {
  closeModal();
  return new Promise((resolve) => {
    const error = h("div", { class: "alert alert-error", role: "alert", hidden: true });
    const footer = h("div", { class: "modal-actions" });
    const dialog = h(
      "div",
      { class: ["modal", wide && "modal-wide"], role: "dialog", "aria-modal": "true", "aria-label": title, dataset: { modal: testid || "" } },
      h("div", { class: "modal-head" }, h("h2", null, title), h("button", { type: "button", class: "modal-x", "aria-label": "Close", onclick: () => done(null) }, "×")),
      h("div", { class: "modal-body" }, body, error),
      footer,
    );
    const backdrop = h("div", { class: "backdrop", onmousedown: (e) => e.target === backdrop && done(null) }, dialog);
    function done(result) {
      if (openModal?.backdrop !== backdrop) return;
      backdrop.remove();
      openModal = null;
      document.removeEventListener("keydown", onKey);
      resolve(result);
    }
    function onKey(e) {
      if (e.key === "Escape") done(null);
    }
    footer.append(button("Cancel", { onclick: () => done(null), testid: "cancel" }));
    for (const action of actions) {
      const btn = button(action.label, { kind: action.kind || "primary", iconName: action.icon, testid: action.testid });
      btn.addEventListener("click", async () => {
        error.hidden = true;
        btn.disabled = true;
        try {
          const keepOpen = await action.run();
          if (keepOpen !== false) done(action.label);
        } catch (exc) {
          error.textContent = exc.message || String(exc);
          error.hidden = false;
        } finally {
          btn.disabled = false;
        }
      });
      footer.append(btn);
    }
    document.addEventListener("keydown", onKey);
    document.getElementById("modal-root").append(backdrop);
    openModal = { backdrop, done };
    const first = dialog.querySelector("textarea, input, select");
    if (first) first.focus();
  });
}

export function closeModal() {
  if (openModal) openModal.done(null);
}

/** Ask before doing something that cannot be undone; resolves after run() succeeded. */
export function confirmAction({ title, message, label, kind = "danger", run }) {
  return modal({ title, body: h("p", { class: "confirm-text" }, message), actions: [{ label, kind, run, testid: "confirm" }], testid: "confirm" });
}
