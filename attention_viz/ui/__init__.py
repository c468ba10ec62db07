"""The Streamlit layer: state, caching and shared controls. Only this package imports streamlit."""
