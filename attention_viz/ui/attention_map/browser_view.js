// The view the page's elements move to in the browser, told to the server and kept in the address, without a
// run of the app's script (attention_viz/ui/view/browser_view.py says how the server reads it).
//
// report(view): writes {"seq", "view"} into the hidden text box (widget key "browser_view", on_change="ignore":
// Streamlit stores the value and sends it with the next run, asking for none now), and puts the view's settings
// into the address (a new history entry when `push`, so that Back steps back as before).
//
// The box is Streamlit's text input: its value is set the way a person's typing sets it (the input's own value
// setter, an "input" event, then Enter, which commits it). The DOM names it uses are in
// attention_viz/ui/internals.py (BROWSER_VIEW_DOM), checked there against the installed Streamlit.
const BOX_INPUT = ".st-key-browser_view input";
// attention_viz/ui/view/browser_view.py's VIEW_KEYS (Rollout & norms keeps its window and map under its own names)
const VIEW_KEYS = ["layer", "head", "focus", "query_start", "key_start", "map_view",
  "rollout_query_start", "rollout_key_start", "rollout_map"];

function shared() {
  if (!window.__avView) window.__avView = { seq: 0 };
  return window.__avView;
}

// the text as Python's urllib.parse.quote_plus writes it (the server's own address), so that the server's next
// write of the same view finds the address unchanged and adds no history entry
function quotePlus(text) {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%20/g, "+");
}

export function addressWith(search, view) {
  const parts = search.replace(/^\?/, "").split("&").filter((part) => part.length);
  const seen = new Set();
  const out = parts.map((part) => {
    const name = decodeURIComponent(part.split("=")[0].replace(/\+/g, " "));
    if (!VIEW_KEYS.includes(name) || !(name in view)) return part;
    seen.add(name);
    return quotePlus(name) + "=" + quotePlus(String(view[name]));
  });
  for (const name of VIEW_KEYS) if (name in view && !seen.has(name)) out.push(name + "=" + quotePlus(String(view[name])));
  return out.length ? "?" + out.join("&") : "";
}

function writeBox(text) {
  const input = document.querySelector(BOX_INPUT);
  if (!input) return false;
  const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
  setter.call(input, text);
  input.dispatchEvent(new Event("input", { bubbles: true }));
  input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", code: "Enter", keyCode: 13, which: 13, bubbles: true }));
  return true;
}

export function report(view, push) {
  const state = shared();
  state.seq += 1;
  const settled = {};
  for (const name of VIEW_KEYS) if (name in view) settled[name] = view[name];
  writeBox(JSON.stringify({ seq: state.seq, view: settled }));
  const search = addressWith(window.location.search, settled);
  if (search !== window.location.search) {
    const url = window.location.pathname + search + window.location.hash;
    if (push) window.history.pushState(window.history.state, "", url);
    else window.history.replaceState(window.history.state, "", url);
  }
  document.dispatchEvent(new CustomEvent("av-address", { detail: { search } }));
  return state.seq;
}
