"""Words on the screen: the translation tables (``locales/*.toml``) and :func:`.i18n.t`, which fills them in,
and outside text (typed, uploaded, from a link or a tokenizer) shown literally (:mod:`.safe_text`).

The bottom folder of :mod:`attention_viz.ui`: it imports nothing else of the app's.
"""
