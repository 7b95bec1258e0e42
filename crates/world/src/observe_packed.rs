//! The first sync of a watch-fed model without a second copy of its pods.
//!
//! `podplace serve` keeps its pods packed (each as its JSON, see
//! [`podplace_model::pod_list`]). Building the world with
//! [`World::observed`] and packing afterwards holds, for a moment, every
//! pod twice over: the objects the build read, and whatever copy the caller
//! kept to retry a failed build. Packing first and building from the packed
//! list would decode every pod again, which costs more than the build.
//! [`World::observed_packed`] does neither: it takes the pods one at a
//! time, compiles, indexes and packs each from the object in hand, and
//! drops the object, so the unpacked pods only ever shrink while the
//! packed ones grow, and no pod is decoded.

use podplace_engine::place::object_name;
use podplace_engine::{build_state, BuildError, SchedulerCache, SchedulerSetup};
use podplace_model::inventory::{Inventory, ObjectKey, ObjectKind};
use podplace_model::pod_list::PodList;
use podplace_model::workloads::Workloads;

use crate::column::PodColumn;
use crate::live::Live;
use crate::pods::{self, PodRow, PodTable};
use crate::World;

impl World {
    /// [`World::observed`] with its pods packed, as
    /// [`World::set_packed_pods`] then `true` would leave it, built
    /// without holding the pods twice (see the module doc). The pods of
    /// `inventory` must have distinct keys, as a list's have.
    ///
    /// On success every object moves into the world and `inventory` is
    /// left empty. On failure (an object that does not compile, named by
    /// the error) `inventory` holds every object it held, some pods
    /// perhaps packed, so the caller can retry without a copy.
    pub fn observed_packed(
        inventory: &mut Inventory,
        setup: &SchedulerSetup,
        seed: u64,
    ) -> Result<World, BuildError> {
        let pods = std::mem::take(&mut inventory.pods);
        // Everything but the pods, as `World::observed` builds it (the
        // engine adds pods last, after nodes and storage).
        let mut state = match build_state(inventory) {
            Ok((state, _)) => state,
            Err(e) => {
                inventory.pods = pods;
                return Err(e);
            }
        };
        let workloads = Workloads::new(inventory);
        let mut live = Live::keyed(inventory);
        let mut table = PodTable::default();
        let mut packed = PodList::new();
        packed.set_packed(true);
        let mut rest = pods.into_iter();
        while let Some(pod) = rest.next() {
            let i = packed.len();
            let id = match state.add_api_pod(&pod.object) {
                Ok(id) => id,
                Err(source) => {
                    let object = object_name("Pod", &pod.object.metadata);
                    packed.push(pod);
                    packed.extend(rest);
                    inventory.pods = packed;
                    return Err(BuildError::Compile { object, source });
                }
            };
            let (_, owner) = pods::compiled_row(&state, id);
            let row = PodRow {
                api: Some(i),
                workload: workloads.of(&pod.object),
                owner,
            };
            table.insert(id, &state.pod(id).name, row);
            live.at
                .insert(ObjectKey::of(ObjectKind::Pod, &pod.object.metadata), i);
            live.note_pod(&state, id, &pod.object);
            packed.push(pod);
        }
        let mut inventory = std::mem::take(inventory);
        inventory.pods = packed;
        Ok(World {
            inventory,
            state,
            cache: SchedulerCache::for_setup(setup),
            pods: table,
            placements: Vec::new(),
            placement_of: PodColumn::default(),
            seed,
            placing_seconds: 0.0,
            live: Some(Box::new(live)),
        })
    }
}
