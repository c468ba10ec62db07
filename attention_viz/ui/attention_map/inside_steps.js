// Inside a head: the steps of the head the map shows, drawn in the browser as the map steps (no run of the page).
//
// Data (the map's data.steps, from attention_viz/ui/attention_map/inside_steps.py; the bundle's format:
// attention_viz/analysis/step_bundles.py):
//   bundle          the path of the steps' bundle of the held layers (fetched at the map's first paint)
//   slots           the page's containers: server / server_check (the page's own steps and line, for the server's
//                   view) and browser / check (this module's, for another view): one of each pair is shown
//   server_view     {layer, head} the page drew its steps for
//   templates       {step key: plotly JSON}: the page's charts, the template of each chart kind
//   config          the charts' plotly config; title: the page title's text (segments)
//   distance_title  the heading of the score-over-distance curve (a RoPE model)
// Texts are segments: strings, and ["name"] where the head shown's value goes (its number, the weights' total,
// all made in Python); every text is set as text, never as HTML. Every number drawn is the bundle's.
import { appUrl, plotly } from "./plotly_loader.js";

const bundles = new Map(); // path -> {header, buffer, base} once read, or a Promise while fetched
const CHART_FIELDS = { z: "z", y: "y" };

function parse(buffer) {
  const bytes = new Uint8Array(buffer);
  if (String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]) !== "AVM1") throw new Error("not a steps bundle");
  const length = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  return { header, buffer, base: Math.ceil((8 + length) / 4) * 4 };
}

function remember(path, value) {
  bundles.set(path, value);
  while (bundles.size > 4) bundles.delete(bundles.keys().next().value);
}

// the steps' bundle named by the data, or null while it is fetched (asked for at the map's first paint; the map
// repaints once it is here)
function bundleOf(map) {
  const s = map.data.steps;
  const known = bundles.get(s.bundle);
  if (known === "gone") return null;
  if (known && !(known instanceof Promise)) return known;
  if (!known) {
    const path = s.bundle;
    const promise = fetch(appUrl(path), { credentials: "same-origin" })
      .then((response) => {
        if (!response.ok) throw new Error("the steps' data is gone: " + response.status);
        return response.arrayBuffer();
      })
      .then((buffer) => {
        remember(path, parse(buffer));
        if (map.data.steps.bundle === path) map.paint();
      })
      .catch(() => bundles.set(path, "gone"));
    remember(path, promise);
  }
  return null;
}

function layerEntry(map, layer) {
  const b = bundleOf(map);
  return b ? b.header.layers.find((entry) => entry.layer === layer) || null : null;
}

// whether the steps of the view's layer are held or on their way (else a step asks the page for a run: a layer
// the bundle lacks or where the query sees no key, a bundle the server no longer has)
export function stepsHeld(map) {
  const known = bundles.get(map.data.steps.bundle);
  if (known === undefined || known instanceof Promise) return true; // drawn once it is here
  const entry = known === "gone" ? null : layerEntry(map, map.view.layer);
  return !!entry && !entry.error;
}

function fill(parts, values) {
  return parts.map((part) => (typeof part === "string" ? part : String(values[part[0]]))).join("");
}

function show(key, on) {
  const element = document.querySelector(".st-key-" + key);
  if (element) element.style.display = on ? "flex" : "none";
}

function slot(key, className) {
  const place = document.querySelector(".st-key-" + key);
  if (!place) return null;
  let box = place.querySelector(":scope > ." + className);
  if (!box) {
    box = document.createElement("div");
    box.className = className;
    box.style.cssText = "width:100%";
    place.append(box);
  }
  return box;
}

function words(number, text, values) {
  const p = document.createElement("p");
  p.style.cssText = "margin:0 0 1rem 0;line-height:1.6";
  if (number !== null) {
    const strong = document.createElement("strong");
    strong.textContent = number + ".";
    p.append(strong, " ");
  }
  if (text.bold) {
    const strong = document.createElement("strong");
    strong.textContent = text.bold;
    p.append(strong, " ");
  }
  p.append(fill(text.text, values));
  return p;
}

function newRow(p) {
  const line = document.createElement("div");
  line.style.cssText = "display:flex;gap:1rem;width:100%;align-items:flex-start";
  const left = document.createElement("div");
  left.style.cssText = "flex:1 1 0;min-width:0";
  left.append(p);
  const right = document.createElement("div");
  right.className = "av-step-chart";
  right.style.cssText = "flex:2 1 0;min-width:0";
  line.append(left, right);
  return { line, chart: right };
}

function merge(target, patch) {
  for (const [name, value] of Object.entries(patch || {})) {
    if (value && typeof value === "object" && !Array.isArray(value) && target[name] && typeof target[name] === "object") {
      merge(target[name], value);
    } else {
      target[name] = value;
    }
  }
  return target;
}

// one head's values of a step's array: rows of a matrix (z) or one row (y)
function values(b, array, head, field) {
  const [, ...rest] = array.shape;
  const count = rest.reduce((x, y) => x * y, 1);
  const flat = new Float32Array(b.buffer, b.base + array.offset + head * count * 4, count);
  if (field === "y") return Array.from(flat);
  const [rows, columns] = rest;
  return Array.from({ length: rows }, (_, i) => Array.from(flat.subarray(i * columns, (i + 1) * columns)));
}

