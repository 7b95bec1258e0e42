//! [`PodList`]: the pods of an [`crate::inventory::Inventory`], each held
//! either as its `k8s-openapi` object or, in a packed list, as the object's
//! JSON bytes, decoded when read.
//!
//! A `k8s-openapi` `Pod` is mostly fixed-size optional fields: a bound pod
//! of one container takes about 12 KB in memory (2.4 KB for the `Pod`, 2.1
//! KB per `Container`, status, conditions, maps), its JSON about a quarter
//! of that. `podplace serve` keeps every pod of the cluster for as long as
//! it runs, and the features read few of them (the pods an explanation
//! names, a rebalance round); so a watch-fed world packs its pods
//! ([`PodList::set_packed`]) and pays the decoding only for what is read.
//! Packing is lossless (the bytes are the object's own JSON), so every
//! reader sees the object it would have seen unpacked.
//!
//! A packed pod read through [`PodList::get`], indexing or
//! [`PodList::iter`] is decoded once and kept beside its bytes until the
//! pod changes or the owner calls [`PodList::trim_decoded`] (a watch-fed
//! world does at a change once too many are held,
//! [`PodList::trim_decoded_over`]), so a feature reading the same pods
//! round after round pays each decoding once, and a walk over every pod
//! gives its memory back.
//!
//! `why` and `place` read a file's pods packed and compiled as each is
//! loaded ([`PodList::pack_compiled`]): the build takes the compiled pods,
//! and the walks of loading and building read each pod's [`PodSummary`],
//! so the 160,000 objects of a large cluster are never held at once and
//! only the pods a reader asks for are decoded. Commands that change pods
//! or read every one (`rebalance`, `lint`, `simulate`) hold the objects.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rustc_hash::FxHashSet;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::cow::Chunked;
use crate::intern::Interner;
use crate::inventory::{Origin, Sourced};
use crate::objects::{self, CompileError};
use crate::pod_summary::PodSummary;

/// A pod packed: its JSON in two parts, so that replicas of one template
/// share one copy of their spec.
#[derive(Debug, Clone)]
struct Packed {
    /// The pod's JSON without its spec (shared by a copy of the list, so
    /// copying a packed inventory, as a rebalance round does, copies no
    /// bytes).
    rest: Arc<[u8]>,
    /// The JSON of its spec without `nodeName`, shared by every pod of the
    /// list whose spec is the same (the replicas of one template).
    spec: Option<Arc<[u8]>>,
    /// `spec.nodeName`, the one spec field each replica has its own.
    node_name: Option<Box<str>>,
}

/// One pod of a [`PodList`].
#[derive(Debug)]
enum Slot {
    /// The object itself.
    Full(Box<Sourced<Pod>>),
    /// The object's JSON, and the object once decoded.
    Packed {
        json: Packed,
        origin: Origin,
        decoded: OnceLock<Box<Sourced<Pod>>>,
        /// What walks over every pod read, without decoding.
        summary: Box<PodSummary>,
        /// The engine's form of the pod, compiled as it was packed, when
        /// the list compiles ([`PodList::pack_compiled`]) and until the
        /// build takes it.
        compiled: Option<Box<Compiled>>,
    },
}

/// A pod compiled for the engine against the list's strings, or why it
/// could not be.
pub type Compiled = Result<objects::Pod, CompileError>;

impl Clone for Slot {
    /// A packed slot's copy holds the bytes only: it decodes on its own.
    fn clone(&self) -> Self {
        match self {
            Slot::Full(p) => Slot::Full(p.clone()),
            Slot::Packed {
                json,
                origin,
                summary,
                compiled,
                ..
            } => Slot::Packed {
                json: json.clone(),
                origin: origin.clone(),
                decoded: OnceLock::new(),
                summary: summary.clone(),
                compiled: compiled.clone(),
            },
        }
    }
}

/// The JSON of `value` (a k8s-openapi object always serialises: string
/// keys, no float that JSON cannot hold).
fn json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// The pod `json` encodes; a default pod for bytes that do not decode,
/// which [`PodList::pack`]'s output always does (the round trip is tested).
fn decode(json: &Packed) -> Pod {
    let mut pod: Pod = serde_json::from_slice(&json.rest).unwrap_or_default();
    if let Some(spec) = &json.spec {
        let mut spec: PodSpec = serde_json::from_slice(spec).unwrap_or_default();
        spec.node_name = json.node_name.as_deref().map(str::to_string);
        pod.spec = Some(spec);
    }
    pod
}

