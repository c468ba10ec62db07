// An SVG button in the toolbar of every chart Streamlit draws on the page (st.plotly_chart), beside the camera.
// Streamlit passes a chart's plotly config as JSON, so a button with a click function cannot be added there;
// this element (mounted once per page, not shown) watches the page and adds one to each such toolbar.
// Data (JSON): {plotly: the path of plotly.min.js on this app, title: the button's title,
//               dom: the names of Streamlit's and plotly's DOM it uses (attention_viz/ui/internals.py,
//               SVG_BUTTON_DOM: chart, modebar, group, button, icon)}.
// A click saves the chart as an SVG named as its camera names the PNG (the config's
// toImageButtonOptions.filename, else plotly's "newplot"), drawn anew by the app's own plotly.js from the
// chart's data and layout (Plotly.downloadImage). Sends nothing back. Being on every page, it also installs
// history_entries.js (one action of the person, one entry in the browser's history).
import { oneEntryPerAction } from "./history_entries.js";
import { plotly } from "./plotly_loader.js";

const MARK = "avSvg"; // data-av-svg on the group this script adds

function shared() {
  if (!window.__avSvgButtons) window.__avSvgButtons = { data: null, Plotly: null, observer: null, queued: false };
  return window.__avSvgButtons;
}

function schedule(state) {
  if (state.queued) return;
  state.queued = true;
  requestAnimationFrame(() => {
    state.queued = false;
    addButtons(state);
  });
}

function icon(Plotly, dom) {
  const disk = Plotly.Icons.disk;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", [0, 0, disk.width, disk.height].join(" "));
  svg.setAttribute("class", dom.icon);
  svg.setAttribute("height", "1em");
  svg.setAttribute("width", "1em");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", disk.path);
  if (disk.transform) path.setAttribute("transform", disk.transform);
  svg.appendChild(path);
  return svg;
}

// the button as plotly makes its own (a tooltip from data-title, the toolbar's colours on hover)
function makeButton(state, gd, modebar) {
  const { Plotly } = state;
  const { dom } = state.data;
  const group = document.createElement("div");
  group.className = dom.group;
  group.dataset[MARK] = "";
  const first = modebar.querySelector("." + dom.group);
  if (first) group.style.backgroundColor = first.style.backgroundColor;
  const button = document.createElement("button");
  button.type = "button";
  button.className = dom.button;
  button.setAttribute("rel", "tooltip");
  button.setAttribute("data-toggle", "false");
  button.setAttribute("data-gravity", "n");
  const svg = icon(Plotly, dom);
  button.appendChild(svg);
  const colours = () => (gd._fullLayout && gd._fullLayout.modebar) || {};
  const paint = (active) => {
    const fill = active ? colours().activecolor : colours().color;
    if (fill) svg.firstChild.style.fill = fill;
  };
  paint(false);
  button.addEventListener("mouseenter", () => paint(true));
  button.addEventListener("mouseleave", () => paint(false));
  button.addEventListener("click", () => {
    const options = (gd._context && gd._context.toImageButtonOptions) || {};
    const image = { format: "svg", filename: options.filename || "newplot" };
    if (options.width) image.width = options.width;
    if (options.height) image.height = options.height;
    Plotly.downloadImage(gd, image);
  });
  group.appendChild(button);
  // beside the camera: right after plotly's first group (the image export's), else first
  modebar.insertBefore(group, first ? first.nextSibling : modebar.firstChild);
  return group;
}

function addButtons(state) {
  if (!state.Plotly || !state.data) return;
  const { dom, title } = state.data;
  for (const gd of document.querySelectorAll(dom.chart)) {
    const modebar = gd.querySelector(dom.modebar);
    if (!modebar || !modebar.firstChild) continue; // no toolbar (yet)
    let group = [...modebar.children].find((child) => MARK in child.dataset);
    if (!group) group = makeButton(state, gd, modebar);
    const button = group.firstChild;
    if (button.getAttribute("data-title") !== title) {
      button.setAttribute("data-title", title);
      button.setAttribute("aria-label", title);
    }
  }
}

export default function (component) {
  oneEntryPerAction(); // the element is on every page: one action of the person, one history entry
  const state = shared();
  state.data = component.data;
  if (!state.observer) {
    // plotly remakes a toolbar's buttons when its config changes: the button comes back at the next frame
    state.observer = new MutationObserver(() => schedule(state));
    state.observer.observe(document.body, { childList: true, subtree: true });
  }
  plotly(component.data.plotly).then((Plotly) => {
    state.Plotly = Plotly;
    schedule(state);
  });
  schedule(state);
  return () => {};
}
