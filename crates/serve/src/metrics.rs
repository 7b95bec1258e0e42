//! serve's Prometheus metrics (OpenMetrics): pending pods, what blocks
//! them, workload domains and lost high availability, with bounded label
//! values.