impl Slot {
    fn into_sourced(self) -> Sourced<Pod> {
        match self {
            Slot::Full(p) => *p,
            Slot::Packed {
                json,
                origin,
                decoded,
                ..
            } => match decoded.into_inner() {
                Some(p) => *p,
                None => Sourced {
                    object: decode(&json),
                    origin,
                },
            },
        }
    }

    /// The shared spec this slot holds, if packed.
    fn spec(&self) -> Option<&Arc<[u8]>> {
        match self {
            Slot::Packed { json, .. } => json.spec.as_ref(),
            Slot::Full(_) => None,
        }
    }
}

/// The pods of an inventory, in load order (see the module doc): the
/// methods of a `Vec<Sourced<Pod>>` that the commands use, whether the
/// list is packed or not.
#[derive(Debug, Default)]
pub struct PodList {
    /// Shared copy-on-write by chunks: a copy of the list (serve's
    /// admission view of the model) copies no slot, and the next change
    /// to the model copies one chunk of them.
    slots: Chunked<Slot>,
    /// New pods are packed.
    packed: bool,
    /// Packed slots decoded since the last [`PodList::trim_decoded`].
    decoded: Mutex<Vec<usize>>,
    /// The packed specs, each once.
    specs: FxHashSet<Arc<[u8]>>,
    /// The strings new pods are compiled against, when the list compiles
    /// ([`PodList::pack_compiled`]).
    strings: Option<Interner>,
    /// The spec packed last (without its `nodeName`) and its bytes: the
    /// replicas of one template come one after another in a list, and
    /// comparing a spec with the last one costs less than encoding it. (A
    /// weak reference, so the count of holders [`PodList::release`] reads
    /// stays the slots' and the set's.)
    last_spec: Option<(PodSpec, Weak<[u8]>)>,
}

impl Clone for PodList {
    fn clone(&self) -> Self {
        PodList {
            slots: self.slots.clone(),
            packed: self.packed,
            decoded: Mutex::new(Vec::new()),
            specs: self.specs.clone(),
            strings: self.strings.clone(),
            last_spec: None,
        }
    }
}

impl PodList {
    /// An empty list that does not pack.
    pub fn new() -> Self {
        PodList::default()
    }

    /// Packs every pod held and every pod added later (`true`), or unpacks
    /// them all (`false`). A pod already held as asked is left as it is
    /// (packing a packed list encodes nothing again).
    pub fn set_packed(&mut self, packed: bool) {
        self.trim_decoded();
        self.packed = packed;
        if !packed {
            self.specs.clear();
            self.last_spec = None;
            self.strings = None;
        }
        let slots = std::mem::take(&mut self.slots);
        let mut out = Chunked::default();
        for s in slots {
            let as_asked = matches!(s, Slot::Packed { .. }) == packed;
            out.push(if as_asked {
                s
            } else {
                self.slot(s.into_sourced())
            });
        }
        self.slots = out;
    }

    /// Whether the list packs its pods.
    pub fn is_packed(&self) -> bool {
        self.packed
    }

    /// Packs every pod added from now on and compiles it for the engine
    /// first, against strings of the list's own ([`PodList::strings`]), so
    /// a world is built from these pods without decoding them
    /// ([`PodList::take_compiled`]). A command that loads a large cluster
    /// holds each pod as its JSON and its compiled form instead of its
    /// object (about a fifth of the memory); a pod a reader asks for is
    /// decoded then. Pods already held are packed, not compiled.
    pub fn pack_compiled(&mut self) {
        self.set_packed(true);
        self.strings = Some(Interner::new());
    }

    /// The strings the list compiles against (see
    /// [`PodList::pack_compiled`]): a state adding the compiled pods must
    /// hold them.
    pub fn strings(&self) -> Option<&Interner> {
        self.strings.as_ref()
    }

    /// Takes the `i`th pod's compiled form, if it was compiled as it was
    /// packed and not changed since (see [`PodList::pack_compiled`]).
    pub fn take_compiled(&mut self, i: usize) -> Option<Compiled> {
        if !matches!(
            self.slots.get(i)?,
            Slot::Packed {
                compiled: Some(_),
                ..
            }
        ) {
            return None;
        }
        match self.slots.get_mut(i)? {
            Slot::Packed { compiled, .. } => compiled.take().map(|c| *c),
            Slot::Full(_) => None,
        }
    }

