"""The parts several pages share: the sidebar and the layer and head stepper (:mod:`.controls`), the examples
(:mod:`.presets_ui`), a decoder's continuation (:mod:`.generation_ui`), encoder–decoders (:mod:`.seq2seq_ui`),
the scope of a statistic (:mod:`.corpus_picker`), named head scores (:mod:`.scores_ui`), the view toggles
(:mod:`.view_options`), the download buttons (:mod:`.downloads`) and a family's notes (:mod:`.model_notes`).

The folder just below the pages: it imports every other folder of :mod:`attention_viz.ui`, never a page.
"""
