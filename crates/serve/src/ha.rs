//! The high-availability watch: what `simulate` finds (HALost, spread past
//! its skew, collapsed preferred anti-affinity, violated required rules,
//! stuck rollouts), computed continuously on the live model.
