// The attention map: one head of a layer drawn in the browser, stepped with the keys without a server round trip.
//
// Data (JSON, built by attention_viz/ui/attention_map/element.py from drawing.py and bundle.py; every number is computed in Python):
//   bundle      path (from the app's root) of the held maps, fetched once per path (binary, below)
//   inline      that bundle's bytes as base64 in the run that made it, when small (else null): used instead
//               of fetching it
//   neighbours  {layer: path} of the bundles of the layers above and below when `bundle` holds one layer
//               ({} otherwise): fetched once `bundle` is drawn, so that ↑/↓ paints from maps held
//   plotly      path of plotly.min.js on this app
//   rev         the server's view revision: a new rev means the server moved the view (a box, a button,
//               a link, an example) and the map adopts `view`; the same rev means `view` echoes what this
//               element reported, and the element keeps its own (newer) view
//   view        {layer, head, focus, query_start, key_start}; focus -1 for none
//   shape       [layers, heads] of the model
//   window      the most queries/keys drawn at once (the rest by panning)
//   margins     {l, r, t, b} px around the square plot; font, axis_font (px); max_side (px)
//   presentation a projector's map: as tall as the window, the title beside the colour bar, and under
//               1000 px wide the sidebar collapsed once
//   colorscale  [[position, "rgb(r, g, b)"], ...]; zrange [low, high]; zmid (a diverging map) or null
//   value_format plotly's format of a hover value (".4f"); texts: the words shown, in the user's language
//               ("{layer}" in texts.title: the layer shown)
//   png         {prefix, what}: the camera button saves <prefix>_layer<L>_head<H>[_<what>].png, the SVG
//               button the same name with .svg (texts.png, texts.svg: the buttons' titles)
//   keys        whether this map answers ←/→/↑/↓ (one map per page does)
//   head_axis   false for one map per layer: ←/→ do nothing, the title and the PNG name no head
//   focus       whether a click on a cell focuses its query
//   follow      a map beside the one with the keys (keys false): it shows that map's layer and head as soon
//               as that map steps (a "av-map-view" event on the document), and reports no step itself
//
// Bundle (binary, little-endian): the 4 bytes "AVM1", a uint32 header length n, n bytes of UTF-8 JSON,
// zero bytes up to a multiple of 4, then float32 arrays at byte offsets (from the start of the arrays):
//   header.layers   the held layers (indices); header.heads, queries, keys; header.only_head: the one
//                   head held (the maps' second axis is then 1), or null for every head
//   header.ranges   each held head's colour range [[[low, high], ...], ...] when fitted, else null
//   header.maps     {offset, shape: [held, heads, queries, keys]}: the map shown for each held head
//   header.overview {offset, shape: [held, heads, m, m], starts_q, starts_k} of the pooled map, or null
//   header.y, x     the query and key categories (distinct labels, as plotly shows them)
//   header.y_text, x_text  the tick text (labels shortened)
//
//   kinds       (Compare) {pretrained|scratch|difference: {title, what, colorscale, zrange, zmid, value_format}}:
//               the bundle holds both maps (header.scratch) and the element switches between them and their
//               difference (scratch − pretrained, in float32 as numpy subtracts) itself; view.map_view is the
//               one shown. (Rollout & norms) {raw|rollout|norm: {..., colorbar}} with `kind_bundles`
//   kind_bundles (Rollout & norms) {kind: {bundle, inline, neighbours}}: each kind's own bundle (its own labels:
//               a word-level head average beside token-level norms); the shown kind's are the data's bundle,
//               inline and neighbours; the others are fetched once the shown one is drawn, so a switch paints
//               from maps held
//   controls    (Compare, the article's layer, Rollout & norms) the words of the element's own controls: the title
//               ("{layer}", "{head}" in it), the layer stepper, the head stepper (when `head` is given), the map
//               switch (`kinds`) and the token in focus (`focus_labels`), drawn in the page's slot for them
//   details     what it draws under the map for the head it shows: numbers {labels, values[layer][head]}
//               (strings made in Python), notes (sentences with "{layer}", "{head}"), and on Compare bars and
//               lines {figure: plotly JSON made in Python for the server's head, whose values, labels and title
//               the element puts in for the head shown}
//   follow      (with controls) {server_view, keys, example: [layer, head] or null}: the page's containers it
//               fills, shows or hides as it steps (the server's downloads or the button that brings the server
//               to the view shown; Compare's example note or its "back" button)
//   told        the view's settings the hidden box carries, {session key: view field} (Rollout & norms: its window
//               and map under its own keys), or absent (attention_viz/ui/attention_map/page_view.py)
//   steps       (Inside a head) the steps of every held head, drawn above the map for the head shown
//               (inside_steps.js)
//
// State sent: with `told` nothing: a step is reported with the next run the page makes (browser_view.js: the
// hidden box and the address); a map that follows the one with the keys passes its clicks and pans to it.
// Otherwise, and for a pan of a window not in `told` (setStateValue, a run of the page):
//   "view": {layer, head, focus, query_start, key_start, seq}, integers; seq counts this element's reports.
import { appUrl, mapPainted, plotly } from "./plotly_loader.js";
import { report as reportView } from "./browser_view.js";
import { paintSteps, stepsHeld } from "./inside_steps.js";

const FOCUS_COLOR = "#ff7f0e";
// The toolbar (plotly's modebar: the PNG and SVG buttons, 64 px wide) shows at the figure's top right corner
// while the pointer is over the map; the colour bar ends this many px left of that corner, and half a tick
// label more (its end's label is centred on it), clear of it.
const TOOLBAR_ROOM = 72;
// plotly's own DOM (see attention_viz/ui/internals.py, PLOTLY_MAP_SCRIPT_SELECTORS): the SVG of the plot
// itself (the heatmap, its axes and ticks), the first of the figure's layers
const PLOTLY_PLOT_SVG = ".svg-container > svg.main-svg";
// the open "link to this view" box's contents (attention_viz/ui/view/sharing.py, SHARE_LINK: drawn only while open)
const LINK_BOX = ".st-key-share_link";
const REPORT_AFTER_MS = 60; // reports of fast presses are merged: the view sent is always the whole view
const PLOTLY_AFTER_MS = 150; // plotly redraws (hover, ticks) once the keys stop
const bundles = new Map(); // path -> Promise<bundle>, shared by the instances of a page
const parsed = new Map(); // path -> bundle, once it has arrived (a map switch paints a held kind at once)
const BUNDLES_KEPT = 6; // the shown bundle, its neighbours, Rollout & norms' other kinds

