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
      const script = document.createElement("script");
      script.src = appUrl(path);
      script.async = true;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { loading = null; reject(new Error("plotly.js did not load")); };
      document.head.appendChild(script);
    });
  }
  return loading;
}
