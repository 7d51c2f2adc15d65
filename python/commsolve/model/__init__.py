"""Communication cost models (thesis chapters 2.3, 3, 5.3; topology-aware collectives),
machine profiles, calibration, and pricing of commsolve's plans."""

from .formulas import (binomial_multicast, contention, max_rate, postal, queue_search, rectangular_multicast,
                       rectangular_reduction)
from .pricing import COMPONENTS, CostModel, Prediction
from .profile import LEVELS, PROTOCOLS, MachineProfile, ProfileError, bundled_profiles, load_profile

__all__ = ["CostModel", "Prediction", "COMPONENTS", "MachineProfile", "ProfileError", "LEVELS", "PROTOCOLS",
           "load_profile", "bundled_profiles", "postal", "max_rate", "queue_search", "contention",
           "binomial_multicast", "rectangular_multicast", "rectangular_reduction"]