    /// The `i`th pod's `spec.nodeName`, without decoding it.
    pub fn node_name(&self, i: usize) -> Option<&str> {
        match self.slots.get(i)? {
            Slot::Full(p) => p.object.spec.as_ref()?.node_name.as_deref(),
            Slot::Packed { json, .. } => json.node_name.as_deref(),
        }
    }

    /// The `i`th pod's namespace (`default` when it has none) and name,
    /// without decoding it.
    pub fn key(&self, i: usize) -> Option<(&str, &str)> {
        let (namespace, name) = match self.slots.get(i)? {
            Slot::Full(p) => (
                p.object.metadata.namespace.as_deref(),
                p.object.metadata.name.as_deref().unwrap_or_default(),
            ),
            Slot::Packed { summary, .. } => (summary.namespace.as_deref(), &*summary.name),
        };
        Some((
            namespace.filter(|n| !n.is_empty()).unwrap_or("default"),
            name,
        ))
    }

    /// The `i`th pod's [`PodSummary`] when it is packed (kept beside its
    /// bytes); `None` for a pod held as its object, which the caller reads.
    pub fn packed_summary(&self, i: usize) -> Option<&PodSummary> {
        match self.slots.get(i)? {
            Slot::Packed { summary, .. } => Some(summary),
            Slot::Full(_) => None,
        }
    }