function keep(path, promise) {
  bundles.set(path, promise);
  while (bundles.size > BUNDLES_KEPT) {
    const oldest = bundles.keys().next().value;
    bundles.delete(oldest);
    parsed.delete(oldest);
  }
}
let keyTarget = null; // the instance that answers the arrow keys
// how many times the browser's Back or Forward moved this page (history_entries.js counts them on `window`)
const navigations = () => (window.__avHistory && window.__avHistory.navigations) || 0;

function parseBundle(buffer) {
  const bytes = new Uint8Array(buffer);
  const magic = String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]);
  if (magic !== "AVM1") throw new Error("not an attention-map bundle");
  const length = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const base = Math.ceil((8 + length) / 4) * 4;
  const array = (entry) => {
    const count = entry.shape.reduce((a, b) => a * b, 1);
    return new Float32Array(buffer, base + entry.offset, count);
  };
  header.mapValues = array(header.maps);
  header.overviewValues = header.overview ? array(header.overview) : null;
  header.scratchValues = header.scratch ? array(header.scratch) : null;
  header.overviewScratch = header.overview_scratch ? array(header.overview_scratch) : null;
  return header;
}

function fetchBundle(path) {
  if (!bundles.has(path)) {
    const promise = fetch(appUrl(path), { credentials: "same-origin" }).then((response) => {
      if (!response.ok) throw new Error("the map's data is gone: " + response.status);
      return response.arrayBuffer();
    }).then(parseBundle).then((bundle) => {
      if (bundles.get(path) === promise) parsed.set(path, bundle);
      return bundle;
    });
    promise.catch(() => bundles.delete(path));
    keep(path, promise);
  }
  return bundles.get(path);
}

// the bundle at `path` from its base64 bytes (kept like a fetched one), at once
function inlineBundle(path, text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  const bundle = parseBundle(bytes.buffer);
  keep(path, Promise.resolve(bundle));
  parsed.set(path, bundle);
  return bundle;
}

function parseColor(text) {
  const m = text.match(/[\d.]+/g).map(Number);
  return m.slice(0, 3);
}

function lookupTable(scale) {
  // 256 colours along the scale, linear in RGB between its stops (plotly's heatmap does the same)
  const stops = scale.map(([p, c]) => [p, parseColor(c)]);
  const table = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const p = i / 255;
    let j = 1;
    while (j < stops.length - 1 && stops[j][0] < p) j++;
    const [p0, c0] = stops[j - 1], [p1, c1] = stops[j];
    const f = p1 > p0 ? Math.min(1, Math.max(0, (p - p0) / (p1 - p0))) : 0;
    for (let k = 0; k < 3; k++) table[3 * i + k] = c0[k] + f * (c1[k] - c0[k]);
  }
  return table;
}

function isTyping(target) {
  if (!target || !target.closest) return false;
  return !!target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true'], [role='combobox'], [role='listbox'], [role='slider']");
}

