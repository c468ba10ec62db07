"""The view: what a person looks at, and where it lives.

Every setting, its default and what a link may set it to (:mod:`.view_schema`); its value in the session and
the named moves pages make on it (:mod:`.state`); the one way a widget is bound to a setting
(:mod:`.widgets`); the view in the address (:mod:`.url_state`, with the codec :mod:`attention_viz.links`);
the steps the browser took on its own (:mod:`.browser_view`); a head opened from a chart (:mod:`.head_links`)
and the "link to this view" box (:mod:`.sharing`). Imports :mod:`attention_viz.ui.text` and
:mod:`attention_viz.ui.internals` only.
"""