    /// The `i`th pod's [`PodSummary`], without decoding it.
    pub fn summary(&self, i: usize) -> Option<Cow<'_, PodSummary>> {
        match self.slots.get(i)? {
            Slot::Full(p) => Some(Cow::Owned(PodSummary::of(&p.object))),
            Slot::Packed { summary, .. } => Some(Cow::Borrowed(summary)),
        }
    }

    fn slot(&mut self, p: Sourced<Pod>) -> Slot {
        if !self.packed {
            return Slot::Full(Box::new(p));
        }
        let Sourced { mut object, origin } = p;
        let summary = Box::new(PodSummary::of(&object));
        let compiled = self
            .strings
            .as_mut()
            .map(|strings| Box::new(objects::Pod::compile(&object, strings)));
        let (spec, node_name) = match object.spec.take() {
            Some(mut spec) => {
                let node = spec.node_name.take().map(String::into_boxed_str);
                let same_as_last = self
                    .last_spec
                    .as_ref()
                    .filter(|(last, _)| *last == spec)
                    .and_then(|(_, bytes)| bytes.upgrade());
                let shared = match same_as_last {
                    Some(bytes) => bytes,
                    None => {
                        let bytes: Arc<[u8]> = json(&spec).into();
                        let shared = match self.specs.get(&bytes) {
                            Some(s) => Arc::clone(s),
                            None => {
                                self.specs.insert(Arc::clone(&bytes));
                                bytes
                            }
                        };
                        self.last_spec = Some((spec, Arc::downgrade(&shared)));
                        shared
                    }
                };
                (Some(shared), node)
            }
            None => (None, None),
        };
        Slot::Packed {
            json: Packed {
                rest: json(&object).into(),
                spec,
                node_name,
            },
            origin,
            decoded: OnceLock::new(),
            summary,
            compiled,
        }
    }

    /// Forgets a shared spec no pod holds any more (`slot` was just taken
    /// out of the list).
    fn release(&mut self, slot: &Slot) {
        if let Some(spec) = slot.spec() {
            // Held by the set and by `slot` only.
            if Arc::strong_count(spec) == 2 {
                self.specs.remove(spec);
            }
        }
    }

    fn decoded_mut(&mut self) -> &mut Vec<usize> {
        self.decoded
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the objects decoded from packed pods since the last call (the
    /// bytes stay): what a round of reading made is given back.
    pub fn trim_decoded(&mut self) {
        let decoded = std::mem::take(self.decoded_mut());
        for i in decoded {
            if let Some(Slot::Packed { decoded, .. }) = self.slots.get_mut(i) {
                decoded.take();
            }
        }
    }

    /// Drops the decoded objects ([`PodList::trim_decoded`]) when more than
    /// `most` packed pods are held decoded; else keeps them for the next
    /// reader. A pod that changes loses its decoding with its old bytes,
    /// so a kept one is always the pod's object now.
    pub fn trim_decoded_over(&mut self, most: usize) {
        if self.decoded_mut().len() > most {
            self.trim_decoded();
        }
    }

    /// How many packed pods are held decoded now.
    pub fn decoded_len(&self) -> usize {
        self.decoded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Forgets that the `i`th slot is decoded (it is being replaced).
    fn forget_decoded(&mut self, i: usize) {
        if let Some(Slot::Packed { decoded, .. }) = self.slots.get(i) {
            if decoded.get().is_some() {
                self.decoded_mut().retain(|&k| k != i);
            }
        }
    }

    /// Number of pods.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there is no pod.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The `i`th pod (decoded once if packed).
    pub fn get(&self, i: usize) -> Option<&Sourced<Pod>> {
        match self.slots.get(i)? {
            Slot::Full(p) => Some(p),
            Slot::Packed {
                json,
                origin,
                decoded,
                ..
            } => Some(decoded.get_or_init(|| {
                self.decoded
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(i);
                Box::new(Sourced {
                    object: decode(json),
                    origin: origin.clone(),
                })
            })),
        }
    }

    /// The `i`th pod, to change (a packed pod is unpacked for good).
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Sourced<Pod>> {
        if matches!(self.slots.get(i)?, Slot::Packed { .. }) {
            self.forget_decoded(i);
            let placeholder = Slot::Full(Box::new(Sourced {
                object: Pod::default(),
                origin: Origin::default(),
            }));
            let old = std::mem::replace(&mut self.slots[i], placeholder);
            self.release(&old);
            self.slots[i] = Slot::Full(Box::new(old.into_sourced()));
        }
        match self.slots.get_mut(i)? {
            Slot::Full(p) => Some(p),
            Slot::Packed { .. } => None,
        }
    }

    /// The `i`th pod's metadata, decoded without being kept.
    pub fn metadata(&self, i: usize) -> Option<Cow<'_, ObjectMeta>> {
        match self.slots.get(i)? {
            Slot::Full(p) => Some(Cow::Borrowed(&p.object.metadata)),
            Slot::Packed { json, decoded, .. } => Some(match decoded.get() {
                Some(p) => Cow::Borrowed(&p.object.metadata),
                None => Cow::Owned(decode(json).metadata),
            }),
        }
    }

    /// The `i`th pod as an owned object, decoded without being kept.
    pub fn object(&self, i: usize) -> Option<Cow<'_, Pod>> {
        match self.slots.get(i)? {
            Slot::Full(p) => Some(Cow::Borrowed(&p.object)),
            Slot::Packed { json, decoded, .. } => Some(match decoded.get() {
                Some(p) => Cow::Borrowed(&p.object),
                None => Cow::Owned(decode(json)),
            }),
        }
    }

    /// Where the `i`th pod was read (no decoding).
    pub fn origin(&self, i: usize) -> Option<&Origin> {
        match self.slots.get(i)? {
            Slot::Full(p) => Some(&p.origin),
            Slot::Packed { origin, .. } => Some(origin),
        }
    }

    /// The first pod.
    pub fn first(&self) -> Option<&Sourced<Pod>> {
        self.get(0)
    }

    /// The last pod.
    pub fn last(&self) -> Option<&Sourced<Pod>> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Every pod in order (packed ones decoded once, see the module doc).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            list: self,
            front: 0,
            back: self.slots.len(),
        }
    }

    /// Every pod in order, to change (packed pods are unpacked for good).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Sourced<Pod>> + '_ {
        if self.slots.iter().any(|s| matches!(s, Slot::Packed { .. })) {
            let slots = std::mem::take(&mut self.slots);
            self.slots = slots
                .into_iter()
                .map(|s| Slot::Full(Box::new(s.into_sourced())))
                .collect();
            self.specs.clear();
            self.last_spec = None;
            self.decoded_mut().clear();
        }
        self.slots.iter_mut().filter_map(|s| match s {
            Slot::Full(p) => Some(&mut **p),
            Slot::Packed { .. } => None,
        })
    }

    /// Appends a pod.
    pub fn push(&mut self, pod: Sourced<Pod>) {
        let slot = self.slot(pod);
        self.slots.push(slot);
    }

    /// Puts `pod` in place of the `i`th; the old one, or `None` (and
    /// nothing changed) when `i` is past the list.
    pub fn replace(&mut self, i: usize, pod: Pod) -> Option<Pod> {
        let origin = self.origin(i)?.clone();
        self.forget_decoded(i);
        let slot = self.slot(Sourced {
            object: pod,
            origin,
        });
        let old = std::mem::replace(self.slots.get_mut(i)?, slot);
        self.release(&old);
        Some(old.into_sourced().object)
    }

    /// Removes the `i`th pod; the last takes its place.
    ///
    /// # Panics
    /// When `i` is past the list, as `Vec::swap_remove`.
    pub fn swap_remove(&mut self, i: usize) -> Sourced<Pod> {
        let last = self.slots.len().saturating_sub(1);
        let Some(slot) = self.slots.swap_remove(i) else {
            panic!("swap_remove index {i} out of {} pods", self.slots.len());
        };
        // The last pod (and its decoding) moved to `i`.
        let decoded = self.decoded_mut();
        decoded.retain(|&k| k != i);
        for k in decoded.iter_mut() {
            if *k == last {
                *k = i;
            }
        }
        self.release(&slot);
        slot.into_sourced()
    }

    /// Keeps the pods `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Sourced<Pod>) -> bool) {
        self.trim_decoded();
        let slots = std::mem::take(&mut self.slots);
        self.specs.clear();
        self.last_spec = None;
        for s in slots {
            let p = s.into_sourced();
            if keep(&p) {
                self.push(p);
            }
        }
    }

    /// Removes the pods in `range`, returned in order (packed ones decoded).
    pub fn drain(
        &mut self,
        range: impl std::ops::RangeBounds<usize>,
    ) -> impl Iterator<Item = Sourced<Pod>> + '_ {
        self.trim_decoded();
        // Specs the drained pods alone held stay in the set until the
        // list is packed again (or cleared).
        let mut all: Vec<Slot> = std::mem::take(&mut self.slots).into_iter().collect();
        let drained: Vec<Slot> = all.drain(range).collect();
        self.slots = all.into_iter().collect();
        drained.into_iter().map(Slot::into_sourced)
    }

    /// Removes every pod.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.specs.clear();
        self.last_spec = None;
        self.decoded_mut().clear();
    }

    /// Shortens the list to `len` pods.
    pub fn truncate(&mut self, len: usize) {
        self.trim_decoded();
        self.slots.truncate(len);
        self.specs.retain(|s| Arc::strong_count(s) > 1);
        self.last_spec = None;
    }
}

