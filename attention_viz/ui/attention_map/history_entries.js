// One action of the person, one entry in the browser's history: the first new address after a click or a key
// press is a new entry (window.history.pushState); every further one, until the next click or key press, takes
// the place of that entry (replaceState). Installed once per page load by the page-wide element
// (svg_buttons.js), before any action of the person.
//
// Why: one action may write the address several times, each a new entry in Streamlit's frontend. A click on a
// thumbnail in All heads writes the chosen head into All heads' address, then st.switch_page clears the
// address, the page change puts Compare's path in it and Compare's run writes its view: four entries, Back had
// to be pressed four times and went through addresses no page had shown. Now Back goes to the view before the
// click at once and Forward to the clicked head. Addresses written without any action of the person (a page
// opened from a link, whose first runs fit its address) and after Back or Forward (the view they went to, as
// Streamlit's own replaceState there) make no entry either. Only the person's own events count (isTrusted):
// the Enter that browser_view.js sends into its hidden box is not an action.
//
// The run that Back or Forward causes is Streamlit's own (its popstate listener); the server knows it by Streamlit's
// flag for it (attention_viz/ui/internals.py, history_navigation) and takes the address's view. Each Back or
// Forward is counted (`navigations`): a map's report of a move made before it, still waiting for its timer, is
// dropped (attention_map.js), else it would write the move's address over the entry Back went to.

export function oneEntryPerAction() {
  if (window.__avHistory) return;
  const state = (window.__avHistory = { action: false, navigations: 0 });
  const history = window.history;
  const push = History.prototype.pushState, replace = History.prototype.replaceState;
  const acted = (event) => {
    if (event.isTrusted) state.action = true;
  };
  for (const type of ["pointerdown", "keydown"]) window.addEventListener(type, acted, true);
  window.addEventListener("popstate", () => { state.action = false; state.navigations += 1; });
  history.pushState = function (data, unused, url) {
    const entry = state.action;
    state.action = false;
    return (entry ? push : replace).call(history, data, unused, url);
  };
}
