"""Around every page's body: the lecture screen's spacing, sizes and Presentation's larger text
(:mod:`.screen`), messages instead of tracebacks (:mod:`.feedback`), a page's unexpected error told in one
sentence (:mod:`.recovery`) and a page's body as an ``st.fragment`` (:mod:`.fragment`). Imports the folders
before it (text, view, server) only.
"""