function figureOf(map, step, head) {
  const s = map.data.steps, b = bundleOf(map);
  if (!map.stepTemplates || map.stepTemplates.source !== s.templates) {
    map.stepTemplates = { source: s.templates, parsed: {} };
  }
  const parsed = map.stepTemplates.parsed;
  if (!parsed[step.key]) parsed[step.key] = JSON.stringify(JSON.parse(s.templates[step.key]));
  const figure = JSON.parse(parsed[step.key]);
  const trace = figure.data[0];
  merge(trace, (step.layer_patch || {}).trace);
  merge(figure.layout, (step.layer_patch || {}).layout);
  const patch = step.patches[head];
  merge(trace, patch.trace);
  merge(figure.layout, patch.layout);
  trace[CHART_FIELDS[step.field]] = values(b, step.array, head, step.field);
  return figure;
}

function config(map, Plotly) {
  const given = map.data.steps.config || {};
  const filename = map.fileName();
  const toSvg = { name: "toSVG", title: map.data.texts.svg, icon: Plotly.Icons.disk,
    click: (gd) => Plotly.downloadImage(gd, { format: "svg", filename }) };
  return { responsive: true, displaylogo: false, showSendToCloud: false, ...given,
    toImageButtonOptions: { ...(given.toImageButtonOptions || {}), filename },
    modeBarButtonsToRemove: [...(given.modeBarButtonsToRemove || []), "sendChartToCloud"],
    modeBarButtonsToAdd: [...(given.modeBarButtonsToAdd || []), toSvg] };
}

function paintTitle(map) {
  const title = map.controls && map.controls.querySelector(".av-title");
  const v = map.view;
  if (title) title.textContent = fill(map.data.steps.title.text, { layer: v.layer, head: v.head });
}

// the steps of the head shown: the page's own at the server's view, else this module's (texts in this frame,
// charts in the next)
export function paintSteps(map) {
  const s = map.data.steps, v = map.view;
  paintTitle(map);
  const same = v.layer === s.server_view.layer && v.head === s.server_view.head;
  const entry = same ? null : layerEntry(map, v.layer);
  const drawn = !same && !!entry;
  show(s.slots.server, !drawn);
  show(s.slots.server_check, !drawn);
  show(s.slots.browser, drawn);
  show(s.slots.check, drawn);
  if (same) { map.root.dataset.steps = v.layer + ":" + v.head; return; }
  if (!entry) return;
  const box = slot(s.slots.browser, "av-steps"), line = slot(s.slots.check, "av-check");
  if (!box || !line) return;
  const head = v.head;
  const shown = { head, layer: v.layer };
  if (entry.error) {
    box.replaceChildren();
    line.replaceChildren(alert("info", entry.error));
    map.root.dataset.steps = v.layer + ":" + v.head;
    return;
  }
  const values = { ...shown };
  for (const [name, list] of Object.entries(entry.values || {})) values[name] = list[head];
  const charts = [];
  map.stepCharts = map.stepCharts || {}; // a chart's div by step key: kept, so that plotly updates it in place
  const row = (p, key) => {
    const made = newRow(p);
    if (map.stepCharts[key]) made.line.replaceChild(map.stepCharts[key], made.chart);
    else map.stepCharts[key] = made.chart;
    made.chart = map.stepCharts[key];
    return made;
  };
  const rows = entry.steps.map((step, i) => {
    const made = row(words(i + 1, step, values), step.key);
    made.chart.dataset.key = step.key;
    charts.push([made.chart, step]);
    return made.line;
  });
  if (entry.distance) {
    const heading = document.createElement("h3");
    heading.textContent = s.distance_title;
    heading.style.cssText = "font-weight:600;margin:1rem 0 0.5rem 0";
    const made = row(words(null, entry.distance, values), entry.distance.key);
    made.chart.dataset.key = entry.distance.key;
    charts.push([made.chart, entry.distance]);
    rows.push(heading, made.line);
  }
  box.replaceChildren(...rows);
  line.replaceChildren(alert(entry.check[head].kind, entry.check[head].text));
  const seen = v.layer + ":" + v.head;
  cancelAnimationFrame(map.stepsFrame);
  plotly(map.data.plotly).then((Plotly) => {
    map.stepsFrame = requestAnimationFrame(() => {
      if (map.view.layer + ":" + map.view.head !== seen) return; // a newer step draws its own
      const done = charts.map(([div, step]) => {
        const figure = figureOf(map, step, head);
        return Plotly.react(div, figure.data, figure.layout, config(map, Plotly));
      });
      Promise.all(done).then(() => {
        if (map.view.layer + ":" + map.view.head === seen) map.root.dataset.steps = seen;
      });
    });
  });
}

// a line as Streamlit's st.success, st.error, st.info draw it
function alert(kind, text) {
  const colours = {
    success: ["rgba(33, 195, 84, 0.1)", "rgb(23, 114, 51)"],
    error: ["rgba(255, 43, 43, 0.09)", "rgb(125, 53, 59)"],
    info: ["rgba(28, 131, 225, 0.1)", "rgb(0, 66, 128)"],
  }[kind];
  const box = document.createElement("div");
  box.setAttribute("role", "alert");
  box.dataset.kind = kind;
  box.style.cssText = `background:${colours[0]};color:${colours[1]};padding:16px;border-radius:0.5rem;` +
    "margin:0 0 1rem 0;line-height:1.6";
  box.textContent = text;
  return box;
}
