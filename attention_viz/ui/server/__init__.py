"""What the server holds for every session: the operator's settings (:mod:`.app_settings`), the model per
process and the results per input, cached (:mod:`.cache`; head statistics and the long runs every session
shares, :mod:`.cache_heads`; experiments, :mod:`.cache_experiments`; encoder–decoders, :mod:`.cache_seq2seq`;
the map element's recipes and held maps, :mod:`.cache_maps`), and the cold start that loads them before a
browser asks, with the ``/ready`` route (:mod:`.warmup`). Imports the folders before it (text, view) only.
"""
