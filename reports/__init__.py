"""Renderers: they present findings and facts and compute no verdict."""
