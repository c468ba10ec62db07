// plotly.js for the app's own elements: one <script> per page, from the app's server (never another host).
// `path` is relative to the app's root; this module is served at <root>/_stcore/bidi-components/<name>/.
let loading = null;

export function appUrl(path) {
  return new URL("../../../" + path, import.meta.url).toString();
}

export function plotly(path) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      const preloaded = document.querySelector("script[data-av-plotly]"); // the page's own tag (preload_links.py)
      if (preloaded) {
        preloaded.addEventListener("load", () => resolve(window.Plotly));
        preloaded.addEventListener("error", () => { loading = null; reject(new Error("plotly.js did not load")); });
        return;
      }
      const script = document.createElement("script");
      script.dataset.avPlotly = "";
      script.src = appUrl(path);
      script.async = true;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { loading = null; reject(new Error("plotly.js did not load")); };
      document.head.appendChild(script);
    });
  }
  return loading;
}