/// [`PodList::iter`].
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    list: &'a PodList,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Sourced<Pod>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.front += 1;
        self.list.get(self.front - 1)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.list.get(self.back)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a PodList {
    type Item = &'a Sourced<Pod>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// [`PodList`]'s pods by value (packed ones decoded).
#[derive(Debug)]
pub struct IntoIter(<Chunked<Slot> as IntoIterator>::IntoIter);

impl Iterator for IntoIter {
    type Item = Sourced<Pod>;
    fn next(&mut self) -> Option<Sourced<Pod>> {
        self.0.next().map(Slot::into_sourced)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<'a> IntoIterator for &'a mut PodList {
    type Item = &'a mut Sourced<Pod>;
    type IntoIter = Box<dyn Iterator<Item = &'a mut Sourced<Pod>> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter_mut())
    }
}

impl IntoIterator for PodList {
    type Item = Sourced<Pod>;
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        IntoIter(self.slots.into_iter())
    }
}

impl std::ops::Index<usize> for PodList {
    type Output = Sourced<Pod>;
    /// The `i`th pod; panics past the list, like a `Vec`.
    fn index(&self, i: usize) -> &Sourced<Pod> {
        match self.get(i) {
            Some(p) => p,
            None => panic!("pod index {i} out of range for {} pods", self.len()),
        }
    }
}

impl std::ops::IndexMut<usize> for PodList {
    fn index_mut(&mut self, i: usize) -> &mut Sourced<Pod> {
        let len = self.len();
        match self.get_mut(i) {
            Some(p) => p,
            None => panic!("pod index {i} out of range for {len} pods"),
        }
    }
}

impl Extend<Sourced<Pod>> for PodList {
    fn extend<I: IntoIterator<Item = Sourced<Pod>>>(&mut self, pods: I) {
        for p in pods {
            self.push(p);
        }
    }
}

impl FromIterator<Sourced<Pod>> for PodList {
    fn from_iter<I: IntoIterator<Item = Sourced<Pod>>>(pods: I) -> Self {
        let mut list = PodList::new();
        list.extend(pods);
        list
    }
}

impl From<Vec<Sourced<Pod>>> for PodList {
    fn from(pods: Vec<Sourced<Pod>>) -> Self {
        pods.into_iter().collect()
    }
}

impl From<Chunked<Sourced<Pod>>> for PodList {
    fn from(pods: Chunked<Sourced<Pod>>) -> Self {
        pods.into_iter().collect()
    }
}

#[cfg(test)]
mod tests;
