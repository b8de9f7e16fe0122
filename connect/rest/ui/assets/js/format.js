// Numbers as an operator reads them: compact counts, rates, bytes and relative times.

const intFormat = new Intl.NumberFormat("en-US");

export function int(n) {
  return n === null || n === undefined ? "—" : intFormat.format(n);
}

/** 950, 12.3k, 4.56M: three significant digits. */
export function compact(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "—";
  const abs = Math.abs(n);
  const units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [size, unit] of units) {
    if (abs >= size) return `${trim(n / size)}${unit}`;
  }
  return abs > 0 && abs < 10 && !Number.isInteger(n) ? n.toFixed(1) : String(Math.round(n));
}

function trim(x) {
  const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
  return x.toFixed(digits).replace(/\.0+$|(\.\d*[1-9])0+$/, "$1");
}

/** Records per second: "0", "3.2/s", "12.4k/s". */
export function rate(n) {
  if (!n) return "0/s";
  return `${compact(n)}/s`;
}

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${trim(v)} ${units[i]}`;
}

/** "just now", "12 s ago", "3 min ago", "2 h ago". */
export function ago(ms, now = Date.now()) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 2) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** The last part of a dotted class name: the name operators say. */
export function shortClass(name) {
  if (!name) return "";
  const parts = String(name).split(".");
  return parts[parts.length - 1];
}

/** A share as a percentage of a total, for bars. */
export function share(part, total) {
  return total > 0 ? Math.min(100, Math.max(0, (100 * part) / total)) : 0;
}
