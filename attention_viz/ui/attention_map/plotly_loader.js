// plotly.js for the app's own elements: one copy per page, from the app's server (never another host).
// `path` is relative to the app's root: the server's root, or its base path behind a proxy
// (--server.baseUrlPath attviz: http://host/attviz/). Streamlit serves this module at
// <root>/_stcore/bidi-components/<component>/plotly_loader.js, so the root is the part of this module's own
// address before "_stcore/" (never the server's "/", which is another site's behind a proxy).
// Each component imports it under its own URL, so what they share lives on `window`, not in this module.
//
// It is fetched and run once the map has painted its first cells from its data (or after 1.5 s on a page without
// a map), so that downloading and parsing 4.8 MB of JavaScript does not hold up the first map (the page's HTML
// does not preload it: preload_links.py says why).

const COMPONENTS = "_stcore/bidi-components/";

// the app's root, ending in "/": this module's address up to Streamlit's component folder
export function appRoot(moduleUrl = import.meta.url) {
  const url = new URL(moduleUrl);
  const at = url.pathname.lastIndexOf("/" + COMPONENTS);
  url.pathname = at >= 0 ? url.pathname.slice(0, at + 1) : new URL("../../../", url).pathname;
  url.search = url.hash = "";
  return url.toString();
}

export function appUrl(path) {
  return new URL(path, appRoot()).toString();
}

function shared() {
  if (!window.__avPlotly) {
    let painted;
    const ready = new Promise((resolve) => { painted = resolve; });
    setTimeout(painted, 1500);
    window.__avPlotly = { ready, painted, loading: null };
  }
  return window.__avPlotly;
}

// The map calls this after it painted its first cells: plotly.js may run now.
export function mapPainted() {
  shared().painted();
}

export function plotly(path) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  const state = shared();
  if (!state.loading) {
    state.loading = state.ready.then(() => new Promise((resolve, reject) => {
      if (window.Plotly) { resolve(window.Plotly); return; }
      const script = document.createElement("script");
      script.src = appUrl(path);
      script.dataset.avPlotly = "";
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { state.loading = null; reject(new Error("plotly.js did not load")); };
      document.head.appendChild(script);
    }));
  }
  return state.loading;
}
