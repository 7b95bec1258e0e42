//! CronJobs: their Jobs are created on a schedule, so expansion only says
//! so.

use crate::inventory::Inventory;
use crate::workloads::{WorkloadKind, WorkloadRef};

/// Notes every CronJob as not expanded.
pub(super) fn expand(inv: &mut Inventory) {
    let notices: Vec<String> = inv
        .cron_jobs
        .iter()
        .map(|cj| {
            let w = WorkloadRef::new(
                WorkloadKind::CronJob,
                cj.object.metadata.namespace.as_deref().unwrap_or("default"),
                cj.object.metadata.name.as_deref().unwrap_or(""),
            );
            format!("{w}: not expanded (its Jobs are created on a schedule)")
        })
        .collect();
    inv.notices.extend(notices);
}
