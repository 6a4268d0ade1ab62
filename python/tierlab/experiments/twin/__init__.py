"""The digital twin (issue 16): a model calibrated from live traces (`calibrate`), its
demands cross-checked the classical way (`classical`)."""

from .calibrate import Calibration, calibrate

__all__ = ["Calibration", "calibrate"]
