// A plotly figure drawn with the page's one plotly.js and updated in place (Plotly.react) on every rerun.
// Data (JSON): {figure: a plotly figure as JSON text (plotly.py's to_json), config: plotly's config,
//               plotly: the path of plotly.min.js on this app}. Sends nothing back.
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
    Plotly.react(div, figure.data, figure.layout, { responsive: true, displaylogo: false, ...data.config });
  });
  return () => { cancelled = true; };
}
