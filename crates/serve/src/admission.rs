//! The validating admission webhook: lint rules evaluated against the live
//! cluster model, answered as warnings (denied only for the rules the
//! operator lists).
