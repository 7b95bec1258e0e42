//! Leader election on a coordination.k8s.io/v1 Lease, as client-go does it:
//! the holder renews the lease; others take it over only after watching it
//! stay unrenewed for a whole lease duration by their own clock, and every
//! write carries the resourceVersion it read, so two candidates racing for
//! it cannot both win (the loser gets 409 Conflict).

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};

use crate::error::Error;
use crate::evict::check_name;

/// Which lease, who we are, and how long leadership lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Namespace of the Lease (`kube-system`, or the release's namespace).
    pub namespace: String,
    /// Name of the Lease (`podplace-rebalancer`).
    pub name: String,
    /// This candidate's identity, unique among candidates (pod name and a
    /// random suffix, as client-go uses).
    pub identity: String,
    /// How long a lease stays valid without renewal
    /// (`spec.leaseDurationSeconds`); others wait this long before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps acting after its last successful renewal;
    /// shorter than `lease_duration`, so it stops before anyone may take over.
    pub renew_deadline: Duration,
}

impl LeaseConfig {
    /// A configuration with client-go's defaults: 15 s lease, 10 s renew deadline.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaseConfig {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
        }
    }
}

/// The answer of one [`LeaderElector::try_acquire_or_renew`] round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaderState {
    /// We hold the lease (created, renewed or taken over just now).
    Leader {
        /// `spec.leaseTransitions` after this round.
        transitions: i32,
    },
    /// Someone else holds it, or won the race for it this round.
    Follower {
        /// The holder's identity when known.
        holder: Option<String>,
    },
}

/// What we last saw of the lease, and when by our clock.
#[derive(Debug, Clone)]
struct Observed {
    resource_version: Option<String>,
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    at: Instant,
}

/// One candidate in a leader election.
///
/// Call [`try_acquire_or_renew`](Self::try_acquire_or_renew) every few
/// seconds (client-go: every 2 s); act only while
/// [`is_leader`](Self::is_leader) is true.
#[derive(Debug)]
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaseConfig,
    observed: Option<Observed>,
    /// When our last create, renewal or takeover succeeded.
    renewed_at: Option<Instant>,
}

impl LeaderElector {
    /// A candidate for the lease `config` names.
    pub fn new(client: Client, config: LeaseConfig) -> Result<Self, Error> {
        check_name("lease namespace", &config.namespace)?;
        check_name("lease name", &config.name)?;
        Ok(LeaderElector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
            renewed_at: None,
        })
    }

    /// Whether we may act now: we hold the lease and renewed it within the
    /// renew deadline.
    pub fn is_leader(&self) -> bool {
        self.renewed_at
            .is_some_and(|t| t.elapsed() < self.config.renew_deadline)
    }

    /// One round of the election: create the lease if there is none, renew it
    /// if we hold it, take it over if its holder let it expire (unrenewed for
    /// a lease duration since we first saw it so), else follow.
    ///
    /// Conflicts (409) mean another candidate won this round: they are
    /// answered with [`LeaderState::Follower`], not an error.
    pub async fn try_acquire_or_renew(&mut self) -> Result<LeaderState, Error> {
        let name = self.config.name.clone();
        let lease = match self.api.get_opt(&name).await {
            Ok(l) => l,
            Err(e) => {
                self.renewed_at = None;
                return Err(Error::from_kube(self.action("get"), e));
            }
        };
        let Some(lease) = lease else {
            return self.create().await;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let now = Instant::now();
        // Restart our clock whenever the lease changed since we last looked.
        let changed = match &self.observed {
            Some(o) => {
                o.resource_version != lease.metadata.resource_version
                    || o.holder != holder
                    || o.renew_time != spec.renew_time
            }
            None => true,
        };
        if changed {
            self.observed = Some(Observed {
                resource_version: lease.metadata.resource_version.clone(),
                holder: holder.clone(),
                renew_time: spec.renew_time.clone(),
                at: now,
            });
        }
        let ours = holder.as_deref() == Some(self.config.identity.as_str());
        if !ours {
            self.renewed_at = None;
            let duration = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.config.lease_duration, Duration::from_secs);
            let seen_since = self.observed.as_ref().map_or(now, |o| o.at);
            if holder.is_some() && now.duration_since(seen_since) < duration {
                return Ok(LeaderState::Follower { holder });
            }
        }
        // Renew ours, or take over an expired or released lease.
        let stamp = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let mut next = lease.clone();
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        next.spec = Some(LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.duration_seconds()),
            acquire_time: if ours {
                spec.acquire_time.clone()
            } else {
                Some(stamp.clone())
            },
            renew_time: Some(stamp),
            lease_transitions: Some(transitions),
            ..spec
        });
        next.metadata.managed_fields = None;
        match self.api.replace(&name, &PostParams::default(), &next).await {
            Ok(written) => {
                self.note_written(&written);
                Ok(LeaderState::Leader { transitions })
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                self.renewed_at = None;
                Ok(LeaderState::Follower { holder })
            }
            Err(e) => {
                self.renewed_at = None;
                Err(Error::from_kube(self.action("update"), e))
            }
        }
    }

    /// Gives the lease up (clears the holder) so another candidate can take
    /// over at once, as client-go's ReleaseOnCancel does. Does nothing when
    /// we do not hold it.
    pub async fn release(&mut self) -> Result<(), Error> {
        if self.renewed_at.take().is_none() {
            return Ok(());
        }
        let name = self.config.name.clone();
        let Some(mut lease) = self
            .api
            .get_opt(&name)
            .await
            .map_err(|e| Error::from_kube(self.action("get"), e))?
        else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        lease.metadata.managed_fields = None;
        match self
            .api
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(Error::from_kube(self.action("update"), e)),
        }
    }

    async fn create(&mut self) -> Result<LeaderState, Error> {
        let stamp = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.config.identity.clone()),
                lease_duration_seconds: Some(self.duration_seconds()),
                acquire_time: Some(stamp.clone()),
                renew_time: Some(stamp),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(written) => {
                self.note_written(&written);
                Ok(LeaderState::Leader { transitions: 0 })
            }
            // AlreadyExists: another candidate created it first.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                self.renewed_at = None;
                Ok(LeaderState::Follower { holder: None })
            }
            Err(e) => {
                self.renewed_at = None;
                Err(Error::from_kube(self.action("create"), e))
            }
        }
    }

    fn note_written(&mut self, written: &Lease) {
        let now = Instant::now();
        let spec = written.spec.clone().unwrap_or_default();
        self.observed = Some(Observed {
            resource_version: written.metadata.resource_version.clone(),
            holder: spec.holder_identity,
            renew_time: spec.renew_time,
            at: now,
        });
        self.renewed_at = Some(now);
    }

    fn duration_seconds(&self) -> i32 {
        i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    fn action(&self, verb: &str) -> String {
        format!(
            "{verb} lease {}/{}",
            self.config.namespace, self.config.name
        )
    }
}
