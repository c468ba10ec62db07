// A plotly figure drawn with the page's one plotly.js and updated in place (Plotly.react) on every rerun.
// Data (JSON): {figure: a plotly figure as JSON text (plotly.py's to_json), config: plotly's config,
//               plotly: the path of plotly.min.js on this app, svg: the title of the toolbar's SVG button}.
// The toolbar saves the figure as a PNG (its camera, config.toImageButtonOptions) and as an SVG of the same
// name (a button of its own). Sends nothing back.
import { plotly } from "./plotly_loader.js";

export default function (component) {
  const { data, parentElement } = component;
  let div = parentElement.querySelector("div.av-figure");
  if (!div) {
    div = document.createElement("div");
    div.className = "av-figure";
    div.style.width = "100%";
    parentElement.appendChild(div);
  }
  const figure = JSON.parse(data.figure);
  div.style.minHeight = (figure.layout && figure.layout.height ? figure.layout.height : 300) + "px";
  let cancelled = false;
  plotly(data.plotly).then((Plotly) => {
    if (cancelled) return;
    const image = (data.config && data.config.toImageButtonOptions) || {};
    const toSvg = {
      name: "toSVG", title: data.svg, icon: Plotly.Icons.disk,
      click: (gd) => Plotly.downloadImage(gd, { format: "svg", filename: image.filename || "newplot" }),
    };
    const config = { responsive: true, displaylogo: false, showSendToCloud: false, ...data.config };
    config.modeBarButtonsToRemove = [...(config.modeBarButtonsToRemove || []), "sendChartToCloud"];
    config.modeBarButtonsToAdd = [...(config.modeBarButtonsToAdd || []), toSvg];
    Plotly.react(div, figure.data, figure.layout, config);
  });
  return () => { cancelled = true; };
}