document.addEventListener("keydown", (event) => {
  const map = keyTarget;
  if (!map || !map.root.isConnected || event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
  const moves = { ArrowLeft: ["head", -1], ArrowRight: ["head", 1], ArrowUp: ["layer", -1], ArrowDown: ["layer", 1] };
  const move = moves[event.key];
  if (!move) return;
  event.preventDefault();
  event.stopPropagation();
  if (event.shiftKey) map.pan(move[0] === "head" ? 0 : move[1], move[0] === "head" ? move[1] : 0);
  else if (move[0] === "layer" || map.data.head_axis !== false) map.step(move[0], move[1]);
}, true);

let collapsed = false; // the sidebar was collapsed for this Presentation (once: the lecturer may open it)

function collapseSidebar(presentation) {
  if (!presentation) { collapsed = false; return; }
  if (collapsed || window.innerWidth >= 1000) return;
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
  if (sidebar && button && sidebar.getAttribute("aria-expanded") !== "false") {
    collapsed = true;
    button.click();
  }
}

class AttentionMap {
  constructor(parent) {
    this.root = document.createElement("div");
    this.root.className = "av-map";
    this.root.innerHTML =
      '<div class="av-status" style="font-weight:600;line-height:1.3;padding-left:8px;min-height:1.3em"></div>' +
      '<div class="av-plot" style="position:relative">' +
      '<div class="av-plotly"></div>' +
      '<canvas class="av-cells" style="position:absolute;pointer-events:none;image-rendering:pixelated"></canvas>' +
      "</div>" +
      '<div class="av-overview-row" style="display:none;gap:12px;align-items:center;margin-top:6px">' +
      '<canvas class="av-overview" style="cursor:move;border:1px solid #ddd;touch-action:none"></canvas>' +
      '<div class="av-window" style="font-size:13px;color:#555"></div></div>';
    parent.appendChild(this.root);
    this.plotDiv = this.root.querySelector(".av-plotly");
    this.canvas = this.root.querySelector(".av-cells");
    this.status = this.root.querySelector(".av-status");
    this.overview = this.root.querySelector(".av-overview");
    this.overviewRow = this.root.querySelector(".av-overview-row");
    this.windowText = this.root.querySelector(".av-window");
    this.rev = null;
    this.seq = 0;
    this.main = null; // the bundle named by the data
    this.ahead = new Map(); // layer -> {path, bundle}: the neighbours' bundles fetched ahead
    this.bundlePath = null;
    this.plotlyTimer = null;
    this.reportTimer = null;
    this.resize = new ResizeObserver(() => (this.root.isConnected ? this.layoutAndPaint() : this.retire()));
    this.resize.observe(parent);
    this.overview.addEventListener("pointerdown", (e) => this.dragOverview(e));
    this.onLead = (event) => {
      const d = this.data;
      if (!d || d.keys || !d.follow || !this.root.isConnected) return;
      Object.assign(this.view, event.detail);
      if (this.bundle) this.clampView();
      this.paint();
      this.schedulePlotly(PLOTLY_AFTER_MS);
    };
    document.addEventListener("av-map-view", this.onLead);
    this.root.dataset.testid = "attention-map";
  }

  // Off the page (a page switch, or a run that no longer draws it): it draws nothing more, and a new map takes
  // its place if the element comes back. Redrawn at no size as it left, its figure and charts had taken about
  // 50 ms of the next page's switch. A report of a step still waiting is kept: the server learns the view.
  retire() {
    this.resize.disconnect();
    clearTimeout(this.plotlyTimer);
    cancelAnimationFrame(this.detailsFrame);
    document.removeEventListener("av-map-view", this.onLead);
  }

  update(data, setStateValue) {
    this.data = data;
    this.send = setStateValue;
    this.tables = {};
    for (const [kind, entry] of Object.entries(data.kinds || {})) this.tables[kind] = lookupTable(entry.colorscale);
    this.table = lookupTable(data.colorscale);
    if (data.rev !== this.rev) {
      this.rev = data.rev;
      this.view = { ...data.view };
    }
    this.toldWindow = { query_start: data.view.query_start, key_start: data.view.key_start };
    if (data.controls) this.buildControls();
    if (data.details) this.buildDetails();
    if (data.keys) keyTarget = this;
    for (const source of Object.values(data.kind_bundles || {})) { // the other kinds' small bundles, at once
      if (source.inline && !bundles.has(source.bundle)) inlineBundle(source.bundle, source.inline);
    }
    this.useSource(false);
    this.layoutAndPaint();
    plotly(data.plotly).then((Plotly) => { this.Plotly = Plotly; this.schedulePlotly(0); if (data.details) this.drawDetails(); });
  }

  // the bundle of the map kind shown: Rollout & norms' kind's own, else the data's
  source() {
    const kinds = this.data.kind_bundles;
    return (kinds && this.view && kinds[this.kind]) || this.data;
  }

  // the shown kind's bundle made the one drawn (from the bundles held, else fetched); `switched`: the kind changed
  // in the browser, so the other kind's maps are not drawn while this one arrives
  useSource(switched) {
    const source = this.source(), path = source.bundle;
    if (path !== this.bundlePath) {
      this.bundlePath = path;
      const adopt = (bundle) => {
        this.main = bundle;
        this.mainPath = path;
        this.clampView();
        this.noteHeld();
      };
      if (source.inline && !bundles.has(path)) {
        adopt(inlineBundle(path, source.inline)); // painted by the caller
      } else if (parsed.has(path)) {
        adopt(parsed.get(path));
      } else {
        if (switched) this.main = null;
        fetchBundle(path).then((bundle) => {
          if (this.bundlePath !== path) return;
          adopt(bundle);
          this.layoutAndPaint();
          this.fetchAhead();
        }).catch((error) => { this.status.textContent = String(error.message || error); });
      }
    }
    const named = new Set([path, ...Object.values(source.neighbours || {})]);
    for (const [layer, entry] of this.ahead) if (!named.has(entry.path)) this.ahead.delete(layer);
    this.noteHeld();
    if (this.main && this.mainPath === path) this.fetchAhead(); // else once it is drawn
  }

  // the layers the browser can paint now, in the element's data attributes (tests and benchmarks wait for them):
  // `ahead`, the neighbours fetched ahead; `held`, those and the layers of the data's own bundle
  noteHeld() {
    const listed = (layers) => [...new Set(layers)].sort((x, y) => x - y).join(",");
    this.root.dataset.ahead = listed(this.ahead.keys());
    this.root.dataset.held = listed([...(this.main ? this.main.layers : []), ...this.ahead.keys()]);
  }

  // the bundles of the layers above and below the one shown (and of the one shown, when a step reached a
  // layer the browser lacks), fetched over HTTP without a run of the page; at most those three kept
  fetchAhead() {
    const source = this.source();
    for (const other of Object.values(this.data.kind_bundles || {})) { // the other kinds' bundles (Rollout & norms)
      if (other.bundle !== source.bundle) fetchBundle(other.bundle).catch(() => {});
    }
    const all = source.neighbours || {}, count = this.data.shape[0], at = this.view ? this.view.layer : 0;
    const near = new Set([at, (at + 1) % count, (at + count - 1) % count]);
    for (const layer of [...this.ahead.keys()]) if (!near.has(layer)) this.ahead.delete(layer);
    this.noteHeld();
    const wanted = Object.entries(all).filter(([layer]) => near.has(+layer)).sort(([a], [b]) => (+a === at ? -1 : +b === at ? 1 : 0));
    for (const [layer, path] of wanted) {
      const known = this.ahead.get(+layer);
      if (known && known.path === path) continue;
      fetchBundle(path).then((bundle) => {
        const now = this.source();
        if (!Object.values(now.neighbours || {}).includes(path) && now.bundle !== path) return;
        this.ahead.set(+layer, { path, bundle });
        this.noteHeld();
        if (this.view.layer === +layer && !(this.main && this.main.layers.indexOf(+layer) >= 0)) {
          this.clampView();
          this.paint();
          this.schedulePlotly(0);
        }
      }).catch(() => {}); // the step then waits for the page as without it
    }
  }

  // the bundle holding `layer` (the data's own, else one fetched ahead), or null
  bundleOf(layer) {
    if (this.main && this.main.layers.indexOf(layer) >= 0) return this.main;
    const entry = this.ahead.get(layer);
    return entry ? entry.bundle : null;
  }

  // the bundle of the layer shown (its queries, keys and labels are every bundle's of this data)
  get bundle() {
    return (this.view && this.bundleOf(this.view.layer)) || this.main;
  }

  // --- the view -----------------------------------------------------------------------------------------
  held(layer, head) {
    const b = this.bundleOf(layer);
    if (!b) return false;
    return b.only_head === null || b.only_head === undefined || head === undefined || b.only_head === head;
  }

  clampView() {
    const b = this.bundle, w = this.data.window;
    const v = this.view;
    v.query_start = Math.max(0, Math.min(v.query_start, b.queries - Math.min(w, b.queries)));
    v.key_start = Math.max(0, Math.min(v.key_start, b.keys - Math.min(w, b.keys)));
    if (v.focus >= b.queries) v.focus = -1;
  }

  step(unit, delta) {
    const [layers, heads] = this.data.shape;
    const v = this.view;
    if (unit === "layer") v.layer = (((v.layer + delta) % layers) + layers) % layers;
    else {
      const flat = (((v.layer * heads + v.head + delta) % (layers * heads)) + layers * heads) % (layers * heads);
      v.layer = Math.floor(flat / heads);
      v.head = flat % heads;
    }
    this.changed(!this.held(v.layer, v.head));
  }

  pan(dq, dk) {
    if (!this.bundle) return;
    const quarter = Math.max(1, Math.floor(this.data.window / 4));
    this.view.query_start += dq * quarter;
    this.view.key_start += dk * quarter;
    this.clampView();
    this.changed(false);
  }

  focusOn(query, chosen) {
    if (this.data.focus === false) return;
    const lead = this.lead();
    if (lead) return lead.focusOn(query, chosen);
    const v = this.view;
    v.focus = chosen ? query : v.focus === query ? -1 : query;
    if (v.focus >= 0 && this.bundle) { // the query window moves to a token outside it (as the server's set_focus)
      const w = this.data.window, q = this.bundle.queries;
      if (!(v.query_start <= v.focus && v.focus < v.query_start + w)) {
        v.query_start = Math.max(0, Math.min(v.focus - Math.floor(w / 2), q - Math.min(w, q)));
      }
    }
    this.changed(true);
  }

  // the map with the keys, when this one follows it and the view is told through the browser (a click or a pan
  // of this one is that map's: they show one view)
  lead() {
    const d = this.data;
    return d.follow && !d.keys && d.told && keyTarget && keyTarget !== this && keyTarget.root.isConnected ? keyTarget : null;
  }

  changed(now) {
    const lead = this.lead();
    if (lead) {
      const { query_start, key_start } = this.view;
      Object.assign(lead.view, { query_start, key_start });
      lead.clampView();
      return lead.changed(now);
    }
    this.seq += 1;
    const neighbours = this.source().neighbours;
    if (this.data.controls && neighbours && Object.keys(neighbours).length) this.fetchAhead();
    this.paint();
    if (this.data.keys) {
      const { layer, head, focus, query_start, key_start } = this.view;
      const detail = this.data.told ? { layer, head, focus, query_start, key_start } : { layer, head };
      document.dispatchEvent(new CustomEvent("av-map-view", { detail }));
    }
    this.schedulePlotly(PLOTLY_AFTER_MS);
    clearTimeout(this.reportTimer);
    const since = navigations();
    this.root.dataset.reporting = "1"; // a report waits (tests wait for it to leave, or to be dropped)
    const report = () => {
      delete this.root.dataset.reporting;
      if (navigations() !== since) return; // Back or Forward came after this move: the address's view wins
      const v = this.view;
      const view = { layer: v.layer, head: v.head, focus: v.focus, query_start: v.query_start, key_start: v.key_start };
      const told = this.data.told;
      if (!told) { this.send("view", { ...view, seq: this.seq }); return; }
      const settled = {};
      for (const [name, field] of Object.entries(told)) settled[name] = field === "map_view" ? v.map_view : view[field];
      reportView(settled, true); // no run: the next one the page makes takes it
      // a head the browser cannot fetch itself (a long input's bundles hold one head): the page's run makes it;
      // while the "link to this view" box is open, the run writes the link the box shows (the server's); and a
      // pan of a window the page keeps under its own names (not the box's) is the page's to store
      const unheld = (!this.held(v.layer, v.head) && !(this.source().neighbours || {})[v.layer]) ||
        (this.data.steps && !stepsHeld(this)); // Inside a head: a layer whose steps the browser lacks
      const fields = Object.values(told);
      const untold = ["query_start", "key_start"].some((name) => !fields.includes(name) && view[name] !== this.toldWindow[name]);
      if (unheld || untold || document.querySelector(LINK_BOX)) this.send("view", { ...view, seq: this.seq });
    };
    if (now) report();
    else this.reportTimer = setTimeout(report, REPORT_AFTER_MS);
  }

  // --- Compare: the element's own controls, what it draws under the map, the page parts it shows or hides ----
  buildControls() {
    const c = this.data.controls;
    const words = JSON.stringify({ ...c, focus_labels: null }); // a new language: the controls anew
    if (this.controls && this.controlsWords === words) return this.syncControls();
    if (this.controls) this.controls.remove();
    this.controlsWords = words;
    const row = document.createElement("div");
    row.className = "av-controls";
    row.style.cssText = "display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center";
    const button = (text, title, onClick) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = text;
      b.title = title;
      b.setAttribute("aria-label", title);
      b.style.cssText = "font:inherit;min-width:2em;padding:2px 8px;border:1px solid rgba(49,51,63,0.25);" +
        "border-radius:8px;background:#fff;cursor:pointer;color:inherit";
      b.addEventListener("click", onClick);
      return b;
    };
    const labelled = (text, control) => {
      const box = document.createElement("label");
      box.style.cssText = "display:inline-flex;gap:6px;align-items:center";
      const name = document.createElement("span");
      name.textContent = text;
      box.append(name, control);
      return box;
    };
    const select = (onChange) => {
      const sel = document.createElement("select");
      sel.style.cssText = "font:inherit;padding:2px 4px;border:1px solid rgba(49,51,63,0.25);border-radius:8px;background:#fff";
      sel.addEventListener("change", () => onChange(+sel.value));
      return sel;
    };
    const stepper = (unit) => {
      const box = document.createElement("span");
      box.className = "av-stepper av-" + unit;
      box.style.cssText = "display:inline-flex;gap:4px;align-items:center";
      const sel = select((value) => this.choose(unit, value));
      sel.dataset.unit = unit;
      sel.setAttribute("aria-label", c[unit]);
      box.append(
        button("‹", c[unit + "_previous"], () => this.step(unit, -1)),
        labelled(c[unit], sel),
        button("›", c[unit + "_next"], () => this.step(unit, 1)),
      );
      return box;
    };
    const title = document.createElement("h2");
    title.className = "av-title";
    title.style.cssText = "flex-basis:100%;margin:0;padding:0;font-size:1.75rem;font-weight:600;line-height:1.2";
    row.append(title, stepper("layer"));
    if (c.head) row.append(stepper("head")); // one map per layer: no head to step
    if (c.kinds) { // the map switch (Compare)
      const kinds = document.createElement("span");
      kinds.className = "av-kinds";
      kinds.setAttribute("role", "group");
      kinds.setAttribute("aria-label", c.map);
      // a narrow column (a projector's large text at 800 px) wraps the buttons; none is cut or squeezed
      kinds.style.cssText = "display:inline-flex;flex-wrap:wrap;max-width:100%;gap:0;align-items:stretch";
      for (const [kind, text] of Object.entries(c.kinds)) {
        const b = button(text, text, () => this.setKind(kind));
        b.dataset.kind = kind;
        b.style.borderRadius = "0";
        b.style.flex = "0 0 auto";
        kinds.append(b);
      }
      kinds.firstChild.style.borderRadius = "8px 0 0 8px";
      kinds.lastChild.style.borderRadius = "0 8px 8px 0";
      row.append(kinds);
    }
    if (c.focus_labels) { // the token in focus
      const focus = select((value) => this.focusOn(value, true));
      focus.className = "av-focus";
      focus.setAttribute("aria-label", c.focus);
      row.append(labelled(c.focus, focus));
    }
    this.root.prepend(row);
    this.controls = row;
    this.place();
    this.syncControls();
  }

  // the controls show the view (and the layers, heads and tokens there are)
  syncControls() {
    const row = this.controls, d = this.data;
    if (!row || !this.view) return;
    const [layers, heads] = d.shape;
    row.querySelector(".av-title").textContent = d.controls.title.replace("{layer}", this.view.layer).replace("{head}", this.view.head);
    const fill = (sel, count, text, value) => {
      const texts = text === "focus" ? d.controls.focus_labels.join("\n") : text; // a new sentence: new labels
      if (sel.options.length !== count || sel.dataset.texts !== texts) {
        sel.replaceChildren();
        for (let i = 0; i < count; i++) {
          const option = document.createElement("option");
          option.value = String(i - (text === "focus" ? 1 : 0));
          option.textContent = text === "focus" ? (i === 0 ? d.controls.focus_none : d.controls.focus_labels[i - 1]) : String(i);
          sel.append(option);
        }
        sel.dataset.texts = texts;
      }
      sel.value = String(value);
    };
    fill(row.querySelector("select[data-unit=layer]"), layers, "layer", this.view.layer);
    if (d.controls.head) fill(row.querySelector("select[data-unit=head]"), heads, "head", this.view.head);
    if (d.controls.focus_labels) fill(row.querySelector("select.av-focus"), d.controls.focus_labels.length + 1, "focus", this.view.focus);
    for (const b of row.querySelectorAll(".av-kinds button")) {
      const on = b.dataset.kind === this.kind;
      b.setAttribute("aria-pressed", on ? "true" : "false");
      b.style.background = on ? "#1f6feb" : "#fff";
      b.style.color = on ? "#fff" : "inherit";
    }
  }

  choose(unit, value) {
    this.view[unit] = value;
    this.changed(!this.held(this.view.layer, this.view.head));
  }

  setKind(kind) {
    if (this.view.map_view === kind) return;
    this.view.map_view = kind;
    if (this.data.kind_bundles) this.useSource(true); // Rollout & norms: the kind's own bundle
    this.changed(false);
  }

  buildDetails() {
    if (this.details) return;
    const box = document.createElement("div");
    box.className = "av-details";
    box.innerHTML = '<div class="av-numbers" style="display:flex;flex-wrap:wrap;gap:8px 32px;margin:4px 0 8px 0"></div>' +
      '<div class="av-notes"></div><div class="av-bars"></div><div class="av-lines"></div>';
    this.root.append(box);
    this.details = box;
    this.place();
  }

  // the controls and the details in the page's containers for them (follow.keys), when the page has them
  place() {
    const keys = (this.data.follow || {}).keys || {};
    for (const [node, key] of [[this.controls, keys.controls], [this.details, keys.details]]) {
      const slot = key && document.querySelector(".st-key-" + key);
      if (!node || !slot || node.parentElement === slot) continue;
      for (const old of slot.querySelectorAll(":scope > ." + node.className)) old.remove(); // an earlier map's
      slot.append(node);
    }
  }

  // what follows the view besides the map: the controls, the numbers, the page parts shown or hidden (in this
  // frame), and the bars and lines (plotly, in the next)
  paintAround() {
    const d = this.data, v = this.view;
    if (!d.controls) return;
    this.place();
    this.syncControls();
    this.root.dataset.mapView = this.kind;
    this.follow();
    if (d.steps) paintSteps(this); // Inside a head: the steps of the head shown (inside_steps.js)
    if (!d.details) return;
    // notes: the page's sentences that name the layer or head shown (plain text)
    const notes = this.details.querySelector(".av-notes");
    const given = [...(d.details.notes || []), ...((d.details.kind_notes || {})[this.kind] || [])]; // and the kind's
    const texts = given.map((text) => text.replace(/\{layer\}/g, v.layer).replace(/\{head\}/g, v.head));
    if (notes.childElementCount !== texts.length) {
      notes.replaceChildren(...texts.map(() => {
        const note = document.createElement("p"); // as Streamlit's captions: small, grey
        note.style.cssText = "font-size:14px;line-height:1.5;margin:0 0 8px 0;color:rgba(49,51,63,0.6)";
        return note;
      }));
    }
    texts.forEach((text, i) => { notes.children[i].textContent = text; });
    if (d.details.numbers) this.paintNumbers(d.details.numbers);
    cancelAnimationFrame(this.detailsFrame);
    this.detailsFrame = requestAnimationFrame(() => this.drawDetails());
  }

  // numbers {labels, values[layer][head]}: strings made in Python, one per label (one map per layer: head 0)
  paintNumbers(given) {
    const v = this.view;
    const numbers = this.details.querySelector(".av-numbers");
    const values = given.values[v.layer][this.data.head_axis === false ? 0 : v.head];
    const labels = given.labels.join("\n"); // a new language: new labels
    if (numbers.dataset.labels !== labels) {
      numbers.dataset.labels = labels;
      numbers.replaceChildren();
      for (const label of given.labels) {
        const cell = document.createElement("div");
        cell.innerHTML = '<div style="font-size:14px;color:#555"></div><div class="av-number" style="font-size:28px;line-height:1.3"></div>';
        cell.firstChild.textContent = label;
        numbers.append(cell);
      }
    }
    values.forEach((text, i) => { numbers.children[i].querySelector(".av-number").textContent = text; });
    this.root.dataset.numbers = values.join("\n");
  }

  follow() {
    const f = this.data.follow, v = this.view;
    if (!f) return;
    const show = (key, on) => {
      const element = document.querySelector(".st-key-" + key);
      if (element) element.style.display = on ? "flex" : "none";
    };
    const server = f.server_view;
    const same = Object.keys(server).every((name) => server[name] === v[name]);
    show(f.keys.server, same);
    show(f.keys.other, !same);
    if (f.example) {
      const there = v.layer === f.example[0] && v.head === f.example[1];
      show(f.keys.note, there);
      show(f.keys.back, !there);
    }
  }

  drawDetails() {
    const Plotly = this.Plotly, b = this.bundle, d = this.data, v = this.view;
    if (!Plotly || !b || !d.details || !this.root.isConnected || !this.held(v.layer, v.head)) return;
    if (!d.details.lines) { this.root.dataset.details = String(this.seq); return; } // numbers only: drawn
    const { q0, k0, nq, nk } = this.windowOf();
    const base = this.headOffset(v.layer, v.head, b.maps);
    const pretrained = (i) => b.mapValues[i];
    const scratch = (i) => b.scratchValues[i];
    const filename = this.fileName();
    // as figure.js configures the charts beside a map: the camera's PNG and an SVG of the same name
    const toSvg = { name: "toSVG", title: d.texts.svg, icon: Plotly.Icons.disk,
      click: (gd) => Plotly.downloadImage(gd, { format: "svg", filename }) };
    const config = (entry) => ({ ...entry.config, displaylogo: false, responsive: true, showSendToCloud: false,
      modeBarButtonsToRemove: ["sendChartToCloud"], modeBarButtonsToAdd: [toSvg],
      toImageButtonOptions: { ...(entry.config.toImageButtonOptions || {}), filename } });
    // bars: the focus token's row, pretrained and from scratch, over the keys of the window
    const bars = this.details.querySelector(".av-bars");
    if (v.focus >= 0 && v.focus < b.queries) {
      const entry = d.details.bars;
      const figure = JSON.parse(entry.figure);
      const x = b.x.slice(k0, k0 + nk);
      const row = base + v.focus * b.keys + k0;
      figure.data.forEach((trace, t) => {
        const read = t === 0 ? pretrained : scratch;
        trace.x = x;
        trace.y = Array.from({ length: nk }, (_, j) => read(row + j));
        trace.customdata = Array.from({ length: nk }, (_, j) => k0 + j);
      });
      Object.assign(figure.layout.xaxis, { tickvals: x, ticktext: b.x_text.slice(k0, k0 + nk) });
      figure.layout.title.text = entry.title.replace("{token}", entry.tokens[v.focus]).replace("{index}", v.focus);
      bars.style.display = "";
      Plotly.react(bars, figure.data, figure.layout, config(entry));
    } else {
      bars.style.display = "none";
    }
    // lines: queries left, keys right, a line per query → key with its weight as opacity
    const entry = d.details.lines, lines = this.details.querySelector(".av-lines");
    const figure = JSON.parse(entry.figure);
    const read = this.kind === "scratch" ? scratch : pretrained;
    const focus = v.focus >= q0 && v.focus < q0 + nq ? v.focus - q0 : null;
    const side = (trace, count, start, texts, hovers, marked) => {
      trace.x = new Array(count).fill(trace === figure.data[0] ? 0 : 1);
      trace.y = Array.from({ length: count }, (_, i) => i);
      trace.text = texts.slice(start, start + count);
      trace.customdata = Array.from({ length: count }, (_, i) => [start + i, hovers[start + i]]);
      trace.textfont.color = Array.from({ length: count }, (_, i) => (i === marked ? FOCUS_COLOR : "#1b1f24"));
    };
    side(figure.data[0], nq, q0, entry.row_text, entry.row_hover, focus);
    side(figure.data[1], nk, k0, entry.key_text, entry.key_hover, null);
    const shapes = [];
    for (const i of focus === null ? Array.from({ length: nq }, (_, i) => i) : [focus]) {
      const row = base + (q0 + i) * b.keys + k0;
      for (let j = 0; j < nk; j++) shapes.push({ y0: i, y1: j, opacity: +read(row + j).toPrecision(7) });
    }
    figure.layout.shapes = shapes;
    figure.layout.height = Math.floor(Math.max(nq, nk) * entry.spacing) + 80;
    figure.layout.yaxis.range = [Math.max(nq, nk) - 0.5, -0.5];
    figure.layout.title.text = entry.titles[this.kind === "scratch" ? "scratch" : "pretrained"];
    Plotly.react(lines, figure.data, figure.layout, config(entry));
    this.root.dataset.details = String(this.seq);
  }

  // --- the map shown: pretrained, from scratch or their difference (Compare), else the one map -------------
  get kind() {
    return this.data.kinds ? this.view.map_view || "pretrained" : null;
  }

  // the drawing's fields for the map shown (colours, words, file name)
  get look() {
    return this.data.kinds ? { ...this.data, ...this.data.kinds[this.kind] } : this.data;
  }

  // value(i) of the map shown in a bundle's flat arrays (maps, or overview with `overview` true)
  valuesOf(b, overview) {
    const first = overview ? b.overviewValues : b.mapValues;
    const kind = this.kind;
    if (!kind || kind === "pretrained" || !b.scratch) return (i) => first[i]; // a kind's own bundle: its maps
    const second = overview ? b.overviewScratch : b.scratchValues;
    if (kind === "scratch") return (i) => second[i];
    return (i) => Math.fround(second[i] - first[i]);
  }

  // --- drawing ------------------------------------------------------------------------------------------
  windowOf() {
    const b = this.bundle, v = this.view, w = this.data.window;
    const q0 = v.query_start, k0 = v.key_start;
    return { q0, k0, nq: Math.min(w, b.queries - q0), nk: Math.min(w, b.keys - k0) };
  }

  layoutAndPaint() {
    const d = this.data;
    if (!d) return;
    const m = d.margins;
    const width = this.root.parentElement ? this.root.parentElement.clientWidth : 600;
    const top = this.root.getBoundingClientRect().top + window.scrollY;
    const fill = d.presentation;
    const n = this.bundle ? Math.max(this.windowOf().nq, this.windowOf().nk) : d.window;
    const plot = this.root.querySelector(".av-plot");
    const size = (status) => { // the plot's side in whole-pixel cells, under a status line `status` px tall
      const room = Math.max(200, window.innerHeight - Math.max(0, Math.min(top, fill ? 40 : 120)) - (fill ? 4 : 16) - status);
      const side = Math.min(width - m.l - m.r, room - m.t - m.b, d.max_side);
      this.side = Math.max(80, Math.floor(side / n) * n);
      plot.style.width = m.l + this.side + m.r + "px";
      plot.style.height = m.t + this.side + m.b + "px";
    };
    const inFlow = () => {
      Object.assign(this.status.style, { position: "", left: "", top: "", width: "", maxHeight: "", overflow: "" });
      if (this.status.parentElement !== this.root) this.root.prepend(this.status);
    };
    size(fill ? 0 : this.status.offsetHeight);
    if (fill) { // a projector's title beside the colour bar, in the plot's top margin; above the plot if it is cut there
      const bar = this.colorbarLength();
      Object.assign(this.status.style, { position: "absolute", left: "8px", top: "0px", zIndex: 2,
        width: Math.max(120, this.colorbarEnd() - bar - 24 - 8) + "px", maxHeight: m.t + "px", overflow: "hidden" });
      if (this.status.parentElement !== plot) plot.prepend(this.status);
      if (this.status.scrollHeight > this.status.clientHeight + 1) {
        inFlow();
        size(this.status.offsetHeight);
      }
    } else {
      inFlow();
    }
    collapseSidebar(fill);
    this.paint();
    this.schedulePlotly(0);
  }

  colorbarLength() {
    return Math.min(240, this.side / 2);
  }

  // where the colour bar ends, in px from the figure's left edge: left of the toolbar's corner
  colorbarEnd() {
    const m = this.data.margins;
    const room = TOOLBAR_ROOM + Math.ceil(this.data.font / 2);
    return Math.max(m.l + this.colorbarLength(), m.l + this.side + m.r - room);
  }

  // The cells' canvas goes right above plotly's plot and under plotly's other layers (the colour bar, the
  // toolbar, the hover label), which it would hide laid over the whole figure; it keeps its place (plotly
  // adds its layers around it on a redraw). Before plotly.js has run, it lies over the empty plot.
  placeCanvas() {
    const plot = this.plotDiv.querySelector(PLOTLY_PLOT_SVG);
    if (plot && plot.nextElementSibling !== this.canvas) plot.after(this.canvas);
  }

  headline() {
    const v = this.view;
    const t = this.data.texts;
    const title = this.look.title || t.title;
    return t.head.replace("{layer}", v.layer).replace("{head}", v.head) + " · " + title.replace("{layer}", v.layer);
  }

  range() {
    const b = this.bundle, v = this.view;
    let ranges = b.ranges;
    if (ranges && this.kind && !Array.isArray(ranges)) ranges = ranges[this.kind === "difference" ? "difference" : "attention"];
    if (!ranges) return this.look.zrange;
    return ranges[b.layers.indexOf(v.layer)][b.maps.shape[1] === 1 ? 0 : v.head];
  }

  headOffset(layer, head, entry) {
    const held = this.bundle.layers.indexOf(layer);
    const [, heads, a, b] = entry.shape;
    const index = heads === 1 ? 0 : head;
    return ((held * heads + index) * a) * b;
  }

  paint() {
    const b = this.bundle, d = this.data;
    if (!d) return;
    const v = this.view;
    const waiting = !b || !this.held(v.layer, v.head);
    this.status.style.fontSize = (d.presentation ? d.font + 2 : d.font + 4) + "px";
    this.status.style.color = waiting ? "#8a6d00" : "";
    this.status.textContent = waiting ? d.texts.loading.replace("{layer}", v.layer) : this.headline();
    this.root.dataset.shape = d.shape.join("x");
    this.root.dataset.layer = v.layer;
    this.root.dataset.head = v.head;
    this.root.dataset.focus = v.focus;
    this.root.dataset.queryStart = v.query_start;
    this.root.dataset.keyStart = v.key_start;
    this.root.dataset.ready = waiting ? "0" : "1";
    if (waiting) { this.canvas.style.opacity = "0.35"; if (d.controls) this.syncControls(); return; }
    this.canvas.style.opacity = "1";
    const { q0, k0, nq, nk } = this.windowOf();
    const m = d.margins;
    const cell = this.side / Math.max(nq, nk);
    const cssW = Math.round(cell * nk), cssH = Math.round(cell * nq);
    const ratio = window.devicePixelRatio || 1;
    const c = this.canvas;
    c.style.left = m.l + "px";
    c.style.top = m.t + "px";
    c.style.width = cssW + "px";
    c.style.height = cssH + "px";
    if (c.width !== Math.round(cssW * ratio) || c.height !== Math.round(cssH * ratio)) {
      c.width = Math.round(cssW * ratio);
      c.height = Math.round(cssH * ratio);
    }
    const value = this.valuesOf(b, false), base = this.headOffset(v.layer, v.head, b.maps), keys = b.keys;
    const [lo, hi] = this.range(), scale = 255 / (hi - lo || 1), table = this.kind ? this.tables[this.kind] : this.table;
    const image = new ImageData(nk, nq);
    const px = image.data;
    for (let i = 0; i < nq; i++) {
      const row = base + (q0 + i) * keys + k0;
      for (let j = 0; j < nk; j++) {
        let t = Math.round((value(row + j) - lo) * scale);
        t = t < 0 ? 0 : t > 255 ? 255 : t;
        const o = 4 * (i * nk + j);
        px[o] = table[3 * t]; px[o + 1] = table[3 * t + 1]; px[o + 2] = table[3 * t + 2]; px[o + 3] = 255;
      }
    }
    if (!this.small || this.small.width !== nk || this.small.height !== nq) {
      this.small = document.createElement("canvas");
      this.small.width = nk; this.small.height = nq;
    }
    this.small.getContext("2d").putImageData(image, 0, 0);
    const ctx = c.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.small, 0, 0, c.width, c.height);
    const f = v.focus - q0;
    if (v.focus >= 0 && f >= 0 && f < nq) {
      ctx.strokeStyle = FOCUS_COLOR;
      ctx.lineWidth = 3 * ratio;
      ctx.strokeRect(1.5 * ratio, f * cell * ratio + 1.5 * ratio, c.width - 3 * ratio, cell * ratio - 3 * ratio);
    }
    this.paintOverview();
    this.paintAround();
    mapPainted();
  }

  paintOverview() {
    const b = this.bundle, d = this.data;
    const windowed = b.queries > d.window || b.keys > d.window;
    this.overviewRow.style.display = windowed && b.overview ? "flex" : "none";
    if (!windowed) return;
    const { q0, k0, nq, nk } = this.windowOf();
    this.windowText.textContent = d.texts.window
      .replace("{q0}", q0).replace("{q1}", q0 + nq - 1).replace("{k0}", k0).replace("{k1}", k0 + nk - 1);
    if (!b.overview) return;
    const [, , mq, mk] = b.overview.shape;
    const side = d.overview_side;
    const c = this.overview;
    c.width = side; c.height = side;
    c.style.width = side + "px"; c.style.height = side + "px";
    const image = new ImageData(mk, mq), px = image.data;
    const base = this.headOffset(this.view.layer, this.view.head, b.overview), value = this.valuesOf(b, true);
    const [lo, hi] = this.range(), scale = 255 / (hi - lo || 1), table = this.kind ? this.tables[this.kind] : this.table;
    for (let i = 0; i < mq * mk; i++) {
      let t = Math.round((value(base + i) - lo) * scale);
      t = t < 0 ? 0 : t > 255 ? 255 : t;
      px[4 * i] = table[3 * t]; px[4 * i + 1] = table[3 * t + 1]; px[4 * i + 2] = table[3 * t + 2]; px[4 * i + 3] = 255;
    }
    const small = document.createElement("canvas");
    small.width = mk; small.height = mq;
    small.getContext("2d").putImageData(image, 0, 0);
    const ctx = c.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(small, 0, 0, side, side);
    ctx.strokeStyle = FOCUS_COLOR;
    ctx.lineWidth = 2;
    ctx.strokeRect((k0 / b.keys) * side, (q0 / b.queries) * side, (nk / b.keys) * side, (nq / b.queries) * side);
  }

  dragOverview(event) {
    if (!this.bundle) return;
    event.preventDefault();
    const c = this.overview, b = this.bundle, w = this.data.window;
    const move = (e) => {
      const r = c.getBoundingClientRect();
      const q = Math.round(((e.clientY - r.top) / r.height) * b.queries - w / 2);
      const k = Math.round(((e.clientX - r.left) / r.width) * b.keys - w / 2);
      this.view.query_start = q;
      this.view.key_start = k;
      this.clampView();
      this.paint();
      this.schedulePlotly(PLOTLY_AFTER_MS);
    };
    const up = (e) => {
      move(e);
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      this.changed(true);
    };
    move(event);
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  }

  // --- plotly: axes, labels, colour bar, hover, PNG -----------------------------------------------------
  fileName() {
    const v = this.view, png = this.data.png;
    const what = this.data.kinds ? this.look.what : png.what;
    const head = this.data.head_axis === false ? "" : `_head${v.head}`;
    return `${png.prefix}_layer${v.layer}${head}` + (what ? "_" + what : "");
  }

  schedulePlotly(after) {
    clearTimeout(this.plotlyTimer);
    this.plotlyTimer = setTimeout(() => this.drawPlotly(), after);
  }

  drawPlotly() {
    const b = this.bundle, d = this.data, Plotly = this.Plotly;
    if (!b || !d || !Plotly || !this.root.isConnected || !this.held(this.view.layer, this.view.head)) return;
    const v = this.view;
    const { q0, k0, nq, nk } = this.windowOf();
    const base = this.headOffset(v.layer, v.head, b.maps);
    const value = this.valuesOf(b, false), look = this.look;
    const colorbar = look.colorbar ?? d.texts.colorbar; // the kind's own (Rollout & norms' norms), else the map's
    const z = [], custom = [];
    for (let i = 0; i < nq; i++) {
      const start = base + (q0 + i) * b.keys + k0;
      const zrow = new Array(nk);
      for (let j = 0; j < nk; j++) zrow[j] = value(start + j);
      z.push(zrow);
      const row = [];
      for (let j = 0; j < nk; j++) row.push([q0 + i, k0 + j]);
      custom.push(row);
    }
    const y = b.y.slice(q0, q0 + nq), x = b.x.slice(k0, k0 + nk);
    const font = d.font, m = d.margins, side = this.side, cell = side / Math.max(nq, nk);
    const ticks = (values, text) => ({ tickmode: "array", tickvals: values, ticktext: text });
    const axis = (title) => ({
      title: { text: title, font: { size: d.axis_font || font } }, type: "category", automargin: false,
      tickfont: { size: font }, showgrid: false, fixedrange: true,
    });
    const trace = {
      type: "heatmap", z, x, y, customdata: custom, colorscale: look.colorscale, zmin: this.range()[0], zmax: this.range()[1],
      hovertemplate: "%{y} → %{x}: %{z:" + look.value_format + "}<br>" + d.texts.hover_index + "<extra></extra>",
      colorbar: {
        orientation: "h", thickness: 10, lenmode: "pixels", len: this.colorbarLength(),
        x: (this.colorbarEnd() - m.l) / side, xanchor: "right", xpad: 0, y: 1, yanchor: "bottom", ypad: 6, ticklabelposition: "outside top", tickfont: { size: font },
        ...(colorbar ? { title: { text: colorbar, side: "right", font: { size: font } } } : {}),
      },
    };
    if (look.zmid !== null && look.zmid !== undefined) trace.zmid = look.zmid;
    const shapes = [];
    const f = v.focus - q0;
    if (v.focus >= 0 && f >= 0 && f < nq) {
      shapes.push({ type: "rect", x0: -0.5, x1: nk - 0.5, y0: f - 0.5, y1: f + 0.5, line: { color: FOCUS_COLOR, width: 3 } });
    }
    const layout = {
      font: { family: d.font_family },
      width: m.l + side + m.r, height: m.t + side + m.b,
      margin: { l: m.l, r: m.r, t: m.t, b: m.b, autoexpand: false },
      // the key axis's title at the chart's foot, under the room reserved for the longest key label
      // (plotly would place it by the window's labels alone)
      xaxis: { ...axis(""), ...ticks(x, b.x_text.slice(k0, k0 + nk)), tickangle: -90, range: [-0.5, nk - 0.5],
               domain: [0, (cell * nk) / side] },
      annotations: [{
        text: d.texts.key_axis, showarrow: false, xref: "paper", x: (cell * nk) / side / 2, xanchor: "center",
        yref: "paper", y: 1 - (cell * nq) / side, yanchor: "bottom", yshift: -m.b, font: { size: d.axis_font || font },
      }],
      yaxis: { ...axis(d.texts.query_axis), ...ticks(y, b.y_text.slice(q0, q0 + nq)), range: [nq - 0.5, -0.5],
               domain: [1 - (cell * nq) / side, 1] },
      hoverlabel: { font: { size: font + 2 } },
      dragmode: false,
      shapes,
    };
    const filename = this.fileName();
    this.plotDiv.dataset.filename = filename;
    const headline = this.headline();
    // the image has the title the screen shows above the plot (plotly's own title, room made for it)
    const download = (gd, format) => {
      const extra = font + 28;
      const titled = {
        ...gd.layout, height: gd.layout.height + extra, margin: { ...gd.layout.margin, t: m.t + extra },
        title: { text: headline, x: 0, xref: "container", xanchor: "left", y: 1, yref: "container", yanchor: "top",
                 pad: { l: 8, t: 8 }, font: { size: font + 4 } },
      };
      Plotly.downloadImage({ data: gd.data, layout: titled }, { format, scale: format === "png" ? 2 : 1, filename,
        width: titled.width, height: titled.height });
    };
    const toPng = { name: "toImage", title: d.texts.png, icon: Plotly.Icons.camera, click: (gd) => download(gd, "png") };
    const toSvg = { name: "toSVG", title: d.texts.svg, icon: Plotly.Icons.disk, click: (gd) => download(gd, "svg") };
    const config = {
      displaylogo: false, responsive: false, showSendToCloud: false,
      modeBarButtonsToRemove: ["toImage", "sendChartToCloud"], modeBarButtonsToAdd: [toPng, toSvg],
      toImageButtonOptions: { format: "png", scale: 2, filename },
    };
    Plotly.react(this.plotDiv, [trace], layout, config).then(() => {
      this.placeCanvas();
      if (!this.clickBound) {
        this.clickBound = true;
        this.plotDiv.on("plotly_click", (event) => {
          const point = event.points && event.points[0];
          if (!point || !point.pointIndex) return;
          this.focusOn(this.view.query_start + point.pointIndex[0]);
        });
      }
      this.root.dataset.plotly = String(this.seq);
    });
  }
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  let map = parentElement.__attentionMap;
  if (!map || !map.root.isConnected) {
    map = new AttentionMap(parentElement);
    parentElement.__attentionMap = map;
  }
  map.update(data, setStateValue);
  return () => {};
}
