"""Every public name is documented (numpydoc sections checked loosely)."""

import inspect

import pytest

import skdp.accounting
import skdp.clipping
import skdp.datasets
import skdp.decomposition
import skdp.density
import skdp.linear_model
import skdp.mechanisms
import skdp.model_selection
import skdp.moments
import skdp.optim
import skdp.preprocessing

MODULES = (skdp.accounting, skdp.clipping, skdp.mechanisms, skdp.moments, skdp.density,
           skdp.linear_model, skdp.optim, skdp.datasets, skdp.preprocessing,
           skdp.decomposition, skdp.model_selection)
PUBLIC = [(mod, name) for mod in MODULES
          for name in mod.__all__ if callable(getattr(mod, name))]


@pytest.mark.parametrize("mod,name", PUBLIC, ids=[f"{m.__name__}.{n}" for m, n in PUBLIC])
def test_public_callables_have_docstrings(mod, name):
    obj = getattr(mod, name)
    doc = inspect.getdoc(obj)
    assert doc and len(doc.splitlines()[0]) <= 100, f"{name}: needs a one-line summary"
    if inspect.isfunction(obj) and len(inspect.signature(obj).parameters) > 1:
        assert "Parameters" in doc or "Returns" in doc or "``" in doc, name
