//! `podplace rebalance`'s planner: a descheduler that plans and proves
//! before anything acts (acting is `podplace-runtime`'s).
//!
//! The descheduler evicts pods and hopes the scheduler puts the
//! replacements somewhere better. podplace schedules every replacement
//! through its own kube-scheduler engine first, against the cluster as it
//! will be, and keeps an eviction only when the replacement lands on
//! another node and the strategy's objective strictly improves without any
//! other strategy's getting worse — so evicted pods do not land right back,
//! strategies cannot undo each other, and planning again on the outcome
//! finds nothing to do.
//!
//! - [`policy`]: `descheduler/v1alpha2` `DeschedulerPolicy` files, run
//!   unchanged, and the default profile;
//! - [`evictor`]: the DefaultEvictor's protections;
//! - [`strategies`]: one module per strategy, named as the descheduler
//!   names them, plus [`strategies::soft_rules`] for preferred rules;
//! - [`planner`]: planning with proof, within what a run has already
//!   spent of the policy's limits ([`Spent`]); [`plan`]: the result.
//!
//! Everything here is pure: no cluster, no clock but the one given in
//! [`PlanOptions`], no I/O but reading a policy file.

pub mod duration;
pub mod error;
pub mod evictor;
pub mod landing;
pub mod plan;
pub mod planner;
pub mod policy;
pub mod sim_step;
pub mod strategies;
pub mod victims;
pub mod volumes;
pub mod world;

pub use error::Error;
pub use plan::{Eviction, Kept, KeptReason, Plan, Scheduled};
pub use planner::{plan, plan_spending, PlanOptions, Planned, Spent};
pub use policy::Policy;
