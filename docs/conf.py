"""Sphinx configuration for the skdp documentation.

Build with ``python -m sphinx -W -b html docs docs/_build/html``; the tests
(``tests/test_docs.py``) build a copy with warnings as errors.
"""

import os
import tempfile

import skdp

project = "skdp"
author = "skdp developers"
copyright = "2026, skdp developers"
release = skdp.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

# The gallery runs examples/ at build time and shows each script with its
# figures and printed output; "examples using this class" on the API pages
# come from its backreferences. The scripts' own PNG files go to a scratch
# directory (the gallery keeps its own copies of the figures).
os.environ.setdefault("SKDP_EXAMPLES_OUT", tempfile.mkdtemp(prefix="skdp-examples-"))
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"_output\.py",
    "backreferences_dir": "generated/backreferences",
    "doc_module": ("skdp",),
    "reference_url": {"skdp": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
}
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}

templates_path = ["_templates"]
exclude_patterns = ["_build", "generated/*.examples", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.json"]
root_doc = "index"

# Every public name gets its own page, generated from its docstring.
autosummary_generate = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"          # the numpydoc Parameters section states the types
numpydoc_show_class_members = False  # the class template lists the methods itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# Every parameter of every public function and method is documented, and no
# documented parameter is missing from the signature (-W makes these errors).
numpydoc_validation_checks = {"PR01", "PR02"}

# The docs are built offline (CI has no network): no intersphinx, and
# MathJax is only loaded by the reader's browser.
html_theme = "pydata_sphinx_theme"
html_static_path = ["_static"]
html_css_files = ["skdp.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_title = "skdp"
nitpicky = False


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only what skdp defines: scikit-learn's inherited methods
    (``get_params``, ``score``, metadata routing) are documented by
    scikit-learn, and their cross-references point into its own docs."""
    target = obj.fget if isinstance(obj, property) else obj
    module = getattr(target, "__module__", None) or ""
    if what == "class" and not module.startswith("skdp"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
