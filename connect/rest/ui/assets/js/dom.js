// Building DOM without HTML strings: every value from the API becomes a text node or an
// attribute, never markup, so a connector name or a trace can never inject script
// (the page's Content-Security-Policy forbids inline script besides).

const SVG_NS = "http://www.w3.org/2000/svg";

function append(parent, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child) append(parent, c);
  } else if (child instanceof Node) {
    parent.appendChild(child);
  } else {
    parent.appendChild(document.createTextNode(String(child)));
  }
}

function apply(el, attrs) {
  if (!attrs) return;
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style") Object.assign(el.style, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "value" || key === "checked" || key === "selected" || key === "disabled") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
}

/** An HTML element: h("td", {class: "num"}, "42"). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** An SVG element (charts). */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value !== null && value !== undefined && value !== false) el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A small inline icon from the sprite-free set below (strokes, 16 px). */
const ICONS = {
  pause: "M6 4v8M10 4v8",
  play: "M5 3.5v9l7-4.5z",
  stop: "M4.5 4.5h7v7h-7z",
  restart: "M12.5 8a4.5 4.5 0 1 1-1.3-3.2M12.5 2.5v2.8H9.7",
  edit: "M3 13l.6-2.6L10.8 3.2a1.2 1.2 0 0 1 1.7 0l.3.3a1.2 1.2 0 0 1 0 1.7L5.6 12.4z",
  trash: "M3.5 4.5h9M6.5 4.5V3h3v1.5M5 4.5l.6 8.5h4.8l.6-8.5",
  plus: "M8 3v10M3 8h10",
  lock: "M4.5 7.5h7v5.5h-7zM6 7.5V5.5a2 2 0 0 1 4 0v2",
  clock: "M8 2.5a5.5 5.5 0 1 0 0 11a5.5 5.5 0 1 0 0-11M8 5v3.2l2 1.3",
  check: "M3.5 8.5l3 3 6-7",
  chevron: "M6 4l4 4-4 4",
};

export function icon(name) {
  return s(
    "svg",
    { class: "icon", viewBox: "0 0 16 16", width: 16, height: 16, "aria-hidden": "true" },
    s("path", {
      d: ICONS[name] || "",
      fill: name === "play" ? "currentColor" : "none",
      stroke: "currentColor",
      "stroke-width": 1.5,
      "stroke-linecap": "round",
      "stroke-linejoin": "round",
    }),
  );
}
