"""Transitional alias of the sweep's public names (the module was split into ``_prepare``,
``_plan``, ``_unit``, ``_storage``, ``_claims``, ``_worker``, ``_manifest``, ``_local``,
``_status``). Import from :mod:`dptune.sweep` or the private module instead; this alias goes
once no caller uses it."""

from dptune.sweep import *  # noqa: F403
from dptune.sweep import __all__  # noqa: F401
